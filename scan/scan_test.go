package scan

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/gpudx/gpudx/kb"
)

func entries(pairs ...string) []*kb.Entry {
	var es []*kb.Entry
	for i := 0; i < len(pairs); i += 2 {
		es = append(es, &kb.Entry{ID: pairs[i], Regex: pairs[i+1]})
	}
	return es
}

func collect(t *testing.T, s *Scanner, r io.Reader) ([]Hit, Stats) {
	t.Helper()
	var hits []Hit
	st, err := s.Scan(r, func(h Hit) { hits = append(hits, h) })
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return hits, st
}

var testEntries = entries(
	"cuda/illegal-memory-access", `an illegal memory access was encountered`,
	"pytorch/oom", `CUDA out of memory\. Tried to allocate (?P<requested>[0-9.]+ [KMGT]iB)`,
	"nccl/timeout", `Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+)`,
)

func TestScanEdgeCases(t *testing.T) {
	s, err := New(testEntries)
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", 3*MaxLine+10)
	tests := []struct {
		name       string
		in         string
		wantIDs    []string
		wantLines  []int
		wantAt     []string // the input's text each hit's offset must point at
		wantLines2 int      // Stats.Lines
		wantText   string
	}{
		{name: "empty", in: "", wantLines2: 0},
		{name: "one line without newline", in: "CUDA error: an illegal memory access was encountered",
			wantIDs: []string{"cuda/illegal-memory-access"}, wantLines: []int{1}, wantAt: []string{"an illegal"}, wantLines2: 1},
		{name: "CRLF", in: "ok\r\nRuntimeError: CUDA error: an illegal memory access was encountered\r\nnext\r\n",
			wantIDs: []string{"cuda/illegal-memory-access"}, wantLines: []int{2}, wantAt: []string{"an illegal"}, wantLines2: 3,
			wantText: "RuntimeError: CUDA error: an illegal memory access was encountered"},
		{name: "ANSI colours inside the message", in: "\x1b[31mRuntimeError: CUDA error: an \x1b[1millegal\x1b[0m memory access was encountered\x1b[0m\n",
			wantIDs: []string{"cuda/illegal-memory-access"}, wantLines: []int{1}, wantAt: []string{"an \x1b[1millegal"}, wantLines2: 1,
			wantText: "RuntimeError: CUDA error: an illegal memory access was encountered"},
		{name: "binary junk and invalid UTF-8 do not stop the scan", in: "\x00\xff\xfe garbage \x80\x81\n\x00\x00" + "an illegal memory access was encountered\n",
			wantIDs: []string{"cuda/illegal-memory-access"}, wantLines: []int{2}, wantAt: []string{"an illegal"}, wantLines2: 2},
		{name: "a line longer than MaxLine is cut into pieces, all scanned", in: huge + "an illegal memory access was encountered\n" + "x\n",
			wantIDs: []string{"cuda/illegal-memory-access"}, wantLines: []int{1}, wantAt: []string{"an illegal"}, wantLines2: 2},
		{name: "several entries on several lines", in: "a\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0\n[rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE)\n",
			wantIDs: []string{"pytorch/oom", "nccl/timeout"}, wantLines: []int{2, 3}, wantAt: []string{"CUDA out", "Watchdog"}, wantLines2: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// OneByteReader and a plain reader must agree: refills do not matter.
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				if len(tt.in) > 1<<20 {
					if _, ok := r.(*strings.Reader); !ok {
						continue // too slow byte by byte
					}
				}
				hits, st := collect(t, s, r)
				if st.Bytes != int64(len(tt.in)) || st.Lines != tt.wantLines2 {
					t.Errorf("stats = %+v, want bytes %d lines %d", st, len(tt.in), tt.wantLines2)
				}
				if len(hits) != len(tt.wantIDs) {
					t.Fatalf("got %d hits %+v, want %v", len(hits), hits, tt.wantIDs)
				}
				for i, h := range hits {
					want := int64(strings.Index(tt.in, tt.wantAt[i]))
					if h.ID != tt.wantIDs[i] || h.Line != tt.wantLines[i] || h.Offset != want {
						t.Errorf("hit %d = %s line %d offset %d, want %s line %d offset %d",
							i, h.ID, h.Line, h.Offset, tt.wantIDs[i], tt.wantLines[i], want)
					}
				}
				if tt.wantText != "" && hits[0].Text != tt.wantText {
					t.Errorf("text = %q, want %q", hits[0].Text, tt.wantText)
				}
			}
		})
	}
}

func TestCaptures(t *testing.T) {
	s, _ := New(testEntries)
	hits, _ := collect(t, s, strings.NewReader(
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.15 GiB\n"))
	if len(hits) != 1 || hits[0].Captures["requested"] != "20.00 MiB" {
		t.Fatalf("hits = %+v", hits)
	}
}

func TestInvalidRegexIsReportedAndSkipped(t *testing.T) {
	s, err := New(entries("a/bad", `(?<!x)y`, "a/good", `y`, "a/none", ``))
	var list kb.ErrorList
	var ce *CompileError
	if !errors.As(err, &list) || len(list) != 1 || !errors.As(err, &ce) || ce.ID != "a/bad" || !strings.Contains(err.Error(), "a/bad") {
		t.Fatalf("err = %#v", err)
	}
	if len(s.Entries()) != 1 || s.Entries()[0].ID != "a/good" {
		t.Fatalf("entries = %v", s.Entries())
	}
}

func TestEvidenceKeepsTheProgressBarRedrawWithTheMatch(t *testing.T) {
	line := "10%|#     |\r20%|##    |\rRuntimeError: CUDA error: an illegal memory access was encountered\r30%|###   |" + strings.Repeat(" ", 1000)
	s, _ := New(testEntries)
	hits, _ := collect(t, s, strings.NewReader(line))
	if len(hits) != 1 || hits[0].Text != "RuntimeError: CUDA error: an illegal memory access was encountered" {
		t.Fatalf("hits = %+v", hits)
	}
}

func TestEvidenceOfALongLineIsAWindowAroundTheMatch(t *testing.T) {
	line := strings.Repeat("a", 5000) + "an illegal memory access was encountered" + strings.Repeat("b", 5000)
	s, _ := New(testEntries)
	hits, _ := collect(t, s, strings.NewReader(line))
	if len(hits) != 1 {
		t.Fatal(hits)
	}
	txt := hits[0].Text
	if !strings.Contains(txt, "an illegal memory access was encountered") || len(txt) > MaxEvidence+2*len("…") {
		t.Fatalf("evidence %d bytes: %q", len(txt), txt)
	}
}

func TestReadErrorIsReturned(t *testing.T) {
	s, _ := New(testEntries)
	r := io.MultiReader(strings.NewReader("an illegal memory access was encountered\n"), iotest.ErrReader(io.ErrUnexpectedEOF))
	var n int
	st, err := s.Scan(r, func(Hit) { n++ })
	if err != io.ErrUnexpectedEOF || n != 1 || st.Lines != 1 {
		t.Fatalf("err=%v hits=%d stats=%+v", err, n, st)
	}
}

func TestStripANSI(t *testing.T) {
	tests := []struct{ in, want string }{
		{"\x1b[0;31mred\x1b[0m", "red"},
		{"a\x1b]0;title\x07b", "ab"},
		{"a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"},
		{"a\x1b(Bb", "ab"},
		{"trailing\x1b", "trailing"},
		{"\x1b[", ""},
	}
	for _, tt := range tests {
		if got := string(stripANSI(nil, []byte(tt.in))); got != tt.want {
			t.Errorf("stripANSI(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	raw := []byte("\x1b[1mab\x1b[0mcd")
	if got := rawOffset(raw, 2); got != 10 || raw[got] != 'c' {
		t.Errorf("rawOffset = %d", got)
	}
}

// regex_not rules out the harmless lines that hold the error's text: here
// TensorRT's warning that one builder strategy failed, which the build
// survives, beside the same text as the build's error.
func TestRegexNot(t *testing.T) {
	e := &kb.Entry{ID: "ecosystem/no-tactic", Regex: `Could not find any implementation for node`,
		RegexNot: `^\s*Error message: |Skipping this backend strategy`}
	s, err := New([]*kb.Entry{e})
	if err != nil {
		t.Fatal(err)
	}
	log := "[W] [TRT] Engine generation failed with backend strategy 2.\n" +
		"Error message: [optimizer.cpp::computeCosts::3869] Error Code 10: Internal Error (Could not find any implementation for node /stem/Conv.).\n" +
		"Skipping this backend strategy.\n" +
		"[E] Error[10]: [optimizer.cpp::computeCosts::3869] Error Code 10: Internal Error (Could not find any implementation for node /stem/Conv.)\n"
	hits, _ := collect(t, s, strings.NewReader(log))
	if len(hits) != 1 || hits[0].Line != 4 {
		t.Errorf("hits %+v, want one on line 4", hits)
	}
	if !e.MatchLine("[E] Could not find any implementation for node x") || e.MatchLine("Error message: Could not find any implementation for node x") {
		t.Error("MatchLine disagrees with the scanner")
	}
	bad := &kb.Entry{ID: "x/bad", Regex: `ok`, RegexNot: `(`}
	if _, err := New([]*kb.Entry{bad}); err == nil || !strings.Contains(err.Error(), "regex_not") {
		t.Errorf("invalid regex_not: %v", err)
	}
}
