package web

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/env"
	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/internal/render"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/outcome"
)

// This file turns a diagnosis report into what the result page shows, in
// one language. It computes nothing: every figure comes from the report,
// and the wording follows `gpudx diagnose`'s text output.

type resultBody struct {
	Headline string
	None     bool
	NoneNote string
	Read     string
	Source   string
	Ignored  bool
	Env      string
	Ranks    string
	Cards    []card
	Form     formBody // the log again, to change and resend
}

// card is one diagnosis.
type card struct {
	Anchor    string
	ID, URL   string
	Kind      string // "root", "follow" or "also": the card's colour and badge
	Badge     string
	CausedBy  []idLink
	Where     string
	Signature string
	RootCause string
	Evidence  []evidence
	Facts     []fact
	Operator  string // what a node operator does, and next the step
	OpNext    string
	Memory    *memoryView
	Notes     []string // version notes
	Versions  []versionRow
	DeadEnds  []item
	Work      []item
	LeadsTo   []idLink
	Subsumes  []idLink
	Why       []string
	Tier      string
	DocURL    string
}

type evidence struct {
	Line int
	File string
	Text string
}

type fact struct{ Name, Text string }

// idLink names another diagnosis or entry: Href is its card on this page
// when it has one, else its entry page.
type idLink struct{ ID, Href string }

type memoryView struct {
	Verdict string
	Reason  string
	Figures []fact
	Advice  []string
}

// item is a dead end or a workaround.
type item struct {
	N         int // the item's number in its entry, the one gpudx report takes
	Text      string
	Why       string
	How       string
	Rate      string
	Observed  string
	Cond      string
	CondState string // the condition's outcome in words
	NA        bool
	Sources   []source
}

// source is a reference: a link when it is a web address.
type source struct {
	URL, Text string
	Link      bool
}

func newSource(s string) source {
	if strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") {
		t := strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://")
		if r := []rune(t); len(r) > 72 {
			t = string(r[:71]) + "…"
		}
		return source{URL: s, Text: t, Link: true}
	}
	return source{Text: s}
}

func sources(ss []string) []source {
	out := make([]source, 0, len(ss))
	for _, s := range ss {
		out = append(out, newSource(s))
	}
	return out
}

func pct(r float64) int { return int(r*100 + 0.5) }

// resultView builds the page for rep in language l.
func resultView(rep *diagnose.Report, l string) resultBody {
	b := resultBody{
		Read: tr(l, "read", group(int64(rep.Stats.Lines)), group(rep.Stats.Bytes), rep.Stats.Entries),
		Env:  envLine(rep.Environment, l),
	}
	if len(rep.Diagnoses) == 0 {
		b.None = true
		b.Headline = tr(l, "none")
		b.NoneNote = tr(l, "none_note", rep.Stats.Entries)
		return b
	}
	b.Headline = tr(l, "found", len(rep.Diagnoses))
	if len(rep.Diagnoses) == 1 {
		b.Headline = tr(l, "found1")
	}
	b.Ranks = ranksLine(rep.Ranks, l)
	anchors := map[string]string{}
	for i, d := range rep.Diagnoses {
		anchors[d.ID] = "d" + strconv.Itoa(i+1)
	}
	ref := func(ids []string) []idLink {
		var out []idLink
		for _, id := range ids {
			href := entryURL(id)
			if a, ok := anchors[id]; ok {
				href = "#" + a
			}
			out = append(out, idLink{ID: id, Href: href})
		}
		return out
	}
	for _, d := range rep.Diagnoses {
		c := card{
			Anchor:    anchors[d.ID],
			ID:        d.ID,
			URL:       entryURL(d.ID),
			Where:     where(d, l),
			Signature: pick(l, d.Signature, d.SignatureZh),
			RootCause: pick(l, d.RootCause, d.RootCauseZh),
			Notes:     versionNotes(d, l),
			Versions:  versionRows(d.Versions),
			LeadsTo:   ref(d.LeadsTo),
			Subsumes:  ref(d.Subsumes),
			Tier:      tr(l, "tier", d.VerificationTier, d.Confidence),
			DocURL:    webURL(d.OfficialDocURL),
			Memory:    memoryLines(d, l),
		}
		switch {
		case d.Root:
			c.Kind, c.Badge = "root", tr(l, "root")
		case len(d.CausedBy) > 0:
			c.Kind, c.Badge, c.CausedBy = "follow", tr(l, "followup"), ref(d.CausedBy)
		default:
			c.Kind, c.Badge = "also", tr(l, "also")
		}
		for _, e := range d.Evidence {
			c.Evidence = append(c.Evidence, evidence{Line: e.Line, File: e.File, Text: e.Text})
		}
		c.Facts = factList(d.Facts)
		c.Operator, c.OpNext = render.OperatorLine(d.Operator, l)
		c.Why = d.Why
		if l == "zh" && len(d.WhyZh) == len(d.Why) {
			c.Why = d.WhyZh
		}
		for _, x := range d.DeadEnds {
			it := item{N: x.Index + 1, Text: x.Action, Why: x.WhyFails, Rate: tr(l, "fails", x.RateLabel(l)), NA: !x.Applies, Sources: sources(x.Sources)}
			if l == "zh" && x.Zh != "" {
				it.Text, it.Why = x.Zh, "" // the Chinese text says why in the same sentence
			}
			it.Cond, it.CondState = condition(x.Condition, x.Applicability, l)
			it.Observed = observed(x.Observed, l)
			c.DeadEnds = append(c.DeadEnds, it)
		}
		for _, x := range d.Workarounds {
			it := item{N: x.Index + 1, Text: pick(l, x.Action, x.Zh), How: x.How, Rate: workRate(x, l), NA: !x.Applies, Sources: sources(x.Sources)}
			it.Cond, it.CondState = condition(x.Condition, x.Applicability, l)
			it.Observed = observed(x.Observed, l)
			c.Work = append(c.Work, it)
		}
		b.Cards = append(b.Cards, c)
	}
	return b
}

// workRate is a workaround's rate with its basis ("works ~70%, estimate"),
// or "to find out" for a check, which has none.
func workRate(x diagnose.Workaround, l string) string {
	if x.IsCheck() {
		return x.RateLabel(l)
	}
	return tr(l, "works", x.RateLabel(l))
}

// pick is the Chinese text where the page is Chinese and there is one.
func pick(l, en, zh string) string {
	if l == "zh" && zh != "" {
		return zh
	}
	return en
}

// webURL keeps only web addresses; anything else is not linked.
func webURL(s string) string {
	if strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") {
		return s
	}
	return ""
}

// observed says a blended rate and what backs it; "" when no store is in
// use (Observed is nil).
func observed(r *outcome.Rate, l string) string {
	if r == nil {
		return ""
	}
	return observedText(*r, l)
}

// observedText says a blended rate, the reports behind it and the weight
// of the curated rate.
func observedText(r outcome.Rate, l string) string {
	switch r.Reports {
	case 0:
		return tr(l, "obs_none")
	case 1:
		return tr(l, "obs1", pct(r.Blended), r.Worked, r.Failed, pct(r.Curated), r.PriorWeight)
	}
	return tr(l, "obs", pct(r.Blended), r.Reports, r.Worked, r.Failed, pct(r.Curated), r.PriorWeight)
}

// condition writes an item's condition and how it came out here.
func condition(cond string, a diagnose.Applicability, l string) (string, string) {
	if cond == "" {
		return "", ""
	}
	switch a.ConditionStatus {
	case "holds":
		return cond, tr(l, "holds")
	case "fails":
		s := tr(l, "fails_cond")
		if a.Reason != "" {
			s += tr(l, "open_paren") + a.Reason + tr(l, "close_paren")
		}
		return cond, s
	case "unknown":
		if r, ok := strings.CutPrefix(a.Reason, "not known: "); ok {
			return cond, tr(l, "unknown") + tr(l, "colon") + r
		}
		if a.Reason != "" {
			return cond, a.Reason
		}
		return cond, tr(l, "unknown")
	}
	return cond, a.Reason
}

func where(d *diagnose.Diagnosis, l string) string {
	span := strconv.Itoa(d.FirstLine)
	switch {
	case d.LastFile != "":
		span = fmt.Sprintf("%d … %s:%d", d.FirstLine, d.LastFile, d.LastLine)
	case d.LastLine != d.FirstLine:
		span = fmt.Sprintf("%d–%d", d.FirstLine, d.LastLine)
	}
	parts := []string{tr(l, "lines", span)}
	if d.File != "" {
		parts[0] = d.File + tr(l, "colon") + parts[0]
	}
	if d.Count > 1 {
		parts = append(parts, tr(l, "times", d.Count))
	}
	if len(d.Ranks) > 0 {
		parts = append(parts, tr(l, "onranks", render.IntList(d.Ranks)))
	}
	return strings.Join(parts, " · ")
}

func factList(f map[string]facts.Fact) []fact {
	out := make([]fact, 0, len(f))
	for k, v := range f {
		out = append(out, fact{Name: k, Text: v.Text})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func memoryLines(d *diagnose.Diagnosis, l string) *memoryView {
	m := d.Memory
	if m == nil {
		return nil
	}
	v := &memoryView{Reason: pick(l, m.Reason, m.ReasonZh)}
	v.Verdict = tr(l, "v_"+string(m.Verdict))
	if v.Verdict == "v_"+string(m.Verdict) {
		v.Verdict = strings.ReplaceAll(string(m.Verdict), "_", " ")
	}
	add := func(key string, n int64) {
		if n >= 0 {
			v.Figures = append(v.Figures, fact{Name: tr(l, key), Text: facts.FormatBytes(float64(n))})
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
		v.Advice = append(v.Advice, pick(l, a.Text, a.Zh))
	}
	return v
}

func versionNotes(d *diagnose.Diagnosis, l string) []string {
	var out []string
	for _, n := range d.VersionNotes {
		out = append(out, pick(l, n.Text, n.Zh))
	}
	return out
}

// envLine summarises the environment in one line, "" when nothing is
// known.
func envLine(e env.Environment, l string) string {
	var parts []string
	add := func(name, v string) {
		if v != "" {
			parts = append(parts, name+" "+v)
		}
	}
	add("PyTorch", e.Torch)
	add(tr(l, "builtcuda"), e.TorchCUDA)
	add("CUDA", e.CUDA)
	add(tr(l, "driver"), e.Driver)
	add(tr(l, "drvcuda"), e.DriverCUDA)
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

func ranksLine(r *diagnose.RankSummary, l string) string {
	if r == nil {
		return ""
	}
	reason := pick(l, r.Reason, r.ReasonZh)
	if r.FirstFailed != nil {
		return tr(l, "rankfirst", *r.FirstFailed, reason)
	}
	return reason
}

// versionRow is one row of an entry's version table, with missing values
// as "—".
type versionRow struct {
	Version, Introduced, Deprecated, Removed, Change, Status string
}

func versionRows(vs []kb.Version) []versionRow {
	s := func(p *string) string {
		if p == nil || *p == "" {
			return "—"
		}
		return *p
	}
	out := make([]versionRow, 0, len(vs))
	for _, v := range vs {
		out = append(out, versionRow{v.Version, s(v.Introduced), s(v.Deprecated), s(v.Removed), s(v.BehaviorChange), v.Status})
	}
	return out
}
