// Package diagnose turns scan hits into a report a person can act on.
//
// Hits are grouped per entry (10,000 repeats are one diagnosis with a
// count), and a generic entry that only matched where a more specific one
// did is folded into it. The report then reasons over what the log says:
// the environment it names (versions, GPUs) merged with what the caller
// knows, the arithmetic of an out-of-memory message, the conditions written
// on each dead end and workaround, the entry's version table against the
// installed versions, and the ranks of a distributed job. Diagnoses are
// ordered root first; each says why it stands where it stands (Why).
package diagnose

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/gpudx/gpudx/env"
	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/oom"
	"github.com/gpudx/gpudx/outcome"
	"github.com/gpudx/gpudx/scan"
)

// Report is the result of one diagnosis over one or more inputs.
type Report struct {
	Diagnoses   []*Diagnosis    `json:"diagnoses"`
	Environment env.Environment `json:"environment"`
	Ranks       *RankSummary    `json:"ranks,omitempty"`
	// Unrecognized is what looks like the failure when no entry matched
	// an error (see Unrecognized); absent otherwise.
	Unrecognized []Unrecognized `json:"unrecognized,omitempty"`
	// Groups lists the inputs by job when they are of more than one
	// (group.go says how inputs are grouped); diagnoses of different
	// groups are not linked. Absent for one input or one job.
	Groups [][]string `json:"groups,omitempty"`
	Stats  Stats      `json:"stats"`
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
	ID                  string                `json:"id"`
	Title               string                `json:"title"`
	TitleZh             string                `json:"title_zh,omitempty"`
	Signature           string                `json:"signature"`
	SignatureZh         string                `json:"signature_zh,omitempty"`
	Domain              string                `json:"domain"`
	Category            string                `json:"category"`
	ErrorCode           string                `json:"error_code"`
	Root                bool                  `json:"root"`
	CausedBy            []string              `json:"caused_by,omitempty"`
	Count               int                   `json:"count"`
	File                string                `json:"file,omitempty"`
	FirstLine           int                   `json:"first_line"`
	LastLine            int                   `json:"last_line"`
	LastFile            string                `json:"last_file,omitempty"`
	Files               []FileHits            `json:"files,omitempty"`
	FilesOmitted        int                   `json:"files_omitted,omitempty"`
	Ranks               []int                 `json:"ranks,omitempty"`
	Evidence            []Evidence            `json:"evidence"`
	Facts               map[string]facts.Fact `json:"facts"`
	Memory              *oom.Analysis         `json:"memory,omitempty"`
	VersionNotes        []VersionNote         `json:"version_notes,omitempty"`
	FixedInInstalled    bool                  `json:"fixed_in_installed,omitempty"`
	Why                 []string              `json:"why"`
	WhyZh               []string              `json:"why_zh"`
	Subsumes            []string              `json:"subsumes,omitempty"`
	RootCause           string                `json:"root_cause"`
	RootCauseZh         string                `json:"root_cause_zh,omitempty"`
	RootCauseType       string                `json:"root_cause_type"`
	DeadEnds            []DeadEnd             `json:"dead_ends"`
	Workarounds         []Workaround          `json:"workarounds"`
	LeadsTo             []string              `json:"leads_to"`
	Versions            []kb.Version          `json:"versions"`
	VerificationTier    string                `json:"verification_tier"`
	Confidence          float64               `json:"confidence"`
	FixSuccessRate      float64               `json:"fix_success_rate"`
	FixSuccessRateBasis kb.Basis              `json:"fix_success_rate_basis"`
	Resolvable          string                `json:"resolvable"`
	OfficialDocURL      string                `json:"official_doc_url,omitempty"`
	// Operator is what a node operator does about a driver or hardware
	// event (Xid entries); nil for application errors.
	Operator *kb.Operator `json:"operator,omitempty"`

	entry    *kb.Entry
	entryIdx int // the entry's index in the collector, which keys its group
	order    key
	when     stamp
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
	Index    int     `json:"index"`
	Item     int     `json:"item"` // Index+1: the number gpudx report and kb show use
	Action   string  `json:"action"`
	WhyFails string  `json:"why_fails"`
	FailRate float64 `json:"fail_rate"`
	// RateBasis says what FailRate rests on (RateReports: how many
	// reports, for kb.BasisReports).
	RateBasis   kb.Basis `json:"rate_basis"`
	RateReports int      `json:"rate_reports,omitempty"`
	Condition   string   `json:"condition,omitempty"`
	Sources     []string `json:"sources"`
	Zh          string   `json:"zh,omitempty"`
	Applicability
	// Observed is the fail rate blended with reported outcomes; set only
	// where an outcome store is in use.
	Observed *outcome.Rate `json:"observed,omitempty"`
}

// Applicability is an item's condition evaluated against the facts and
// the environment. Applies is false only when the condition is known to be
// false; ConditionStatus is "holds", "fails", "unknown", or empty for an
// item without a condition; Reason gives the values read.
type Applicability struct {
	Applies         bool   `json:"applies"`
	ConditionStatus string `json:"condition_status,omitempty"`
	Reason          string `json:"reason,omitempty"`
}

// Workaround is something to do now or, when Kind is kb.KindCheck, a
// step that finds out what is wrong ("to find out"), with no success rate.
type Workaround struct {
	Index  int    `json:"index"`
	Item   int    `json:"item"` // Index+1: the number gpudx report and kb show use
	Action string `json:"action"`
	How    string `json:"how"`
	// Kind is kb.KindFix or kb.KindCheck.
	Kind        string  `json:"kind"`
	SuccessRate float64 `json:"success_rate,omitempty"`
	// RateBasis says what SuccessRate rests on (RateReports: how many
	// reports, for kb.BasisReports); empty for a check.
	RateBasis   kb.Basis `json:"rate_basis,omitempty"`
	RateReports int      `json:"rate_reports,omitempty"`
	Condition   string   `json:"condition,omitempty"`
	Sources     []string `json:"sources"`
	Zh          string   `json:"zh,omitempty"`
	Applicability
	// Observed is the success rate blended with reported outcomes; set
	// only where an outcome store is in use.
	Observed *outcome.Rate `json:"observed,omitempty"`
}

// FileHits says how often a diagnosis was seen in one input.
type FileHits struct {
	File      string `json:"file"`
	Count     int    `json:"count"`
	FirstLine int    `json:"first_line"`
}

// MaxEvidence is how many evidence lines a diagnosis keeps: the first ones
// and the last.
const MaxEvidence = 3

const (
	maxMemoryLine = 8 << 10 // an OOM message is under 1 KiB; keep a margin
	maxFiles      = 1024    // per-file counts kept per diagnosis
)

// key orders occurrences: by input file, then line.
type key struct{ file, line int }

func (a key) less(b key) bool {
	if a.file != b.file {
		return a.file < b.file
	}
	return a.line < b.line
}

// What a repeat costs. A failing job prints the same line thousands or
// millions of times (every rank, every retry, every step), so the report
// is built to need little of each occurrence of an entry:
//
//   - of every occurrence: that it counts (Count; per input, Files), its
//     line (LastLine, LastFile), its rank (Ranks, up to maxRanks), and
//     whether a more specific entry took its line (Subsumes);
//   - of the first: its input, line and timestamp (the order of the
//     report), its captures (Facts) and its whole line with the
//     allocator summary before it (Memory, the out-of-memory arithmetic);
//   - of the first MaxEvidence-1 and the last: the evidence text;
//   - of the first on each rank: its position and timestamp (which rank
//     failed first, RankSummary).
//
// So the figures of a later occurrence change no conclusion: a repeat
// naming another GPU or requesting another size adds to the count, and
// the facts and arithmetic stay those of the first occurrence, the one
// printed first; another rank is read from every occurrence. The work per
// repeat is therefore: the scan answers its regex from the line's shape
// (package scan, repeat.go); a line the Gate does not select comes with
// HitsLine and is not read for the environment, ranks or the allocator;
// the rank is read from torchrun's prefix without a regex; the timestamp
// only where a first sighting may keep it (needWhen); the evidence text
// is only kept as the latest, and the scan leaves out the captures of an
// entry whose first hit was noted (Settled). What is left is the Hit's
// evidence text, a few map lookups, and on a line where entries compete,
// their specificity (hitSpecificity).

type group struct {
	d        *Diagnosis
	last     Evidence // the latest hit past the first MaxEvidence-1
	full     string   // the whole first line, for out-of-memory arithmetic
	ranks    map[int]rankHit
	files    []FileHits
	seenFile bool
	lastFile int  // index of the input of the latest hit
	counting bool // files[len-1] counts that input (false past maxFiles)
}

// rankHit is where a rank first showed a diagnosis.
type rankHit struct {
	at   key
	when stamp
}

// Collector accumulates hits from one or more inputs with memory bounded by
// the number of distinct entries hit, not by the number of hits.
type Collector struct {
	entries  []*kb.Entry
	spec     []*regexSpec // each entry's regex: literal bytes it requires, by branch
	groups   map[int]*group
	subsumed map[int]map[int]bool // entry -> entries that took its place on some line
	stats    Stats
	onCount  func(scan.Hit)
	file     string // the current input's name ("" for a single input)
	fileIdx  int    // and its position
	memory   []bool // entries whose message is an out-of-memory report

	det    *env.Detector
	given  env.Environment // from the caller (--env files)
	ranks  *rankTracker
	fails  failTracker // lines that look like a failure, for Unrecognized
	grp    grouper     // what each input says about its job
	cur    []byte      // the line being scanned, valid during Line and Hit
	curN   int
	infoAt key // the line whose rank and stamp are in rank and when
	// The BFC allocator's latest "Limit:" and "InUse:" summary lines, and
	// the whole first line of each out-of-memory entry with them, captured
	// when the hit arrives (the line buffer is gone by the time hits of a
	// line are resolved).
	bfcLimit, bfcInUse string
	fulls              map[int]string
	rank               int
	when               stamp
	whenRead           bool          // when is read from the line (see needWhen)
	plain              bool          // take none of the shortcuts for repeats (the tests' reference)
	settled            []atomic.Bool // per entry: it has a group, and its facts

	pending     []scan.Hit // hits of the current line
	pendingSpec []int      // their specificity, while flush resolves them
	pkey        key
}

// gate is the lines a Collector reads besides those with hits: the ones
// that can state the environment (env.GateLiterals, env.GateStart), a
// rank, or an allocator summary. The Collector asks for the lines after
// them itself while it reads a block (Collector.Line returns true).
func gate() scan.Gate {
	lits := append(append(append(env.GateLiterals(), rankLiterals...), failLiterals...), groupLiterals...)
	return scan.Gate{Literals: lits, Start: func(line []byte) bool {
		return env.GateStart(line) || bfcStart(line)
	}}
}

// bfcStart: the allocator summary lines reBFCSummary reads start, after
// white space, with "Limit:" or "InUse:". A test of the start, not two
// literals: short literals slow the search down (scan.Gate).
func bfcStart(line []byte) bool {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\f' || line[i] == '\r') {
		i++
	}
	if len(line)-i < 6 || (line[i] != 'L' && line[i] != 'I') {
		return false
	}
	t := line[i : i+6]
	return string(t) == "Limit:" || string(t) == "InUse:"
}

// Plan returns s compiled with gate, once per scanner.
func Plan(s *scan.Scanner) *scan.Plan { return s.CachedPlan("diagnose.Gate", gate) }

// NewCollector prepares a collector for hits from a scanner built over
// entries (scan.Scanner.Entries()).
func NewCollector(entries []*kb.Entry) *Collector {
	c := &Collector{entries: entries, groups: map[int]*group{}, subsumed: map[int]map[int]bool{},
		det: env.NewDetector(), ranks: newRankTracker(), fulls: map[int]string{}}
	c.spec = make([]*regexSpec, len(entries))
	c.settled = make([]atomic.Bool, len(entries))
	c.memory = make([]bool, len(entries))
	for i, e := range entries {
		c.spec[i] = specOf(e.Regex)
		c.memory[i] = e.IsMemory()
	}
	c.stats.Entries = len(entries)
	return c
}

// SetEnvironment gives what the caller knows of the environment (from
// --env files or a live collection). What the log itself says wins: it
// was printed by the run that failed.
func (c *Collector) SetEnvironment(e env.Environment) { c.given = e }

// File starts a new input; hits added after it are attributed to name.
func (c *Collector) File(name string) {
	c.flush()
	if c.stats.Files > 0 {
		c.fileIdx++
	}
	c.file = name
	c.stats.Files++
	c.cur, c.curN = nil, 0
	c.bfcLimit, c.bfcInUse = "", ""
	c.ranks.newFile(name)
	c.fails.newFile(name)
	c.grp.newFile(name)
}

// SetTogether puts every input in one group: their diagnoses may be linked
// whatever the inputs say about their jobs.
func (c *Collector) SetTogether(together bool) { c.grp.together = together }

// Line shows the collector a line before its hits (it is a scan.Visitor;
// gate says which lines it needs): it reads the environment and rank
// facts. It returns true while it reads a block and needs the next line.
func (c *Collector) Line(n int, text []byte) bool {
	c.cur, c.curN = text, n
	c.det.LineAt(text, c.file, n)
	c.ranks.line(text)
	c.fails.line(n, text)
	c.grp.line(text)
	if bytes.Contains(text, []byte("Limit:")) || bytes.Contains(text, []byte("InUse:")) {
		if m := reBFCSummary.FindSubmatch(text); m != nil {
			if string(m[1]) == "Limit" {
				c.bfcLimit = string(m[0])
			} else {
				c.bfcInUse = string(m[0])
			}
		}
	}
	return c.det.Pending() || c.ranks.pending() || c.fails.pending()
}

// HitsLine shows the collector a line that only its hits bring
// (scan.HitsVisitor): the Gate did not select it, so it states nothing of
// the environment, ranks or allocator (the Gate's contract), and only its
// hits are read. A block being read still gets the whole line.
func (c *Collector) HitsLine(n int, text []byte) bool {
	if c.det.Pending() || c.ranks.pending() {
		return c.Line(n, text)
	}
	c.cur, c.curN = text, n
	return false
}

// Settled reports that the collector has the facts of entry e, those of
// its first hit (scan.HitsVisitor): the scan may leave the captures of
// later hits out. Safe for concurrent use.
func (c *Collector) Settled(e int) bool {
	return !c.plain && e >= 0 && e < len(c.settled) && c.settled[e].Load()
}

// OnCount has fn called with each hit as it is counted for its entry (a
// hit folded into a more specific entry's is not), so that a caller
// following a stream can count occurrences line by line.
func (c *Collector) OnCount(fn func(scan.Hit)) { c.onCount = fn }

// reBFCSummary is a line of the summary TensorFlow's and XLA's BFC
// allocator print before an out-of-memory error: the name alone, then the
// byte count ("Limit:                 10990990131").
var reBFCSummary = regexp.MustCompile(`^\s*(Limit|InUse):\s+[0-9]{1,20}\s*$`)

// AddStats adds what a scan read.
func (c *Collector) AddStats(s scan.Stats) {
	c.stats.Bytes += s.Bytes
	c.stats.Lines += s.Lines
	c.fails.endFile(s.Lines)
}

// Hit records one hit of the current file (scan.Visitor).
func (c *Collector) Hit(h scan.Hit) {
	k := key{c.fileIdx, h.Line}
	if len(c.pending) > 0 && k != c.pkey {
		c.flush()
	}
	if c.infoAt != k || c.infoAt.line == 0 {
		// Without Line (plain Scan) only the file's rank is known.
		c.rank, c.when, c.whenRead = c.ranks.fileRank, stamp{}, true
		if c.curN == h.Line && c.cur != nil {
			c.rank, c.whenRead = c.ranks.rankOf(c.cur, c.plain), false
		}
		c.infoAt = k
	}
	if !c.whenRead && (c.plain || c.needWhen(h.Entry)) {
		c.when, c.whenRead = parseStamp(c.cur), true
	}
	c.pkey = k
	c.pending = append(c.pending, h)
	if c.memory[h.Entry] && c.groups[h.Entry] == nil && c.fulls[h.Entry] == "" {
		full := h.Text
		if c.curN == h.Line && c.cur != nil {
			full = string(c.cur[:min(len(c.cur), maxMemoryLine)])
		}
		// The allocator's summary, printed before the error.
		for _, l := range []string{c.bfcLimit, c.bfcInUse} {
			if l != "" {
				full = l + "\n" + full
			}
		}
		c.fulls[h.Entry] = full
	}
}

// needWhen: note may keep the line's timestamp for a hit of entry e, as
// the first sighting of the entry or of the line's rank for it. Other
// repeats do without reading it (two regexes over the line's head). It is
// asked while the line is at hand; what note keeps is decided later, with
// the line's other hits, but it only ever keeps less: groups and ranks
// are only added.
func (c *Collector) needWhen(e int) bool {
	g := c.groups[e]
	if g == nil {
		return true
	}
	if c.rank < 0 || len(g.ranks) >= maxRanks {
		return false
	}
	_, seen := g.ranks[c.rank]
	return !seen
}

// flush resolves the hits of one line: where the matches of several
// entries overlap, the most specific entry keeps the line and the others
// are folded into it. Matches elsewhere on the line stand on their own.
func (c *Collector) flush() {
	// A hit's specificity depends on its text (which branch matched), so
	// it is worked out once per hit, and only when there is a rival.
	c.pendingSpec = c.pendingSpec[:0]
	if len(c.pending) > 1 {
		for _, h := range c.pending {
			c.pendingSpec = append(c.pendingSpec, c.hitSpecificity(h))
		}
	}
	for i, h := range c.pending {
		winner := -1
		for j, o := range c.pending {
			if j != i && overlap(h, o) && c.moreSpecific(j, i) &&
				(winner < 0 || c.moreSpecific(j, winner)) {
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

// moreSpecific: an entry whose root cause is marked generic (a wrapper
// such as PyTorch's "Unexpected error from cudaGetDeviceCount()") yields
// to one that is not; otherwise the entry whose regex demands more literal
// text is the more specific description of the line, and the lower id
// breaks ties for determinism. Where a regex is an alternation, the branch
// that matched is what counts: a narrow branch added to a broad entry must
// not lose to its broad sibling.
// a and b index c.pending and c.pendingSpec.
func (c *Collector) moreSpecific(a, b int) bool {
	ha, hb := c.pending[a], c.pending[b]
	ga := c.entries[ha.Entry].RootCauseType == "generic"
	gb := c.entries[hb.Entry].RootCauseType == "generic"
	if ga != gb {
		return !ga
	}
	if sa, sb := c.pendingSpec[a], c.pendingSpec[b]; sa != sb {
		return sa > sb
	}
	return ha.ID < hb.ID
}

// note counts a hit for its entry. A hit folded into a more specific
// entry's (subsumed) is only remembered in c.subsumed.
func (c *Collector) note(h scan.Hit, subsumed bool) {
	if subsumed {
		return
	}
	if c.onCount != nil {
		c.onCount(h)
	}
	ev := Evidence{File: c.file, Line: h.Line, Text: h.Text}
	g := c.groups[h.Entry]
	if g == nil {
		d := newDiagnosis(c.entries[h.Entry])
		d.File, d.FirstLine, d.order, d.when, d.entryIdx = c.file, h.Line, c.pkey, c.when, h.Entry
		for name, v := range h.Captures {
			d.Facts[name] = facts.Parse(name, v)
		}
		g = &group{d: d, ranks: map[int]rankHit{}, full: c.fulls[h.Entry]}
		c.groups[h.Entry] = g
		c.settled[h.Entry].Store(true)
	}
	g.d.Count++
	g.d.LastLine = h.Line
	g.d.LastFile = ""
	if c.file != g.d.File {
		g.d.LastFile = c.file
	}
	if c.rank >= 0 && len(g.ranks) < maxRanks {
		if _, ok := g.ranks[c.rank]; !ok {
			g.ranks[c.rank] = rankHit{c.pkey, c.when}
		}
	}
	if !g.seenFile || g.lastFile != c.fileIdx { // the first hit in this input
		g.seenFile, g.lastFile, g.counting = true, c.fileIdx, len(g.files) < maxFiles
		if g.counting {
			g.files = append(g.files, FileHits{File: c.file, FirstLine: h.Line})
		} else {
			g.d.FilesOmitted++
		}
	}
	if g.counting {
		g.files[len(g.files)-1].Count++
	}
	if len(g.d.Evidence) < MaxEvidence-1 {
		g.d.Evidence = append(g.d.Evidence, ev)
	} else {
		g.last = ev
	}
}

// Report builds the ordered report. Call it once, after the last Hit.
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
	environment := c.det.Env()
	environment.Merge(c.given)
	values := environment.Values()
	for _, d := range ds {
		c.reason(d, c.groups[d.entryIdx], environment, values)
	}
	var node []string
	for _, g := range c.groups {
		if g.d.entry.Domain == "driver" {
			for _, fh := range g.files {
				node = append(node, fh.File)
			}
		}
	}
	c.grp.markNode(node)
	group, groups := c.grp.groups(c.ranks.hostOf)
	order(ds, idx, c.ranks.hostOf, group)
	rep := &Report{Diagnoses: ds, Environment: environment, Stats: c.stats, Groups: groups}
	rep.Ranks = c.rankSummary(ds)
	if len(ds) == 0 {
		// No entry matched an error: say what looks like the failure.
		hit := func(file string, line int) bool {
			for _, g := range c.groups {
				for _, ev := range g.d.Evidence {
					if ev.File == file && ev.Line == line {
						return true
					}
				}
			}
			return false
		}
		rep.Unrecognized = c.fails.report(c.entries, hit)
	}
	return rep
}

// reason fills what a diagnosis concludes from its own hits and the
// environment: files and ranks, memory arithmetic, conditions, versions.
// values is environment.Values(), computed once per report.
func (c *Collector) reason(d *Diagnosis, g *group, environment env.Environment, values map[string]any) {
	if c.stats.Files > 1 {
		d.Files = g.files
	}
	for r := range g.ranks {
		d.Ranks = append(d.Ranks, r)
	}
	slices.Sort(d.Ranks)
	if g.full != "" {
		d.Memory = oom.Analyze(g.full, environment.Torch)
		if d.Memory != nil {
			for name, v := range d.Memory.Facts() {
				if _, ok := d.Facts[name]; !ok {
					d.Facts[name] = facts.FromNumber(name, float64(v))
				}
			}
		}
	}
	applyConditions(d, values)
	d.VersionNotes, d.FixedInInstalled = versionNotes(d.entry, environment)
}

func newDiagnosis(e *kb.Entry) *Diagnosis {
	d := &Diagnosis{
		ID: e.ID, Title: e.Title, TitleZh: e.TitleZh, Signature: e.Signature, SignatureZh: e.SignatureZh, Domain: e.Domain,
		Category: e.Category, ErrorCode: e.ErrorCode, Facts: map[string]facts.Fact{},
		RootCause: e.RootCause, RootCauseZh: e.RootCauseZh, RootCauseType: e.RootCauseType,
		LeadsTo: nonNil(e.TransitionGraph.LeadsTo), Versions: e.Versions,
		VerificationTier: e.VerificationTier, Confidence: e.Confidence,
		FixSuccessRate: e.FixSuccessRate, FixSuccessRateBasis: e.FixRate().Basis, Resolvable: e.Resolvable,
		OfficialDocURL: e.OfficialDocURL, Operator: e.Operator, Evidence: []Evidence{}, Why: []string{}, WhyZh: []string{}, entry: e,
	}
	if d.Versions == nil {
		d.Versions = []kb.Version{}
	}
	d.DeadEnds, d.Workarounds = Items(e)
	return d
}

// Items returns an entry's dead ends and workarounds in the entry's order,
// with their Chinese text and their index in the entry.
func Items(e *kb.Entry) ([]DeadEnd, []Workaround) {
	dead := make([]DeadEnd, len(e.DeadEnds))
	for i, x := range e.DeadEnds {
		r := x.Rate()
		dead[i] = DeadEnd{Index: i, Item: i + 1, Action: x.Action, WhyFails: x.WhyFails, FailRate: x.FailRate,
			RateBasis: r.Basis, RateReports: r.Reports,
			Condition: x.Condition, Sources: nonNil(x.Sources), Zh: e.DeadEndZh(i),
			Applicability: Applicability{Applies: true}}
	}
	work := make([]Workaround, len(e.Workarounds))
	for i, x := range e.Workarounds {
		w := Workaround{Index: i, Item: i + 1, Action: x.Action, How: x.How, Kind: kb.KindFix,
			Condition: x.Condition, Sources: nonNil(x.Sources), Zh: e.WorkaroundZh(i),
			Applicability: Applicability{Applies: true}}
		if x.IsCheck() {
			w.Kind = kb.KindCheck
		} else {
			r := x.Rate()
			w.SuccessRate, w.RateBasis, w.RateReports = r.Value, r.Basis, r.Reports
		}
		work[i] = w
	}
	return dead, work
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// hitSpecificity is the specificity of the most specific top-level branch
// of the hit's regex that matches the hit's text (the whole regex's when it
// has one branch, or when no branch matches the evidence as cut).
func (c *Collector) hitSpecificity(h scan.Hit) int {
	rs := c.spec[h.Entry]
	n := rs.whole
	for _, br := range rs.branches() {
		if br.spec > n && br.re.MatchString(h.Text) {
			n = br.spec
		}
	}
	return n
}

// regexSpec is what ranking needs of one regex: its specificity, and its
// top-level branches with theirs, compiled on first use (only lines where
// entries compete need them).
type regexSpec struct {
	expr  string
	whole int
	once  sync.Once
	bs    []branch // nil for a single branch
}

type branch struct {
	re   *regexp.Regexp
	spec int
}

// specCache holds a *regexSpec by regex: a server builds a collector per
// request, and parsing every entry's regex again was most of its CPU.
var specCache sync.Map

func specOf(expr string) *regexSpec {
	if v, ok := specCache.Load(expr); ok {
		return v.(*regexSpec)
	}
	v, _ := specCache.LoadOrStore(expr, &regexSpec{expr: expr, whole: specificity(expr)})
	return v.(*regexSpec)
}

func (rs *regexSpec) branches() []branch {
	rs.once.Do(func() {
		parts := topLevelBranches(rs.expr)
		if len(parts) < 2 {
			return
		}
		for _, p := range parts {
			re, err := regexp.Compile(p)
			if err != nil {
				rs.bs = nil
				return
			}
			rs.bs = append(rs.bs, branch{re, specificity(p)})
		}
	})
	return rs.bs
}

// topLevelBranches splits a regex at its top-level '|': those outside any
// group, character class or escape. The parser cannot be asked for them,
// since it factors common prefixes out of alternations.
func topLevelBranches(expr string) []string {
	var parts []string
	depth, start, inClass := 0, 0, false
	for i := 0; i < len(expr); i++ {
		switch ch := expr[i]; {
		case ch == '\\':
			i++
		case inClass:
			if ch == ']' {
				inClass = false
			}
		case ch == '[':
			inClass = true
			// A ']' right after '[' or '[^' is a literal member.
			if i+1 < len(expr) && expr[i+1] == '^' {
				i++
			}
			if i+1 < len(expr) && expr[i+1] == ']' {
				i++
			}
		case ch == '(':
			depth++
		case ch == ')':
			depth--
		case ch == '|' && depth == 0:
			parts = append(parts, expr[start:i])
			start = i + 1
		}
	}
	return append(parts, expr[start:])
}

// specificity is the number of literal bytes any match of the regex must
// contain: alternatives count their shortest branch, optional parts count
// nothing. A regex that does not parse has specificity 0.
func specificity(expr string) int {
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
