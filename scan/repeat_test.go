package scan

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/gpudx/gpudx/internal/loggen"
)

// Which regexes the memory may answer for by shape, and what the others'
// relaxation is.
func TestDigitBlind(t *testing.T) {
	for _, c := range []struct {
		re      string
		blind   bool
		relaxed string // where not blind: the relaxation's String
	}{
		{`using GPU (?P<gpu>\d+) to perform barrier`, true, ""},
		{`Tried to allocate [0-9]+(?:\.[0-9]+)? [KMG]iB`, true, ""},
		{`\w+ [^)]* .{0,600}? \bfoo\b`, true, ""},
		{`(?i)nccl error [\d.]+`, true, ""},
		{`Xid 79`, false, `Xid [0-9][0-9]`},
		{`cuda runtime error \(2\) : out of memory|CUDA_ERROR_OUT_OF_MEMORY`, false, `cuda runtime error \([0-9]\) : out of memory|CUDA_ERROR_OUT_OF_MEMORY`},
		{`sm_[1-9]0`, false, `sm_[0-9][0-9]`},
		{`rank [0-4a-f]`, false, `rank [0-9a-f]`},
		{`[^2]x`, false, `[\x00-\x{10ffff}]x`},
		{`[a1-3]z`, false, `[0-9a]z`},
	} {
		re := regexp.MustCompile(c.re)
		if got := digitBlind(re); got != c.blind {
			t.Errorf("%s: digitBlind %v, want %v", c.re, got, c.blind)
		}
		var m memoRe
		exact, ok := m.exact(re)
		rel := m.relaxation(re)
		if !ok || exact != c.blind {
			t.Errorf("%s: exact %v ok %v", c.re, exact, ok)
		}
		switch {
		case c.blind && rel != nil:
			t.Errorf("%s: a relaxation %s for a blind regex", c.re, rel)
		case !c.blind && (rel == nil || rel.String() != c.relaxed):
			t.Errorf("%s: relaxed to %v, want %s", c.re, rel, c.relaxed)
		}
	}
}

// repeatsLog is a log made of many repeats of many entries' lines with
// their figures changed (loggen.Vary), the three repeated inputs of
// bench/scan, and training-log chatter between them.
func repeatsLog(rng *rand.Rand, lines []string, repeats int) []byte {
	var all []string
	for _, l := range lines {
		for range repeats {
			all = append(all, loggen.Vary(rng, l))
		}
	}
	for i := range 60 {
		all = append(all, loggen.BarrierWarning(i), loggen.OOMRepeat(i), loggen.NCCLTimeout(i, 1000))
	}
	noise := strings.Split(string(loggen.Bytes(int64(len(all))*20, nil, 0, rng.Int63())), "\n")
	all = append(all, noise...)
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return []byte(strings.Join(all, "\n") + "\n")
}

// On a log of repeats, where most lines are answered from what a worker
// remembers of their shape, the hits are exactly those of the plain
// matcher: entry, line, offset, evidence and every capture.
func TestRepeatsEquivalence(t *testing.T) {
	es := ourEntries(t)
	s, _ := New(es)
	var lines []string
	for _, e := range es {
		lines = append(lines, e.Examples.Match...)
		lines = append(lines, e.Examples.NoMatch...)
	}
	rng := rand.New(rand.NewSource(21))
	data := repeatsLog(rng, lines, 3) // the plain matcher takes ms a line
	want, _ := reference(s, data, MaxLine, nil, nil)
	for _, workers := range []int{1, 3} {
		p := s.Plan(Gate{})
		p.workers, p.chunk = workers, 64<<10
		rec := &recorder{}
		if _, err := p.Visit(bytes.NewReader(data), rec); err != nil {
			t.Fatal(err)
		}
		compareHits(t, fmt.Sprintf("%d workers", workers), rec.hits, want)
	}
	// The memory answered for most lines with hits, and some regexes that
	// tell digits apart were asked again where their relaxation matched.
	blind, other := 0, 0
	for i := range s.res {
		if digitBlind(s.res[i]) {
			blind++
		} else {
			other++
		}
	}
	if len(want) < 3000 || blind == 0 || other == 0 {
		t.Fatalf("%d hits, %d digit-blind regexes, %d others: the test checks little", len(want), blind, other)
	}
	t.Logf("%d bytes, %d hits, %d digit-blind regexes, %d others", len(data), len(want), blind, other)
}

// hitsRecorder is a recorder that is a HitsVisitor: it settles an entry
// at its first hit.
type hitsRecorder struct {
	recorder
	hitsOnly map[int]bool // lines shown with HitsLine, by index in lines
	follow   bool         // the last Line returned true
	errs     []string
	settled  sync.Map // entry → true
}

func (r *hitsRecorder) Hit(h Hit) {
	r.recorder.Hit(h)
	r.settled.Store(h.Entry, true)
}

func (r *hitsRecorder) Settled(e int) bool {
	_, ok := r.settled.Load(e)
	return ok
}

func (r *hitsRecorder) Line(n int, text []byte) bool {
	r.follow = r.recorder.Line(n, text)
	return r.follow
}

func (r *hitsRecorder) HitsLine(n int, text []byte) bool {
	if r.follow {
		r.errs = append(r.errs, fmt.Sprintf("HitsLine for line %d, after a Line that asked for it", n))
	}
	r.hitsOnly[len(r.lines)] = true
	r.follow = r.recorder.Line(n, text)
	return r.follow
}

// HitsLine replaces Line exactly for the lines with hits that the Gate, as
// written, does not select; the lines shown either way are the plain
// scan's, and the hits too, but that those of a settled entry may come
// without their captures.
func TestHitsLine(t *testing.T) {
	s, _ := New(testEntries)
	planted := []string{
		"RuntimeError: CUDA error: an illegal memory access was encountered",
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0",
		"VERSION of an illegal memory access was encountered", // a gate literal in another case
		"version: an illegal memory access was encountered",   // and as written
		"| an illegal memory access was encountered",          // Start
	}
	rng := rand.New(rand.NewSource(9))
	var hitsOnly, viaLine, uncaptured int
	for round := range 40 {
		maxLine := 48 + rng.Intn(200)
		data := adversarial(rng, 2000+rng.Intn(40000), maxLine, planted)
		wantHits, wantLines := reference(s, data, maxLine, &testGate, testNext)
		p := s.Plan(testGate)
		p.maxLine, p.chunk, p.workers = maxLine, 1+rng.Intn(4096), 1+rng.Intn(4)
		rec := &hitsRecorder{recorder: recorder{next: testNext}, hitsOnly: map[int]bool{}}
		if _, err := p.Visit(io.Reader(bytes.NewReader(data)), rec); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("round %d", round)
		if len(rec.errs) > 0 || len(rec.events) > 0 {
			t.Fatalf("%s: %v %v", name, rec.errs, rec.events)
		}
		first := map[int]bool{}
		for i, h := range rec.hits {
			if h.Captures == nil && i < len(wantHits) && wantHits[i].Captures != nil {
				if !first[h.Entry] {
					t.Fatalf("%s: hit %d, the first of its entry, without captures", name, i)
				}
				rec.hits[i].Captures = wantHits[i].Captures
				uncaptured++
			}
			first[h.Entry] = true
		}
		compareHits(t, name, rec.hits, wantHits)
		if fmt.Sprint(rec.lines) != fmt.Sprint(wantLines) {
			t.Fatalf("%s: lines shown differ from the reference's", name)
		}
		withHits := map[int]bool{}
		for _, h := range wantHits {
			withHits[h.Line] = true
		}
		for i, l := range rec.lines {
			selected := testGate.Start([]byte(l.text))
			for _, lit := range testGate.Literals {
				selected = selected || strings.Contains(l.text, lit)
			}
			switch {
			case rec.hitsOnly[i] && (selected || !withHits[l.n]):
				t.Fatalf("%s: line %d %.80q shown with HitsLine (selected %v, hits %v)", name, l.n, l.text, selected, withHits[l.n])
			case rec.hitsOnly[i]:
				hitsOnly++
			case withHits[l.n] && !selected:
				viaLine++ // after a Line that asked for the next, or a piece of a long line
			}
		}
	}
	if hitsOnly == 0 || uncaptured == 0 {
		t.Fatalf("%d lines shown with HitsLine, %d hits without captures: the test checks little", hitsOnly, uncaptured)
	}
	t.Logf("%d lines shown with HitsLine; %d unselected lines with hits shown with Line; %d hits of settled entries without captures", hitsOnly, viaLine, uncaptured)
}
