package scan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// recorder is a Visitor that keeps everything it is shown.
type recorder struct {
	lines []refLine
	hits  []Hit
	next  func(string) bool
	// Per input: Begin and End calls, as text.
	events []string
}

func (r *recorder) Line(n int, text []byte) bool {
	r.lines = append(r.lines, refLine{n, string(text)})
	return r.next != nil && r.next(string(text))
}

func (r *recorder) Hit(h Hit) {
	if len(r.lines) == 0 || r.lines[len(r.lines)-1].n != h.Line {
		r.events = append(r.events, fmt.Sprintf("hit on line %d before its Line call", h.Line))
	}
	r.hits = append(r.hits, h)
}

func (r *recorder) Begin(i int) { r.events = append(r.events, fmt.Sprintf("begin %d", i)) }
func (r *recorder) End(i int, st Stats, err error) {
	r.events = append(r.events, fmt.Sprintf("end %d %d bytes %d lines err=%v", i, st.Bytes, st.Lines, err))
}

// adversarial builds an input of about n bytes that crosses every edge
// the chunked scan has: lines longer than maxLine and than a chunk, CRLF,
// colour codes inside messages, empty lines, blocks that ask for the next
// line, gate literals in both cases, and no newline at the end.
func adversarial(rng *rand.Rand, n, maxLine int, planted []string) []byte {
	var b bytes.Buffer
	for b.Len() < n {
		switch k := rng.Intn(20); {
		case k < 6:
			b.WriteString(fmt.Sprintf("step %d loss=%.3f lr=1e-4 tokens/s=%d", rng.Intn(9999), rng.Float64(), rng.Intn(99999)))
		case k < 9:
			b.WriteString(planted[rng.Intn(len(planted))])
		case k == 9:
			// A long line with a message somewhere in it, maybe across a
			// piece boundary.
			pad := strings.Repeat("x\r", rng.Intn(3*maxLine)/2) // progress bar redraws
			b.WriteString(pad + planted[rng.Intn(len(planted))] + strings.Repeat("y", rng.Intn(2*maxLine)))
		case k == 10:
			b.WriteString("\x1b[31m" + strings.Replace(planted[rng.Intn(len(planted))], " ", " \x1b[1m", 1) + "\x1b[0m")
		case k == 11:
			b.WriteString("Table follows:") // asks for the next line
		case k == 12:
			b.WriteString("  row " + fmt.Sprint(rng.Intn(100))) // and so does every row
		case k == 13:
			b.WriteString([]string{"PyTorch VERSION: 2.4.0", "pytorch version: 2.4.0", "x==1.0", "X==1.0", "|   0  GPU row |"}[rng.Intn(5)])
		case k == 14:
			// nothing: an empty line
		case k == 15:
			// Whole pieces and a CR, around a piece boundary.
			b.WriteString(strings.Repeat("z", (1+rng.Intn(4))*maxLine-rng.Intn(3)) + "\r")
		default:
			b.WriteString(fmt.Sprintf("NCCL INFO Channel %02d/32 : 0[%d] -> 1[%d] via P2P/IPC", rng.Intn(32), rng.Intn(8), rng.Intn(8)))
		}
		if rng.Intn(7) == 0 {
			b.WriteByte('\r')
		}
		b.WriteByte('\n')
	}
	if rng.Intn(2) == 0 {
		b.WriteString("CUDA error: an illegal memory access was encountered") // no newline at the end
	}
	return b.Bytes()
}

var testGate = Gate{
	Literals: []string{"version", "==", "Table follows"},
	Start:    func(line []byte) bool { return len(line) > 0 && line[0] == '|' },
}

func testNext(text string) bool {
	return strings.HasSuffix(text, "follows:") || strings.HasPrefix(text, "  row")
}

// The chunked, parallel scan shows exactly what the plain reference does,
// whatever the chunk size, piece size, worker count and read sizes.
func TestPlanEquivalence(t *testing.T) {
	s, err := New(testEntries)
	if err != nil {
		t.Fatal(err)
	}
	planted := []string{
		"RuntimeError: CUDA error: an illegal memory access was encountered",
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0",
		"[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE)",
		"an illegal memory access was encountered",
		"AN ILLEGAL MEMORY ACCESS WAS ENCOUNTERED", // no hit: the regex is case-sensitive
	}
	rng := rand.New(rand.NewSource(7))
	for round := range 100 {
		maxLine := 48 + rng.Intn(200)
		chunk := 1 + rng.Intn(4096)
		workers := 1 + rng.Intn(4)
		data := adversarial(rng, 2000+rng.Intn(40000), maxLine, planted)
		wantHits, wantLines := reference(s, data, maxLine, &testGate, testNext)
		p := s.Plan(testGate)
		p.maxLine, p.chunk, p.workers = maxLine, chunk, workers
		var r io.Reader = bytes.NewReader(data)
		if round%3 == 0 {
			r = iotest.OneByteReader(r)
		}
		rec := &recorder{next: testNext}
		st, err := p.Visit(r, rec)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("round %d (maxLine %d, chunk %d, %d workers, %d bytes)", round, maxLine, chunk, workers, len(data))
		if st.Bytes != int64(len(data)) || st.Lines != bytes.Count(data, []byte("\n"))+btoi(data[len(data)-1] != '\n') {
			t.Fatalf("%s: stats %+v", name, st)
		}
		if len(rec.events) > 0 {
			t.Fatalf("%s: %v", name, rec.events)
		}
		compareHits(t, name, rec.hits, wantHits)
		if len(rec.lines) != len(wantLines) {
			t.Fatalf("%s: %d lines shown, reference %d", name, len(rec.lines), len(wantLines))
		}
		for i := range wantLines {
			if rec.lines[i] != wantLines[i] {
				t.Fatalf("%s: shown line %d is %d %.60q, reference %d %.60q", name, i, rec.lines[i].n, rec.lines[i].text, wantLines[i].n, wantLines[i].text)
			}
		}
		if len(wantHits) == 0 || len(wantLines) == 0 {
			t.Fatalf("%s: the reference found nothing: the round checks nothing", name)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func compareHits(t *testing.T, name string, got, want []Hit) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d hits, reference %d", name, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Entry != w.Entry || g.Line != w.Line || g.Offset != w.Offset || g.Len != w.Len || g.Text != w.Text || fmt.Sprint(g.Captures) != fmt.Sprint(w.Captures) {
			t.Fatalf("%s: hit %d: %+v, reference %+v", name, i, g, w)
		}
	}
}

// Inputs are reported in order, each between Begin and End with its own
// line numbers and stats; one that cannot be opened gets an End with an
// *OpenError and no Begin, and the others are still scanned.
func TestVisitAllInputs(t *testing.T) {
	s, _ := New(testEntries)
	p := s.Plan(Gate{})
	p.chunk, p.workers = 64, 3
	texts := []string{
		"a\nb\nRuntimeError: CUDA error: an illegal memory access was encountered\n",
		"",
		"an illegal memory access was encountered",
	}
	var inputs []Input
	for i, tx := range texts {
		inputs = append(inputs, Input{Name: fmt.Sprint("in", i), Open: func() (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(tx)), nil
		}})
		if i == 1 {
			inputs = append(inputs, Input{Name: "missing", Open: func() (io.ReadCloser, error) {
				return nil, errors.New("no such file")
			}})
		}
	}
	rec := &recorder{}
	p.VisitAll(inputs, rec)
	want := []string{
		"begin 0", "end 0 71 bytes 3 lines err=<nil>",
		"begin 1", "end 1 0 bytes 0 lines err=<nil>",
		"end 2 0 bytes 0 lines err=no such file",
		"begin 3", "end 3 40 bytes 1 lines err=<nil>",
	}
	if fmt.Sprint(rec.events) != fmt.Sprint(want) {
		t.Fatalf("events\n%q\nwant\n%q", rec.events, want)
	}
	if len(rec.hits) != 2 || rec.hits[0].Line != 3 || rec.hits[0].Offset != 30 || rec.hits[1].Line != 1 || rec.hits[1].Offset != 0 {
		t.Fatalf("hits %+v", rec.hits)
	}
}

// A read error ends the input with the error, after what was read before
// it was scanned.
func TestVisitReadError(t *testing.T) {
	s, _ := New(testEntries)
	r := io.MultiReader(strings.NewReader("x\nan illegal memory access was encountered"), iotest.ErrReader(errors.New("disk on fire")))
	var hits []Hit
	st, err := s.Scan(r, func(h Hit) { hits = append(hits, h) })
	if err == nil || err.Error() != "disk on fire" || st.Bytes != 42 || st.Lines != 2 || len(hits) != 1 || hits[0].Line != 2 {
		t.Fatalf("st %+v err %v hits %+v", st, err, hits)
	}
}

// Lines of whole pieces, with and without a CR, against every buffer size
// around them: the pieces shown are the reference's, never an empty piece
// made of a line's trailing CR.
func TestPlanPieceBoundaries(t *testing.T) {
	s, _ := New(testEntries)
	const maxLine = 8
	for k := 1; k <= 3; k++ {
		for _, d := range []int{-1, 0, 1} {
			for _, cr := range []string{"", "\r"} {
				line := strings.Repeat("a", k*maxLine+d) + cr
				data := []byte("x\n" + line + "\n" + line + "\ny")
				_, want := reference(s, data, maxLine, &Gate{All: true}, nil)
				for chunk := 1; chunk <= 5*maxLine; chunk++ {
					p := s.Plan(Gate{All: true})
					p.maxLine, p.chunk, p.workers = maxLine, chunk, 2
					rec := &recorder{}
					if _, err := p.Visit(bytes.NewReader(data), rec); err != nil {
						t.Fatal(err)
					}
					if fmt.Sprint(rec.lines) != fmt.Sprint(want) {
						t.Fatalf("line %q, chunk %d: shown %v, reference %v", line, chunk, rec.lines, want)
					}
				}
			}
		}
	}
}

// Inputs that take a buffer and give no chunk (empty ones, ones that end
// exactly where a buffer does, ones whose first read fails) hand the
// buffer back: a hundred of them do not exhaust the pool.
func TestVisitAllReturnsBuffers(t *testing.T) {
	s, _ := New(testEntries)
	for _, text := range []string{"", "aaaaaaaaaaaaaaa\n", "error"} {
		p := s.Plan(Gate{})
		p.chunk, p.maxLine, p.workers = 16, 8, 1
		var inputs []Input
		for range 100 {
			inputs = append(inputs, Input{Open: func() (io.ReadCloser, error) {
				if text == "error" {
					return io.NopCloser(iotest.ErrReader(errors.New("unreadable"))), nil
				}
				return io.NopCloser(strings.NewReader(text)), nil
			}})
		}
		rec := &recorder{}
		done := make(chan bool)
		go func() { p.VisitAll(inputs, rec); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%q: the scan of 100 inputs hangs after %d events", text, len(rec.events))
		}
		if len(rec.events) != 200 {
			t.Fatalf("%q: %d events", text, len(rec.events))
		}
	}
}
