// Package diagnose turns scan hits into a report a person can act on: hits
// are grouped per entry, a generic entry that only matched where a more
// specific one did is folded into it, and the diagnoses are ordered with the
// root failure first, using the knowledge base's transition graph and the
// order in which errors first appeared.
package diagnose

import (
	"cmp"
	"io"
	"regexp/syntax"
	"slices"
	"unicode/utf8"

	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/scan"
)

// Report is the result of one diagnosis over one or more inputs.
type Report struct {
	Diagnoses []*Diagnosis `json:"diagnoses"`
	Stats     Stats        `json:"stats"`
}

// Stats says how much was read and against how many entries.
type Stats struct {
	Bytes   int64 `json:"bytes"`
	Lines   int   `json:"lines"`
	Entries int   `json:"entries"`
	Files   int   `json:"files"`
}

// Diagnosis is one known error found in the input, with what the knowledge
// base says about it.
type Diagnosis struct {
	ID               string                `json:"id"`
	Signature        string                `json:"signature"`
	SignatureZh      string                `json:"signature_zh,omitempty"`
	Domain           string                `json:"domain"`
	Category         string                `json:"category"`
	ErrorCode        string                `json:"error_code"`
	Root             bool                  `json:"root"`
	CausedBy         []string              `json:"caused_by,omitempty"`
	Count            int                   `json:"count"`
	File             string                `json:"file,omitempty"`
	FirstLine        int                   `json:"first_line"`
	LastLine         int                   `json:"last_line"`
	Evidence         []Evidence            `json:"evidence"`
	Facts            map[string]facts.Fact `json:"facts"`
	Subsumes         []string              `json:"subsumes,omitempty"`
	RootCause        string                `json:"root_cause"`
	RootCauseZh      string                `json:"root_cause_zh,omitempty"`
	RootCauseType    string                `json:"root_cause_type"`
	DeadEnds         []DeadEnd             `json:"dead_ends"`
	Workarounds      []Workaround          `json:"workarounds"`
	LeadsTo          []string              `json:"leads_to"`
	Versions         []kb.Version          `json:"versions"`
	VerificationTier string                `json:"verification_tier"`
	Confidence       float64               `json:"confidence"`
	FixSuccessRate   float64               `json:"fix_success_rate"`
	Resolvable       string                `json:"resolvable"`
	OfficialDocURL   string                `json:"official_doc_url,omitempty"`

	entry *kb.Entry
	order key
}

// Entry returns the knowledge-base entry behind the diagnosis.
func (d *Diagnosis) Entry() *kb.Entry { return d.entry }

// Evidence is one line that matched.
type Evidence struct {
	File string `json:"file,omitempty"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// DeadEnd is something not to waste time on. Index is its position in the
// entry, which outcome reports refer to.
type DeadEnd struct {
	Index     int      `json:"index"`
	Action    string   `json:"action"`
	WhyFails  string   `json:"why_fails"`
	FailRate  float64  `json:"fail_rate"`
	Condition string   `json:"condition,omitempty"`
	Sources   []string `json:"sources"`
	Zh        string   `json:"zh,omitempty"`
}

// Workaround is something to do now.
type Workaround struct {
	Index       int      `json:"index"`
	Action      string   `json:"action"`
	How         string   `json:"how"`
	SuccessRate float64  `json:"success_rate"`
	Condition   string   `json:"condition,omitempty"`
	Sources     []string `json:"sources"`
	Zh          string   `json:"zh,omitempty"`
}

// MaxEvidence is how many evidence lines a diagnosis keeps: the first ones
// and the last.
const MaxEvidence = 3

// key orders occurrences: by input file, then line.
type key struct{ file, line int }

func (a key) less(b key) bool {
	if a.file != b.file {
		return a.file < b.file
	}
	return a.line < b.line
}

type group struct {
	d    *Diagnosis
	last Evidence // the latest hit past the first MaxEvidence-1
}

// Collector accumulates hits from one or more inputs with memory bounded by
// the number of distinct entries hit, not by the number of hits.
type Collector struct {
	entries  []*kb.Entry
	spec     []int // minimum literal bytes each entry's regex requires
	groups   map[int]*group
	subsumed map[int]map[int]bool // entry -> entries that took its place on some line
	stats    Stats
	file     string // the current input's name ("" for a single input)
	fileIdx  int    // and its position

	pending []scan.Hit // hits of the current line
	pkey    key
}

// Read scans r with s and returns the diagnosis of that one input.
func Read(s *scan.Scanner, r io.Reader) (*Report, error) {
	c := NewCollector(s.Entries())
	st, err := s.Scan(r, c.Add)
	if err != nil {
		return nil, err
	}
	c.AddStats(st)
	return c.Report(), nil
}

// NewCollector prepares a collector for hits from a scanner built over
// entries (scan.Scanner.Entries()).
func NewCollector(entries []*kb.Entry) *Collector {
	c := &Collector{entries: entries, groups: map[int]*group{}, subsumed: map[int]map[int]bool{}}
	c.spec = make([]int, len(entries))
	for i, e := range entries {
		c.spec[i] = Specificity(e.Regex)
	}
	c.stats.Entries = len(entries)
	return c
}

// File starts a new input; hits added after it are attributed to name.
func (c *Collector) File(name string) {
	c.flush()
	if c.stats.Files > 0 {
		c.fileIdx++
	}
	c.file = name
	c.stats.Files++
}

// AddStats adds what a scan read.
func (c *Collector) AddStats(s scan.Stats) {
	c.stats.Bytes += s.Bytes
	c.stats.Lines += s.Lines
}

// Add records one hit of the current file.
func (c *Collector) Add(h scan.Hit) {
	k := key{c.fileIdx, h.Line}
	if len(c.pending) > 0 && k != c.pkey {
		c.flush()
	}
	c.pkey = k
	c.pending = append(c.pending, h)
}

// flush resolves the hits of one line: where the matches of several
// entries overlap, the most specific entry keeps the line and the others
// are folded into it. Matches elsewhere on the line stand on their own.
func (c *Collector) flush() {
	for i, h := range c.pending {
		winner := -1
		for j, o := range c.pending {
			if j != i && overlap(h, o) && c.moreSpecific(o, h) &&
				(winner < 0 || c.moreSpecific(o, c.pending[winner])) {
				winner = j
			}
		}
		if winner >= 0 {
			w := c.pending[winner].Entry
			if c.subsumed[h.Entry] == nil {
				c.subsumed[h.Entry] = map[int]bool{}
			}
			c.subsumed[h.Entry][w] = true
		}
		c.note(h, winner >= 0)
	}
	c.pending = c.pending[:0]
}

func overlap(a, b scan.Hit) bool {
	return a.Offset < b.Offset+int64(max(b.Len, 1)) && b.Offset < a.Offset+int64(max(a.Len, 1))
}

// moreSpecific: an entry whose regex demands more literal text is the more
// specific description of the line; ties go to the entry whose root cause
// is not marked generic, then to the lower id for determinism.
func (c *Collector) moreSpecific(a, b scan.Hit) bool {
	if c.spec[a.Entry] != c.spec[b.Entry] {
		return c.spec[a.Entry] > c.spec[b.Entry]
	}
	ga := c.entries[a.Entry].RootCauseType == "generic"
	gb := c.entries[b.Entry].RootCauseType == "generic"
	if ga != gb {
		return !ga
	}
	return a.ID < b.ID
}

// note counts a hit for its entry. A hit folded into a more specific
// entry's (subsumed) is only remembered in c.subsumed.
func (c *Collector) note(h scan.Hit, subsumed bool) {
	if subsumed {
		return
	}
	ev := Evidence{File: c.file, Line: h.Line, Text: h.Text}
	g := c.groups[h.Entry]
	if g == nil {
		d := newDiagnosis(c.entries[h.Entry])
		d.File, d.FirstLine, d.order = c.file, h.Line, c.pkey
		for name, v := range h.Captures {
			d.Facts[name] = facts.Parse(name, v)
		}
		g = &group{d: d}
		c.groups[h.Entry] = g
	}
	g.d.Count++
	g.d.LastLine = h.Line
	if len(g.d.Evidence) < MaxEvidence-1 {
		g.d.Evidence = append(g.d.Evidence, ev)
	} else {
		g.last = ev
	}
}

// Report builds the ordered report. Call it once, after the last Add.
func (c *Collector) Report() *Report {
	c.flush()
	ds := []*Diagnosis{} // never nil: JSON says [] when nothing is found
	idx := map[string]*Diagnosis{}
	for _, g := range c.groups {
		if g.last.Line != 0 {
			g.d.Evidence = append(g.d.Evidence, g.last)
			g.last = Evidence{}
		}
		ds = append(ds, g.d)
		idx[g.d.ID] = g.d
	}
	// An entry that only ever matched where a more specific one did is
	// folded into it.
	for loser, winners := range c.subsumed {
		if c.groups[loser] != nil {
			continue
		}
		id := c.entries[loser].ID
		for w := range winners {
			if wg := c.groups[w]; wg != nil && !slices.Contains(wg.d.Subsumes, id) {
				wg.d.Subsumes = append(wg.d.Subsumes, id)
			}
		}
	}
	for _, d := range ds {
		slices.Sort(d.Subsumes)
	}
	// A line that healthy runs print too (an entry tagged "warning") is
	// context for an error, never a finding on its own.
	if !slices.ContainsFunc(ds, func(d *Diagnosis) bool { return !d.entry.IsWarning() }) {
		ds = ds[:0]
	}
	order(ds, idx)
	return &Report{Diagnoses: ds, Stats: c.stats}
}

// order sorts diagnoses root first: an error the transition graph says
// leads to another comes before it; otherwise errors come before warnings
// and the one seen first comes first. Each diagnosis not caused by another present one is a root.
func order(ds []*Diagnosis, idx map[string]*Diagnosis) {
	preds := map[*Diagnosis][]*Diagnosis{}
	link := func(from, to *Diagnosis) {
		if from == nil || to == nil || from == to || slices.Contains(preds[to], from) {
			return
		}
		preds[to] = append(preds[to], from)
	}
	for _, d := range ds {
		for _, id := range d.entry.TransitionGraph.LeadsTo {
			link(d, idx[id])
		}
		for _, id := range d.entry.TransitionGraph.PrecededBy {
			link(idx[id], d)
		}
	}
	byFirst := func(a, b *Diagnosis) int {
		if wa, wb := a.entry.IsWarning(), b.entry.IsWarning(); wa != wb {
			if wb {
				return -1 // errors before warnings
			}
			return 1
		}
		if a.order != b.order {
			if a.order.less(b.order) {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.ID, b.ID)
	}
	slices.SortFunc(ds, byFirst)
	placed := map[*Diagnosis]bool{}
	out := make([]*Diagnosis, 0, len(ds))
	for len(out) < len(ds) {
		var next *Diagnosis
		for _, d := range ds { // first in input order whose causes are placed
			if placed[d] {
				continue
			}
			ready := true
			for _, p := range preds[d] {
				if !placed[p] {
					ready = false
					break
				}
			}
			if ready {
				next = d
				break
			}
		}
		if next == nil { // a cycle: break it at the earliest error
			for _, d := range ds {
				if !placed[d] {
					next = d
					break
				}
			}
		}
		placed[next] = true
		out = append(out, next)
	}
	for _, d := range out {
		d.Root = len(preds[d]) == 0
		d.CausedBy = nil
		for _, p := range preds[d] {
			d.CausedBy = append(d.CausedBy, p.ID)
		}
		slices.Sort(d.CausedBy)
	}
	copy(ds, out)
}

func newDiagnosis(e *kb.Entry) *Diagnosis {
	d := &Diagnosis{
		ID: e.ID, Signature: e.Signature, SignatureZh: e.SignatureZh, Domain: e.Domain,
		Category: e.Category, ErrorCode: e.ErrorCode, Facts: map[string]facts.Fact{},
		RootCause: e.RootCause, RootCauseZh: e.RootCauseZh, RootCauseType: e.RootCauseType,
		LeadsTo: nonNil(e.TransitionGraph.LeadsTo), Versions: e.Versions,
		VerificationTier: e.VerificationTier, Confidence: e.Confidence,
		FixSuccessRate: e.FixSuccessRate, Resolvable: e.Resolvable,
		OfficialDocURL: e.OfficialDocURL, Evidence: []Evidence{}, entry: e,
	}
	if d.Versions == nil {
		d.Versions = []kb.Version{}
	}
	d.DeadEnds, d.Workarounds = Items(e)
	// Most likely to waste time first; most likely to work first.
	slices.SortStableFunc(d.DeadEnds, func(a, b DeadEnd) int { return cmp.Compare(b.FailRate, a.FailRate) })
	slices.SortStableFunc(d.Workarounds, func(a, b Workaround) int { return cmp.Compare(b.SuccessRate, a.SuccessRate) })
	return d
}

// Items returns an entry's dead ends and workarounds in the entry's order,
// with their Chinese text and their index in the entry.
func Items(e *kb.Entry) ([]DeadEnd, []Workaround) {
	dead := make([]DeadEnd, len(e.DeadEnds))
	for i, x := range e.DeadEnds {
		dead[i] = DeadEnd{Index: i, Action: x.Action, WhyFails: x.WhyFails, FailRate: x.FailRate,
			Condition: x.Condition, Sources: nonNil(x.Sources), Zh: e.DeadEndZh(i)}
	}
	work := make([]Workaround, len(e.Workarounds))
	for i, x := range e.Workarounds {
		work[i] = Workaround{Index: i, Action: x.Action, How: x.How, SuccessRate: x.SuccessRate,
			Condition: x.Condition, Sources: nonNil(x.Sources), Zh: e.WorkaroundZh(i)}
	}
	return dead, work
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Specificity is the number of literal bytes any match of the regex must
// contain: alternatives count their shortest branch, optional parts count
// nothing. A regex that does not parse has specificity 0.
func Specificity(expr string) int {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 0
	}
	return minLiteral(re.Simplify())
}

func minLiteral(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			n += utf8.RuneLen(r)
		}
		return n
	case syntax.OpCapture, syntax.OpPlus:
		return minLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min == 0 {
			return 0
		}
		return re.Min * minLiteral(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n += minLiteral(s)
		}
		return n
	case syntax.OpAlternate:
		m := -1
		for _, s := range re.Sub {
			if v := minLiteral(s); m < 0 || v < m {
				m = v
			}
		}
		return max(m, 0)
	}
	return 0
}
