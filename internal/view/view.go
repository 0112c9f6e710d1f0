// Package view turns a diagnosis report into what a person reads, in one
// language: the headings, the user's own lines, the environment, the
// figures, the ranks and the advice in display order with their numbers.
// Every face reads it (terminal text and markdown in internal/render, the
// web page's templates, the MCP tools' text), so that a figure or a word is
// worked out once and reads the same everywhere. It computes no diagnosis:
// every figure comes from the report.
package view

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/env"
	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/outcome"
)

// Report is a diagnosis report resolved into one language.
type Report struct {
	Lang      string
	None      bool     // no known error was found
	Empty     bool     // the input held nothing: no byte was read
	Count     int      // diagnoses found
	Read      string   // how much was read and checked
	Env       string   // the environment in one line, "" when nothing is known
	Ranks     string   // which rank failed first and why, "" when not a multi-rank log
	Groups    []string // the inputs of each job, when they are of more than one
	Diagnoses []Diagnosis
	// Unrecognized is what looks like the failure when no entry matched.
	Unrecognized []Unrecognized
}

// Unrecognized is a line that looks like the failure, not in the
// knowledge base, with the entries nearest to it.
type Unrecognized struct {
	At      string // "train.log: line 812" or "line 812"
	Text    string
	Nearest []string
	Sure    string // how close the nearest entry is, in words
}

// Diagnosis is one known error as it is shown.
type Diagnosis struct {
	N         int    // position in the report, from 1
	Group     int    // index in Report.Groups of the job it was first seen in; -1 with one job
	InGroups  []int  // every job it was seen in (several when the same error stands in unrelated jobs)
	Anchor    string // "d1", "d2", …: its id on a page
	ID        string
	Kind      string // "root", "follow" (caused by another diagnosis) or "also"
	CausedBy  []string
	Lines     string // "line 21", "line 21–30", localised
	File      string
	Count     int
	Ranks     string // the ranks whose lines matched, listed
	Title     string // names the error, without figures
	Signature string // the entry's sample message (kb show, not a diagnosis)
	RootCause string
	Evidence  []diagnose.Evidence // the user's own lines
	Facts     []Fact              // figures read from the message, by name
	Operator  string              // what a node operator does, in a line
	OpNext    string              // and the next step
	SeenIn    []string            // per input, "file:line ×n", when seen in several
	// Elsewhere is, per other job it was seen in (index in Groups), where:
	// "file:line ×n" per input. With several jobs, Count, Lines,
	// Evidence and SeenIn are those of its own job (Group).
	Elsewhere map[int][]string
	Memory    *Memory
	Notes     []string // version notes
	Versions  []kb.Version
	DeadEnds  []Item
	Checks    []Item // diagnostic steps: to find out, not fixes
	Work      []Item // fixes: what to do now
	LeadsTo   []string
	Subsumes  []string
	Why       []string // why it is ranked where it is
	Tier      string
	DocURL    string
}

// Fact is a name and the text it was read from.
type Fact struct{ Name, Text string }

// Memory is the out-of-memory arithmetic: verdict, figures and advice.
type Memory struct {
	Verdict string
	Reason  string
	Figures []Fact // localised names, formatted sizes
	Self    string // which listed process is this one, and why; "" when none is
	Advice  []string
}

// Item is a dead end or a workaround.
type Item struct {
	N            int // the number shown: the position in the list, from 1
	Index        int // position in the entry, from 0; `gpudx report` takes Index+1
	Text         string
	Why          string // why a dead end fails; "" where Text already says it
	How          string
	Rate         string // "fails ~85%, estimate", "works ≈65%, estimate + 3 reports"; "" for a check
	Check        bool   // a diagnostic step, to find out, with no rate
	ObservedLong string // the blended rate with its counts, "" with no store
	Cond         string // the condition as written
	CondState    string // how it came out here, in words
	Status       string // "holds", "fails", "unknown", or "" without a condition
	Applies      bool
	Reason       string // the values the condition read
	Sources      []string
}

// Build resolves r into language lang ("en" or "zh"; anything else is
// English).
func Build(r *diagnose.Report, lang string) *Report {
	if !ValidLang(lang) {
		lang = "en"
	}
	v := &Report{
		Lang:  lang,
		None:  len(r.Diagnoses) == 0,
		Empty: r.Stats.Bytes == 0,
		Count: len(r.Diagnoses),
		Read:  T(lang, readKey(r.Stats.Lines), Group(int64(r.Stats.Lines)), Group(r.Stats.Bytes), r.Stats.Entries),
		Env:   EnvLine(r.Environment, lang),
		Ranks: RanksLine(r.Ranks, lang),
	}
	if len(r.Groups) > 1 {
		for _, g := range r.Groups {
			v.Groups = append(v.Groups, strings.Join(g, ", "))
		}
	}
	groupOf := map[string]int{}
	if len(r.Groups) > 1 {
		for i, g := range r.Groups {
			for _, f := range g {
				groupOf[f] = i
			}
		}
	}
	for i, d := range r.Diagnoses {
		x := diagnosis(d, i+1, lang)
		x.Group = -1
		if g, ok := groupOf[d.File]; ok {
			x.Group = g
			x.InGroups = []int{g}
		}
		for _, f := range d.Files {
			if g, ok := groupOf[f.File]; ok && !slices.Contains(x.InGroups, g) {
				x.InGroups = append(x.InGroups, g)
			}
		}
		if len(x.InGroups) > 1 {
			ownJob(&x, d, r.Groups, lang)
		}
		v.Diagnoses = append(v.Diagnoses, x)
	}
	for _, u := range r.Unrecognized {
		x := Unrecognized{At: T(lang, "lines", strconv.Itoa(u.Line)), Text: u.Text, Sure: T(lang, "sure_"+u.Sure)}
		if u.File != "" {
			x.At = u.File + T(lang, "colon") + x.At
		}
		for _, n := range u.Nearest {
			x.Nearest = append(x.Nearest, n.ID)
		}
		v.Unrecognized = append(v.Unrecognized, x)
	}
	return v
}

func diagnosis(d *diagnose.Diagnosis, n int, l string) Diagnosis {
	v := Diagnosis{
		N: n, Anchor: "d" + strconv.Itoa(n), ID: d.ID, CausedBy: d.CausedBy,
		Lines: T(l, "lines", lineSpan(d)), File: d.File, Count: d.Count,
		Title:     Pick(l, d.Title, d.TitleZh),
		Signature: Pick(l, d.Signature, d.SignatureZh),
		RootCause: Pick(l, d.RootCause, d.RootCauseZh),
		Evidence:  d.Evidence,
		Facts:     FactList(d.Facts),
		Memory:    memory(d, l),
		Versions:  d.Versions,
		LeadsTo:   d.LeadsTo,
		Subsumes:  d.Subsumes,
		Tier:      T(l, "tier", d.VerificationTier, d.Confidence),
		DocURL:    d.OfficialDocURL,
		Why:       d.Why,
	}
	if v.Title == "" { // an entry of the user's own without a title
		v.Title = v.Signature
	}
	if len(d.Ranks) > 0 {
		v.Ranks = IntList(d.Ranks)
	}
	switch {
	case d.Root:
		v.Kind = "root"
	case len(d.CausedBy) > 0:
		v.Kind = "follow"
	default:
		v.Kind = "also"
	}
	if l == "zh" && len(d.WhyZh) == len(d.Why) {
		v.Why = d.WhyZh
	}
	v.Operator, v.OpNext = OperatorLine(d.Operator, l)
	if len(d.Files) > 1 {
		for _, f := range d.Files {
			v.SeenIn = append(v.SeenIn, fmt.Sprintf("%s:%d ×%d", f.File, f.FirstLine, f.Count))
		}
	}
	for _, n := range d.VersionNotes {
		v.Notes = append(v.Notes, Pick(l, n.Text, n.Zh))
	}
	// Items are numbered 1..n in the order shown; Index keeps the entry's
	// own position, which outcome reports name.
	for i, x := range d.DeadEnds {
		it := DeadEnd(x, l)
		it.N = i + 1
		v.DeadEnds = append(v.DeadEnds, it)
	}
	for _, x := range d.Workarounds {
		it := Workaround(x, l)
		if it.Check {
			it.N = len(v.Checks) + 1
			v.Checks = append(v.Checks, it)
		} else {
			it.N = len(v.Work) + 1
			v.Work = append(v.Work, it)
		}
	}
	return v
}

// DeadEnd resolves one dead end.
func DeadEnd(x diagnose.DeadEnd, l string) Item {
	it := Item{N: x.Index + 1, Index: x.Index, Text: x.Action, Why: x.WhyFails,
		Rate: T(l, "fails", x.RateLabel(l)), Applies: x.Applies, Status: x.ConditionStatus, Reason: x.Reason, Sources: x.Sources}
	if l == "zh" && x.Zh != "" {
		it.Text, it.Why = x.Zh, "" // the Chinese text says why in the same sentence
	}
	it.Cond, it.CondState = Condition(x.Condition, x.Applicability, l)
	it.ObservedLong = observed(x.Observed, l)
	return it
}

// Workaround resolves one workaround.
func Workaround(x diagnose.Workaround, l string) Item {
	it := Item{N: x.Index + 1, Index: x.Index, Text: Pick(l, x.Action, x.Zh), How: x.How,
		Rate: T(l, "works", x.RateLabel(l)), Check: x.IsCheck(), Applies: x.Applies, Status: x.ConditionStatus, Reason: x.Reason, Sources: x.Sources}
	if it.Check {
		it.Rate = ""
	} else {
		it.ObservedLong = observed(x.Observed, l)
	}
	it.Cond, it.CondState = Condition(x.Condition, x.Applicability, l)
	return it
}

// Where says where a diagnosis was seen: file, lines, count and ranks,
// joined by sep.
func (d *Diagnosis) Where(l, sep string) string {
	parts := []string{d.Lines}
	if d.File != "" {
		parts[0] = d.File + T(l, "colon") + parts[0]
	}
	if d.Count > 1 {
		parts = append(parts, T(l, "times", d.Count))
	}
	if d.Ranks != "" {
		parts = append(parts, T(l, "onranks", d.Ranks))
	}
	return strings.Join(parts, sep)
}

// ownJob narrows x, a diagnosis seen in several unrelated jobs, to the
// job it is described under: the count, lines and evidence of that job's
// inputs, so that no figure of another job is shown as its own. Where it
// was seen in the other jobs goes to Elsewhere. A node log listed with
// every job counts for each.
func ownJob(x *Diagnosis, d *diagnose.Diagnosis, groups [][]string, l string) {
	in := func(file string, g int) bool { return g >= 0 && g < len(groups) && slices.Contains(groups[g], file) }
	count, seen := 0, []string(nil)
	x.Elsewhere = map[int][]string{}
	for _, f := range d.Files {
		at := fmt.Sprintf("%s:%d ×%d", f.File, f.FirstLine, f.Count)
		if in(f.File, x.Group) {
			count += f.Count
			seen = append(seen, at)
		}
		for g := range groups {
			if g != x.Group && in(f.File, g) {
				x.Elsewhere[g] = append(x.Elsewhere[g], at)
			}
		}
	}
	if count == 0 {
		return // Files was cut short (too many inputs): keep the totals
	}
	x.Count = count
	x.SeenIn = nil
	if len(seen) > 1 {
		x.SeenIn = seen
	}
	var ev []diagnose.Evidence
	for _, e := range d.Evidence {
		if e.File == "" || in(e.File, x.Group) {
			ev = append(ev, e)
		}
	}
	x.Evidence = ev
	if d.LastFile != "" && !in(d.LastFile, x.Group) {
		// The last hit was in another job, and this job's last is not
		// kept (evidence keeps the first lines and the very last): say
		// where it started, with the count.
		x.Lines = T(l, "lines", strconv.Itoa(d.FirstLine))
	}
}

func lineSpan(d *diagnose.Diagnosis) string {
	if d.LastFile != "" { // first and last in different inputs
		return fmt.Sprintf("%d … %s:%d", d.FirstLine, d.LastFile, d.LastLine)
	}
	if d.LastLine != d.FirstLine {
		return fmt.Sprintf("%d–%d", d.FirstLine, d.LastLine)
	}
	return strconv.Itoa(d.FirstLine)
}

// observed says a blended rate with its counts; "" when no outcome store
// is in use (r is nil).
func observed(r *outcome.Rate, l string) string {
	if r == nil {
		return ""
	}
	return ObservedText(*r, l)
}

// ObservedText says a blended rate, the reports behind it and the weight
// of the curated rate.
func ObservedText(r outcome.Rate, l string) string {
	switch r.Reports {
	case 0:
		return T(l, "obs_none")
	case 1:
		return T(l, "obs1", Pct(r.Blended), r.Worked, r.Failed, Pct(r.Curated), r.PriorWeight)
	}
	return T(l, "obs", Pct(r.Blended), r.Reports, r.Worked, r.Failed, Pct(r.Curated), r.PriorWeight)
}

// Condition writes an item's condition and how it came out here.
func Condition(cond string, a diagnose.Applicability, l string) (string, string) {
	if cond == "" {
		return "", ""
	}
	paren := func(s string) string {
		if a.Reason == "" {
			return s
		}
		return s + T(l, "open_paren") + a.Reason + T(l, "close_paren")
	}
	switch a.ConditionStatus {
	case "holds":
		return cond, paren(T(l, "holds"))
	case "fails":
		return cond, paren(T(l, "fails_cond"))
	case "unknown":
		if r, ok := strings.CutPrefix(a.Reason, "not known: "); ok {
			return cond, T(l, "unknown") + T(l, "colon") + r
		}
		if a.Reason != "" {
			return cond, a.Reason
		}
		return cond, T(l, "unknown")
	}
	return cond, a.Reason
}

// FactList lists facts as printed in the message, sorted by name.
func FactList(f map[string]facts.Fact) []Fact {
	out := make([]Fact, 0, len(f))
	for k, v := range f {
		out = append(out, Fact{Name: k, Text: v.Text})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func memory(d *diagnose.Diagnosis, l string) *Memory {
	m := d.Memory
	if m == nil {
		return nil
	}
	v := &Memory{Reason: Pick(l, m.Reason, m.ReasonZh), Self: Pick(l, m.SelfWhy, m.SelfWhyZh)}
	if v.Verdict = T(l, "v_"+string(m.Verdict)); v.Verdict == "v_"+string(m.Verdict) {
		v.Verdict = strings.ReplaceAll(string(m.Verdict), "_", " ")
	}
	add := func(key string, n int64) {
		if n >= 0 {
			v.Figures = append(v.Figures, Fact{Name: T(l, key), Text: facts.FormatBytes(float64(n))})
		}
	}
	add("m_requested", m.Requested)
	add("m_capacity", m.Capacity)
	add("m_free", m.Free)
	add("m_allocated", m.Allocated)
	add("m_reserved", m.Reserved)
	add("m_unalloc", m.ReservedUnallocated)
	add("m_others", m.OtherProcesses)
	for _, a := range m.Advice {
		v.Advice = append(v.Advice, Pick(l, a.Text, a.Zh))
	}
	return v
}

// EnvLine summarises the environment in one line, "" when nothing is
// known.
func EnvLine(e env.Environment, l string) string {
	var parts []string
	add := func(name, v string) {
		if v != "" {
			parts = append(parts, name+" "+v)
		}
	}
	add("PyTorch", e.Torch)
	add(T(l, "builtcuda"), e.TorchCUDA)
	add("CUDA", e.CUDA)
	add(T(l, "driver"), e.Driver)
	add(T(l, "drvcuda"), e.DriverCUDA)
	add("cuDNN", e.CUDNN)
	add("NCCL", e.NCCL)
	add("Python", e.Python)
	if e.OSDetail != "" {
		parts = append(parts, e.OSDetail)
	} else if e.OS != "" {
		parts = append(parts, e.OS)
	}
	if len(e.GPUs) > 0 {
		g := e.GPUs[0].Name
		if len(e.GPUs) > 1 {
			g += " ×" + strconv.Itoa(len(e.GPUs))
		}
		parts = append(parts, g)
	}
	return strings.Join(parts, " · ")
}

// RanksLine says which rank failed first and why, "" for nil.
func RanksLine(r *diagnose.RankSummary, l string) string {
	if r == nil {
		return ""
	}
	reason := Pick(l, r.Reason, r.ReasonZh)
	if r.FirstFailed != nil {
		return T(l, "rankfirst", *r.FirstFailed, reason)
	}
	return reason
}

// OperatorLine says in one line, in language l, what a node operator does
// about an event (severity, whose fault, drain, NVIDIA's resolution
// bucket), and next the step to take; both "" for nil.
func OperatorLine(op *kb.Operator, l string) (line, next string) {
	if op == nil {
		return "", ""
	}
	var parts []string
	for _, k := range []string{"sev." + op.Severity, "fault." + op.Fault, "drain." + op.Drain} {
		if Has(l, k) {
			parts = append(parts, T(l, k))
		}
	}
	if op.Action != "" {
		parts = append(parts, T(l, "nvidia")+" "+op.Action)
	}
	return strings.Join(parts, " · "), Pick(l, op.Next, op.NextZh)
}

// maxListed bounds the numbers printed in one list; JSON has them all.
const maxListed = 16

// IntList writes xs as a comma list, at most 16 of them and a count of
// the rest.
func IntList(xs []int) string {
	n := min(len(xs), maxListed)
	parts := make([]string, n, n+1)
	for i, x := range xs[:n] {
		parts[i] = strconv.Itoa(x)
	}
	if len(xs) > n {
		parts = append(parts, fmt.Sprintf("… (+%d)", len(xs)-n))
	}
	return strings.Join(parts, ", ")
}

// Pick is the Chinese text where the language is Chinese and there is
// one.
func Pick(l, en, zh string) string {
	if l == "zh" && zh != "" {
		return zh
	}
	return en
}

// Pct is a rate from 0 to 1 as a whole percentage.
func Pct(r float64) int { return int(r*100 + 0.5) }

// Group writes n with thousands separators: 1234567 → "1,234,567".
func Group(n int64) string {
	s := strconv.FormatInt(n, 10)
	digits := strings.TrimPrefix(s, "-")
	var b strings.Builder
	if len(digits) < len(s) {
		b.WriteByte('-')
	}
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Clip cuts s to at most n bytes on a rune boundary, with "…" after a cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Cut(s, n) + "…"
}

// Cut cuts s to at most n bytes on a rune boundary.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// readKey picks the label for the "read N lines" line: English needs the
// singular for one line.
func readKey(lines int) string {
	if lines == 1 {
		return "read1"
	}
	return "read"
}
