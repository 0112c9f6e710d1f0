package diagnose

import (
	"bytes"
	"regexp"
	"slices"
	"strings"

	"github.com/gpudx/gpudx/kb"
)

// Unrecognized is a line that looks like the failure of a run whose log no
// knowledge-base entry matched: the exception that ends a traceback, a CUDA,
// cuDNN, cuBLAS or NCCL status name, an Xid, or a fatal, error or failed
// line near the end. It is reported as not in the knowledge base, with the
// nearest entries kb search finds for it and how sure that is.
type Unrecognized struct {
	Kind    string    `json:"kind"` // "exception", "status", "xid" or "error_line"
	Text    string    `json:"text"`
	File    string    `json:"file,omitempty"`
	Line    int       `json:"line"`
	Names   []string  `json:"names,omitempty"` // status names or "Xid 154" read from it
	Nearest []Nearest `json:"nearest"`
	// Sure says how close the nearest entry is: "close" (its id, error
	// code or an alias names what the line names), "related" (most of the
	// line's words are in the entry), "weak" (a few words), or "none".
	Sure string `json:"sure"`
}

// Nearest is an entry kb search ranks near an unrecognized line.
type Nearest struct {
	ID    string `json:"id"`
	Score int    `json:"score"`
}

// Kinds of unrecognized lines, strongest first.
const (
	UnrecognizedException = "exception"
	UnrecognizedStatus    = "status"
	UnrecognizedXid       = "xid"
	UnrecognizedErrorLine = "error_line"
)

// The lines the collector reads for this besides those with hits
// (diagnose.Gate): literals of 6 bytes or more are searched ignoring case,
// so "error:" also finds "RuntimeError:" and "ERROR:".
var failLiterals = []string{tracebackHead, "error:", "failed", "failure", "fatal:", "fatal ", "CUDA_ERROR_", "cudaError",
	"_STATUS_", "CUFFT_", "NVRM: Xid", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError"}

const tracebackHead = "Traceback (most recent call last)"

var (
	// A traceback's last line: "RuntimeError: ...", "torch.OutOfMemoryError: ...",
	// "KeyboardInterrupt", at column 0 after an optional rank prefix.
	reException = regexp.MustCompile(`^(?:\[(?:rank|default)\d{1,6}\]:\s?)?((?:[A-Za-z_]\w*\.){0,6}[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault))(?::\s*(.*))?$`)
	// Status names of the CUDA libraries and NCCL, never their success.
	reStatus = regexp.MustCompile(`\b(?:CUDA_ERROR_[A-Z_]+|cudaError[A-Z]\w+|(?:CUDNN|CUBLAS|CUSOLVER|CUSPARSE|CURAND|NVRTC|NVJPEG|CUFFT)_STATUS_[A-Z_]+|nccl(?:UnhandledCudaError|SystemError|InternalError|InvalidArgument|InvalidUsage|RemoteError)|CUFFT_[A-Z_]+)\b`)
	reXid    = regexp.MustCompile(`NVRM: Xid \([^)]*\): (\d{1,4})\b`)
	// A line that says something failed, in the forms the gate shows
	// (failLiterals): "error:", "fatal:", "fatal ", "failed", "failure".
	reFailWord = regexp.MustCompile(`(?i)error:|fatal[: ]|failed|failure`)
	// What healthy runs print with those words.
	// nvidia-smi -q's "Remapping Failure Occurred : No" says nothing failed;
	// glog's W lines and TensorRT's [W] tag are warnings a run survives.
	reNotFailure = regexp.MustCompile(`(?i)(?:error|failed|failure)[\w ]*:\s*(?:no|none|0|n/a|false|disabled)\s*$|warn|\b0 (?:errors?|failed|failures)\b|\b(?:errors?|failed|failures)[:=]\s*0\b|\bno errors?\b|without errors?|\[INFO\]|\bINFO\b|^I\d{4} |^W\d{4} |\[W\] `)
)

// endWindow is how near the end of its input an error line must be: a run
// ends with its failure; what it printed and survived earlier is not it.
const endWindow = 40

// maxFailLines bounds the candidates kept per input.
const maxFailLines = 16

type failLine struct {
	kind  string
	text  string
	line  int
	names []string
}

// failTracker keeps, per input, the lines that look like a failure.
type failTracker struct {
	cur  []failLine // the current input's candidates, newest last
	inTB int        // lines left to find the end of a traceback
	done []fileFails
	file string
}

type fileFails struct {
	file  string
	lines int // the input's line count
	fails []failLine
}

const tracebackMax = 400 // lines a traceback's frames may take

func (t *failTracker) pending() bool { return t.inTB > 0 }

// line reads one line shown to the collector.
func (t *failTracker) line(n int, text []byte) {
	if bytes.Contains(text, []byte(tracebackHead)) {
		t.inTB = tracebackMax
		return
	}
	if t.inTB > 0 {
		// Frames and source lines until the exception line.
		t.inTB--
		if m := reException.FindSubmatch(bytes.TrimRight(text, " \r")); m != nil {
			t.add(failLine{kind: UnrecognizedException, text: string(text), line: n, names: []string{string(m[1])}})
			t.inTB = 0
		}
		return
	}
	if m := reXid.FindSubmatch(text); m != nil {
		t.add(failLine{kind: UnrecognizedXid, text: string(text), line: n, names: []string{"Xid " + string(m[1])}})
		return
	}
	if ms := reStatus.FindAll(text, 4); ms != nil {
		var names []string
		for _, m := range ms {
			s := string(m)
			if !strings.HasSuffix(s, "_SUCCESS") && s != "cudaSuccess" && !slices.Contains(names, s) {
				names = append(names, s)
			}
		}
		if len(names) > 0 {
			t.add(failLine{kind: UnrecognizedStatus, text: string(text), line: n, names: names})
			return
		}
	}
	if reFailWord.Match(text) && !reNotFailure.Match(text) {
		t.add(failLine{kind: UnrecognizedErrorLine, text: string(text), line: n})
	}
}

func (t *failTracker) add(f failLine) {
	if len(f.text) > maxEvidenceText {
		f.text = f.text[:maxEvidenceText]
	}
	if len(t.cur) == maxFailLines {
		t.cur = append(t.cur[:0], t.cur[1:]...)
	}
	t.cur = append(t.cur, f)
}

const maxEvidenceText = 500

// newFile starts an input.
func (t *failTracker) newFile(name string) {
	t.file, t.inTB = name, 0
}

// endFile closes the current input, which had lines lines.
func (t *failTracker) endFile(lines int) {
	if len(t.cur) > 0 && len(t.done) < maxFiles {
		t.done = append(t.done, fileFails{t.file, lines, t.cur})
	}
	t.cur, t.inTB = nil, 0
}

// report picks what looks like the failure, at most three lines, the
// strongest kind first: the exception ending the last traceback, status
// names, Xids, then error lines; only near an input's end (Xids wherever
// they are: a kernel log is not in run order with the job). Lines already
// diagnosed (hit lines) are skipped.
func (t *failTracker) report(entries []*kb.Entry, hit func(file string, line int) bool) []Unrecognized {
	t.endFile(0)
	var picked []Unrecognized
	for _, kind := range []string{UnrecognizedException, UnrecognizedStatus, UnrecognizedXid, UnrecognizedErrorLine} {
		for _, ff := range t.done {
			for _, i := range pickOrder(ff.fails, kind) {
				f := ff.fails[i]
				near := ff.lines == 0 || f.line > ff.lines-endWindow
				if f.kind != kind || (kind != UnrecognizedXid && !near) || hit(ff.file, f.line) {
					continue
				}
				if slices.ContainsFunc(picked, func(u Unrecognized) bool { return u.File == ff.file && u.Line == f.line }) {
					continue
				}
				picked = append(picked, Unrecognized{Kind: f.kind, Text: strings.TrimSpace(f.text), File: ff.file, Line: f.line, Names: f.names})
				if kind == UnrecognizedException || len(picked) == 3 {
					break // the last exception is the failure; earlier ones were handled
				}
			}
			if len(picked) == 3 {
				break
			}
		}
		if len(picked) == 3 {
			break
		}
	}
	if len(picked) == 0 {
		return nil
	}
	base := kb.NewBase()
	for _, e := range entries {
		base.Add(e)
	}
	for i := range picked {
		u := &picked[i]
		q := u.Text
		if len(u.Names) > 0 && u.Kind != UnrecognizedException {
			q = strings.Join(u.Names, " ")
		}
		u.Nearest = []Nearest{}
		rs := kb.Search(base, q, 3)
		for _, r := range rs {
			u.Nearest = append(u.Nearest, Nearest{r.Entry.ID, r.Score})
		}
		u.Sure = "none"
		if len(rs) > 0 {
			u.Sure = sureOf(rs[0], q)
		}
	}
	return picked
}

// pickOrder is the order in which fails of kind are considered. Most kinds
// go newest first: the last exception is the failure. Error lines go
// oldest first: in the burst of them that ends a run, the first says why
// and the later ones only that something failed (trtexec prints four such
// lines after the parser's error, the last its "&&&& FAILED").
func pickOrder(fails []failLine, kind string) []int {
	idx := make([]int, 0, len(fails))
	if kind != UnrecognizedErrorLine {
		for i := len(fails) - 1; i >= 0; i-- {
			idx = append(idx, i)
		}
		return idx
	}
	for i, f := range fails {
		if f.kind == kind {
			idx = append(idx, i)
		}
	}
	return idx
}

// sureOf says how close the best search result is: "close" when search
// scores a name the entry carries (its id, error code or an alias: 150 and
// up), "related" when the entry's text holds at least 60% of the line's
// words, "weak" otherwise. Search's score alone grows with the length of
// the line, so the share of words is what tells related from weak.
func sureOf(r kb.Result, q string) string {
	if r.Score >= 150 {
		return "close"
	}
	e := r.Entry
	hay := strings.ToLower(strings.Join(append(append([]string{e.ID, e.Signature, e.ErrorCode, e.RootCause}, e.Aliases...), e.Tags...), " "))
	var words, in int
	for _, w := range strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r == '_')
	}) {
		if len(w) < 4 || commonWords[w] {
			continue
		}
		words++
		if strings.Contains(hay, w) {
			in++
		}
	}
	if words > 0 && in*10 >= words*6 {
		return "related"
	}
	return "weak"
}

// commonWords say nothing about which error a line is.
var commonWords = map[string]bool{"expected": true, "have": true, "same": true, "with": true, "that": true, "this": true,
	"from": true, "were": true, "when": true, "than": true, "into": true, "been": true, "there": true, "their": true,
	"which": true, "must": true, "should": true, "could": true, "would": true, "only": true, "also": true, "error": true,
	"errors": true, "failed": true, "failure": true, "fatal": true, "line": true, "file": true, "runtimeerror": true,
	"valueerror": true, "exception": true, "while": true, "call": true, "most": true, "recent": true, "last": true}
