// Package health decides from a node's kernel log whether the node should
// leave scheduling. It matches the knowledge base's operator entries (Xid
// and other driver events, each with a severity, a fault, a drain rule and
// NVIDIA's resolution bucket) and applies their drain rules per GPU:
// "yes" drains on the first event, "if_repeats" when the same event recurs
// on the same GPU, "no" never. Schedulers' health checks (Slurm through
// NHC, Kubernetes' node-problem-detector) call it through gpudx check.
package health

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/scan"
)

// Options tune a check.
type Options struct {
	// Since, when set, skips event lines whose own wall-clock timestamp
	// is earlier (journalctl -o short-iso or RFC 3339 stamps at the start
	// of the line). Event lines without such a stamp are kept and counted
	// in Result.Undated.
	Since time.Time
	// Repeats is how many events of an "if_repeats" entry on one GPU
	// drain the node; 0 means DefaultRepeats.
	Repeats int
}

// DefaultRepeats: "recurs" means seen a second time.
const DefaultRepeats = 2

// Finding is one operator entry seen on one GPU (or on no named GPU).
type Finding struct {
	ID        string      `json:"id"`
	Title     string      `json:"title"`
	ErrorCode string      `json:"error_code,omitempty"`
	GPU       string      `json:"gpu,omitempty"` // PCI bus id as the line gives it
	Count     int         `json:"count"`         // lines
	Events    int         `json:"events"`        // lines of one event (one timestamp, or adjacent lines) count once
	FirstLine int         `json:"first_line"`
	Text      string      `json:"text"` // the first line seen
	Operator  kb.Operator `json:"operator"`
	Drain     bool        `json:"drain"`
	Why       string      `json:"why"`

	lastLine int
	lastAt   float64
	lastOK   bool
}

// Result is the verdict over one kernel log.
type Result struct {
	Drain    bool      `json:"drain"`
	Findings []Finding `json:"findings"` // drains first, then by severity, then by first line
	Lines    int       `json:"lines"`
	Skipped  int       `json:"skipped_before_since,omitempty"` // event lines before Since
	Undated  int       `json:"undated,omitempty"`              // event lines kept under Since because they carry no wall-clock stamp
	// Unjudged are Xid lines no operator entry matched (an Xid number the
	// knowledge base does not cover): listed, never a reason to drain.
	Unjudged []Unjudged `json:"unjudged,omitempty"`
}

// Unjudged is an Xid the knowledge base has no operator rule for.
type Unjudged struct {
	Xid       string `json:"xid"`
	GPU       string `json:"gpu,omitempty"`
	Count     int    `json:"count"`
	FirstLine int    `json:"first_line"`
	Text      string `json:"text"`
}

// reXid reads the Xid number and bus id of any NVRM Xid line.
var reXid = regexp.MustCompile(`NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})[^)]*\): ([0-9]+)`)

// maxUnjudged bounds the list (distinct Xid and GPU pairs).
const maxUnjudged = 64

type visitor struct {
	line func(int, []byte)
	hit  func(scan.Hit)
}

func (v visitor) Line(n int, text []byte) bool { v.line(n, text); return false }
func (v visitor) Hit(h scan.Hit)               { v.hit(h) }

// Operators returns the entries that carry an operator block.
func Operators(entries []*kb.Entry) []*kb.Entry {
	var out []*kb.Entry
	for _, e := range entries {
		if e.Operator != nil {
			out = append(out, e)
		}
	}
	return out
}

// Check reads a kernel log from r and judges it against the operator
// entries among entries.
func Check(entries []*kb.Entry, r io.Reader, opt Options) (*Result, error) {
	ops := Operators(entries)
	if len(ops) == 0 {
		return nil, fmt.Errorf("no entry in the knowledge base carries an operator block")
	}
	s, err := scan.New(ops)
	if err != nil {
		return nil, err
	}
	repeats := opt.Repeats
	if repeats <= 0 {
		repeats = DefaultRepeats
	}
	type key struct{ id, gpu string }
	found := map[key]*Finding{}
	res := &Result{}
	skip := false
	var cur []byte // the line being scanned; valid during its hits
	// An Xid line is held until the next line shows whether an entry
	// matched it.
	var pending []byte
	pendingLine, matched := 0, false
	unjudged := map[[2]string]*Unjudged{}
	var order [][2]string
	settle := func() {
		if pending == nil || matched || skip {
			pending = nil
			return
		}
		m := reXid.FindSubmatch(pending)
		k := [2]string{string(m[2]), strings.ToLower(string(m[1]))}
		u := unjudged[k]
		if u == nil {
			if len(order) >= maxUnjudged {
				pending = nil
				return
			}
			u = &Unjudged{Xid: k[0], GPU: k[1], FirstLine: pendingLine, Text: string(pending)}
			unjudged[k] = u
			order = append(order, k)
		}
		u.Count++
		pending = nil
	}
	each := func(line int, text []byte) {
		settle()
		if bytes.Contains(text, []byte("NVRM: Xid")) && reXid.Match(text) {
			pending = append(pending[:0], text[:min(len(text), scan.MaxEvidence)]...)
			pendingLine, matched = line, false
		}
		skip = false
		cur = text
		if opt.Since.IsZero() {
			return
		}
		t, ok := Stamp(text)
		switch {
		case !ok:
			res.Undated++
		case t.Before(opt.Since):
			skip = true
			res.Skipped++
		}
	}
	hit := func(h scan.Hit) {
		matched = true
		if skip {
			return
		}
		e := s.Entries()[h.Entry]
		gpu := h.Captures["pci_bus_id"]
		if gpu == "" {
			// "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus." names
			// the GPU outside a capture; the Xid line names it without
			// the function number.
			gpu = reBusID.FindString(h.Text)
		}
		if i := strings.LastIndexByte(gpu, '.'); i > 0 {
			gpu = gpu[:i]
		}
		k := key{e.ID, strings.ToLower(gpu)}
		f := found[k]
		if f == nil {
			f = &Finding{ID: e.ID, Title: e.Title, ErrorCode: e.ErrorCode, GPU: k.gpu, FirstLine: h.Line,
				Text: h.Text, Operator: *e.Operator}
			found[k] = f
		}
		at, atOK := eventTime(cur)
		// NVIDIA prints several lines for one event (Xid 13's SM
		// exception, then its ESR line): lines with the same time, or
		// adjacent lines without one, are one event.
		same := f.Count > 0 && (atOK && f.lastOK && at-f.lastAt <= 1 || !atOK && h.Line == f.lastLine+1)
		if !same {
			f.Events++
		}
		f.Count++
		f.lastLine, f.lastAt, f.lastOK = h.Line, at, atOK
	}
	// Only Xid lines and lines with hits are looked at: the rest of a
	// kernel log is never read twice.
	plan := s.CachedPlan("health.Check", func() scan.Gate { return scan.Gate{Literals: []string{"NVRM: Xid"}} })
	st, err := plan.Visit(r, visitor{each, hit})
	res.Lines = st.Lines
	if err != nil {
		return nil, err
	}
	settle()
	for _, k := range order {
		res.Unjudged = append(res.Unjudged, *unjudged[k])
	}
	for _, f := range found {
		f.Drain, f.Why = judge(f, repeats)
		res.Drain = res.Drain || f.Drain
		res.Findings = append(res.Findings, *f)
	}
	slices.SortFunc(res.Findings, func(a, b Finding) int {
		if a.Drain != b.Drain {
			if a.Drain {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(severityRank(a.Operator.Severity), severityRank(b.Operator.Severity)),
			cmp.Compare(a.FirstLine, b.FirstLine), strings.Compare(a.ID, b.ID), strings.Compare(a.GPU, b.GPU))
	})
	if res.Findings == nil {
		res.Findings = []Finding{}
	}
	return res, nil
}

func judge(f *Finding, repeats int) (bool, string) {
	on := "on this node"
	if f.GPU != "" {
		on = "on GPU " + f.GPU
	}
	seen := fmt.Sprintf("seen %s %s", times(f.Events), on)
	switch f.Operator.Drain {
	case "yes":
		return true, "drain on the first event: " + seen
	case "if_repeats":
		if f.Events >= repeats {
			return true, fmt.Sprintf("drain when it recurs (%s): %s", times(repeats), seen)
		}
		return false, fmt.Sprintf("drain only when it recurs (%s): %s", times(repeats), seen)
	}
	return false, "no drain for this event: " + seen
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// reBusID finds a PCI bus id (domain:bus:device, with or without the
// function) in a line that names one outside the entry's capture.
var reBusID = regexp.MustCompile(`\b[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-9A-Fa-f])?\b`)

// reMono is dmesg's "[ 5.123456]" time since boot.
var reMono = regexp.MustCompile(`^(?:[^\[]{0,80})\[\s*([0-9]+\.[0-9]+)\]`)

// eventTime is a line's time in seconds: its wall-clock stamp, else
// dmesg's time since boot.
func eventTime(line []byte) (float64, bool) {
	if t, ok := Stamp(line); ok {
		return float64(t.UnixNano()) / 1e9, true
	}
	if m := reMono.FindSubmatch(line[:min(len(line), 120)]); m != nil {
		if v, err := strconv.ParseFloat(string(m[1]), 64); err == nil {
			return v, true
		}
	}
	return 0, false
}

func severityRank(s string) int {
	if i := slices.Index(kb.Severities, s); i >= 0 {
		return i
	}
	return len(kb.Severities)
}

// stampLayouts are the wall-clock stamps a recorded kernel log starts
// with: journalctl -o short-iso, short-iso-precise, and RFC 3339.
var stampLayouts = []string{"2006-01-02T15:04:05-0700", "2006-01-02T15:04:05.999999999-0700", time.RFC3339Nano}

// Stamp reads the wall-clock timestamp that starts a line, if any.
func Stamp(line []byte) (time.Time, bool) {
	if len(line) < 20 || line[4] != '-' || line[10] != 'T' {
		return time.Time{}, false
	}
	s := string(line[:min(len(line), 40)])
	if i := strings.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	for _, l := range stampLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// Short names a finding in a few words: "Xid 79 on GPU 0000:3b:00".
func (f *Finding) Short() string {
	name := f.ErrorCode
	if name == "" {
		name = f.ID
	}
	if f.GPU != "" {
		name += " on GPU " + f.GPU
	}
	return name
}
