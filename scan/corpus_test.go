package scan

import (
	"bytes"
	"cmp"
	"os"
	"slices"
	"testing"

	"github.com/gpudx/gpudx/internal/loggen"
	"github.com/gpudx/gpudx/internal/sharedtest"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
)

const deadendsDir = "../../shared/fixtures/deadends/canons"

// ourEntries is the built-in knowledge base.
func ourEntries(t testing.TB) []*kb.Entry {
	es, err := kb.LoadFS(knowledge.FS, ".", "knowledge/")
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// deadEntries is the deadends.dev corpus (skipped when ../shared is absent).
func deadEntries(t testing.TB) []*kb.Entry {
	if _, err := os.Stat(deadendsDir); err != nil {
		sharedtest.Missing(t, "fixtures/deadends/canons")
	}
	es, _ := kb.LoadPath(deadendsDir)
	return es
}

// corpus is a training log of about n bytes with the given lines planted
// at random (one line in 20).
func corpus(n int, planted []string, seed int64) []byte {
	return loggen.Bytes(int64(n), planted, 0, seed)
}

// examples are the entries' example lines, near misses, signatures and
// aliases (deadends.dev canons have no examples, only a signature).
func examples(es []*kb.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Examples.Match...)
		out = append(out, e.Examples.NoMatch...)
		out = append(out, e.Signature)
		out = append(out, e.Aliases...)
	}
	return out
}

// allHits scans data with one matcher and returns every hit.
func allHits(t testing.TB, s *Scanner, data []byte) []Hit {
	var hits []Hit
	if _, err := s.Scan(bytes.NewReader(data), func(h Hit) { hits = append(hits, h) }); err != nil {
		t.Fatal(err)
	}
	return hits
}

// The prefiltered matcher returns exactly the plain matcher's hits: every
// entry against every example line of every entry, and a generated log
// with those lines planted. The built-in base always; with -short that is
// all, with a smaller log, as in regexp's TestRE2Exhaustive: the 2,522
// deadends.dev canons take minutes more.
func TestPrefilterEquivalence(t *testing.T) {
	ours := ourEntries(t)
	if testing.Short() {
		// The plain matcher takes seconds a megabyte here: a smaller log.
		t.Run("ours", func(t *testing.T) { checkEquivalence(t, ours, examples(ours), 128<<10) })
		return
	}
	if _, err := os.Stat(deadendsDir); err != nil && !sharedtest.Required() {
		t.Run("ours", func(t *testing.T) { checkEquivalence(t, ours, examples(ours), 2<<20) })
		sharedtest.Missing(t, "fixtures/deadends/canons")
	}
	dead := deadEntries(t)
	// Each set against the lines of both, so that every (line, entry)
	// pair of the two sets is checked once; "both" then checks that the
	// two sets in one scanner find exactly what each finds alone.
	lines := append(examples(ours), examples(dead)...)
	t.Run("ours", func(t *testing.T) {
		t.Parallel()
		checkEquivalence(t, ours, lines, 2<<20)
	})
	t.Run("deadends", func(t *testing.T) {
		t.Parallel()
		// The plain matcher tries all 2,522 regexes on every line: keep
		// the generated log small enough for a test.
		checkEquivalence(t, dead, lines, 16<<10)
	})
	t.Run("both", func(t *testing.T) {
		t.Parallel()
		text := withCorpus(lines, 16<<10)
		both, _ := New(append(append([]*kb.Entry(nil), ours...), dead...))
		o, _ := New(ours)
		d, _ := New(dead)
		want := mergeHits(both, allHits(t, o, text), o, allHits(t, d, text), d)
		got := allHits(t, both, text)
		compareHits(t, "one scanner", got, want)
		t.Logf("%d entries (%d unfiltered), %d lines of examples, %d hits", len(both.Entries()), both.Unfiltered(), len(lines), len(want))
	})
}

// withCorpus is lines, one a line, then a generated log of about size
// bytes with them planted.
func withCorpus(lines []string, size int) []byte {
	var text bytes.Buffer
	for _, l := range lines {
		text.WriteString(l + "\n")
	}
	text.Write(corpus(size, lines, 1))
	return text.Bytes()
}

// checkEquivalence compares the prefiltered scanner over es with the
// plain matcher on lines and a generated log of about size bytes.
func checkEquivalence(t *testing.T, es []*kb.Entry, lines []string, size int) {
	fast, _ := New(es)
	text := withCorpus(lines, size)
	want, _ := reference(fast, text, MaxLine, nil, nil)
	if len(want) == 0 {
		t.Fatal("the plain matcher found nothing: the test checks nothing")
	}
	compareHits(t, "prefiltered", allHits(t, fast, text), want)
	t.Logf("%d entries (%d unfiltered), %d lines of examples, %d hits", len(fast.Entries()), fast.Unfiltered(), len(lines), len(want))
}

// mergeHits is what the scanner both, built over the entries of a then
// those of b, must find where a found ha and b found hb: the hits of each
// line (the lines here are not cut into pieces) in the order of both's
// entries.
func mergeHits(both *Scanner, ha []Hit, a *Scanner, hb []Hit, b *Scanner) []Hit {
	idx := map[*kb.Entry]int{}
	for i, e := range both.Entries() {
		idx[e] = i
	}
	var out []Hit
	for _, h := range ha {
		h.Entry = idx[a.Entries()[h.Entry]]
		out = append(out, h)
	}
	for _, h := range hb {
		h.Entry = idx[b.Entries()[h.Entry]]
		out = append(out, h)
	}
	slices.SortStableFunc(out, func(x, y Hit) int {
		return cmp.Or(cmp.Compare(x.Line, y.Line), cmp.Compare(x.Entry, y.Entry))
	})
	return out
}
