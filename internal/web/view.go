package web

import (
	"strings"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/internal/view"
	"github.com/gpudx/gpudx/kb"
)

// This file lays out internal/view's language-resolved report as the result
// page's cards: links between cards, sources as links, version tables.

type resultBody struct {
	// Unrecognized: lines that look like the failure where no entry
	// matched.
	Unrecognized []view.Unrecognized
	Headline     string
	None         bool
	NoneNote     string
	Read         string
	Source       string
	Ignored      bool
	Env          string
	Ranks        string
	Cards        []card
	Form         formBody // the log again, to change and resend
}

// card is one diagnosis.
type card struct {
	Anchor    string
	ID, URL   string
	Kind      string // "root", "follow" or "also": the card's colour and badge
	Badge     string
	CausedBy  []idLink
	Where     string
	Title     string
	RootCause string
	Evidence  []evidence
	Facts     []fact
	Operator  string // what a node operator does, and next the step
	OpNext    string
	Memory    *memoryView
	Notes     []string // version notes
	Versions  []versionRow
	DeadEnds  []item
	Checks    []item // diagnostic steps: to find out
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
	Self    string // which listed process is this one, and why
	Figures []fact
	Advice  []string
}

// item is a dead end or a workaround.
type item struct {
	N         int // the number shown: the position in the list
	Ref       int // the item's number in its entry (gpudx report's), where it differs from N
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

// resultView builds the page for rep in language l from the view every
// face reads.
func resultView(rep *diagnose.Report, l string) resultBody {
	v := view.Build(rep, l)
	b := resultBody{Read: v.Read, Env: v.Env, Unrecognized: v.Unrecognized}
	if v.None {
		b.None = true
		b.Headline = tr(l, "none")
		b.NoneNote = tr(l, "none_note", rep.Stats.Entries)
		return b
	}
	b.Headline = tr(l, "h_found", v.Count)
	if v.Count == 1 {
		b.Headline = tr(l, "found1")
	}
	b.Ranks = v.Ranks
	anchors := map[string]string{}
	for _, d := range v.Diagnoses {
		anchors[d.ID] = d.Anchor
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
	for i := range v.Diagnoses {
		d := &v.Diagnoses[i]
		c := card{
			Anchor:    d.Anchor,
			ID:        d.ID,
			URL:       entryURL(d.ID),
			Kind:      d.Kind,
			Where:     d.Where(l, tr(l, "dot")),
			Title:     d.Title,
			RootCause: d.RootCause,
			Facts:     factsOf(d.Facts),
			Operator:  d.Operator,
			OpNext:    d.OpNext,
			Notes:     d.Notes,
			Versions:  versionRows(d.Versions),
			LeadsTo:   ref(d.LeadsTo),
			Subsumes:  ref(d.Subsumes),
			Why:       d.Why,
			Tier:      d.Tier,
			DocURL:    webURL(d.DocURL),
		}
		switch d.Kind {
		case "root":
			c.Badge = tr(l, "root")
		case "follow":
			c.Badge, c.CausedBy = tr(l, "h_followup"), ref(d.CausedBy)
		default:
			c.Badge = tr(l, "also")
		}
		for _, e := range d.Evidence {
			c.Evidence = append(c.Evidence, evidence{Line: e.Line, File: e.File, Text: e.Text})
		}
		if m := d.Memory; m != nil {
			c.Memory = &memoryView{Verdict: m.Verdict, Reason: m.Reason, Figures: factsOf(m.Figures), Self: m.Self, Advice: m.Advice}
		}
		for _, x := range d.DeadEnds {
			c.DeadEnds = append(c.DeadEnds, fromView(x))
		}
		for _, x := range d.Checks {
			c.Checks = append(c.Checks, fromView(x))
		}
		for _, x := range d.Work {
			c.Work = append(c.Work, fromView(x))
		}
		b.Cards = append(b.Cards, c)
	}
	return b
}

// fromView is an item as the page shows it: sources as links, the
// blended rate with its counts.
func fromView(x view.Item) item {
	it := item{N: x.N, Text: x.Text, Why: x.Why, How: x.How, Rate: x.Rate, Observed: x.ObservedLong,
		Cond: x.Cond, CondState: x.CondState, NA: !x.Applies, Sources: sources(x.Sources)}
	if x.Index+1 != x.N {
		it.Ref = x.Index + 1
	}
	return it
}

func factsOf(fs []view.Fact) []fact {
	out := make([]fact, len(fs))
	for i, f := range fs {
		out[i] = fact{Name: f.Name, Text: f.Text}
	}
	return out
}

// webURL keeps only web addresses; anything else is not linked.
func webURL(s string) string {
	if strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") {
		return s
	}
	return ""
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

// workRate is a workaround's rate with its basis ("works ~70%, estimate"),
// or "to find out" for a check, which has none.
func workRate(x diagnose.Workaround, l string) string {
	if x.IsCheck() {
		return x.RateLabel(l)
	}
	return tr(l, "works", x.RateLabel(l))
}
