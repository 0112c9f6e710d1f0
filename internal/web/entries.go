package web

import (
	"github.com/gpudx/gpudx/internal/view"
	"log"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/internal/service"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/outcome"
)

// maxQuery bounds a search query: it is matched against every entry's
// regex, and a pasted message line is well under this.
const maxQuery = 2000

// entriesBody is the knowledge-base list.
type entriesBody struct {
	Total      int
	Q          string
	Domain     string
	Category   string
	Domains    []domainView
	Categories []string
	Filtered   bool
	Count      string
	Rows       []entryRow
}

type domainView struct {
	Name    string
	Entries int
	URL     string
	Current bool
}

type entryRow struct {
	ID, URL, Signature, Where, Tier string
}

func (h *handler) entries(w http.ResponseWriter, r *http.Request) {
	l := chooseLang(w, r, "")
	q := r.URL.Query()
	b := entriesBody{
		Q:        view.Cut(strings.TrimSpace(q.Get("q")), maxQuery),
		Domain:   strings.TrimSpace(q.Get("domain")),
		Category: strings.TrimSpace(q.Get("category")),
		Total:    len(h.svc.Base().Entries()),
	}
	b.Filtered = b.Q != "" || b.Domain != "" || b.Category != ""
	cats := map[string]bool{}
	for _, d := range h.svc.Domains() {
		b.Domains = append(b.Domains, domainView{Name: d.Name, Entries: d.Entries,
			URL: "/entries?" + url.Values{"domain": {d.Name}}.Encode(), Current: strings.EqualFold(d.Name, b.Domain)})
		if b.Domain == "" || strings.EqualFold(d.Name, b.Domain) {
			for _, c := range d.Categories {
				cats[c] = true
			}
		}
	}
	for c := range cats {
		b.Categories = append(b.Categories, c)
	}
	slices.Sort(b.Categories)
	for _, e := range h.svc.Entries(service.Filter{Domain: b.Domain, Category: b.Category, Q: b.Q}) {
		b.Rows = append(b.Rows, entryRow{ID: e.ID, URL: entryURL(e.ID), Signature: view.Pick(l, e.Signature, e.SignatureZh),
			Where: e.Domain + " · " + e.Category, Tier: e.VerificationTier})
	}
	if b.Filtered {
		b.Count = tr(l, "n_results", len(b.Rows))
	} else {
		b.Count = tr(l, "n_entries", len(b.Rows))
	}
	p := h.newPage(r, l, tr(l, "kb_title"), "kb")
	if b.Q != "" {
		p.Title = b.Q + " — " + p.Title
	}
	p.HideSearch = true
	p.Body = b
	h.render(w, http.StatusOK, "entries", p)
}

// entryBody is one entry's page.
type entryBody struct {
	ID, Signature, RootCause string
	Meta                     []fact
	DeadEnds, Work           []entryItem
	HasStore                 bool
	PriorWeight              int
	OS                       []fact
	Versions                 []versionRow
	LeadsTo, PrecededBy      []idLink
	Confused                 []confusion
	Aliases, Tags            []string
	Match, NoMatch           []string
	ExSources                []source
	Regex                    string
	RegexNot                 string // lines it rules out, "" for none
	DocURL, DocSection       string
}

// entryItem is a dead end or a workaround; Observed holds its rate
// blended with reports.
type entryItem struct{ item }

type confusion struct {
	idLink
	Distinction string
}

func (h *handler) entry(w http.ResponseWriter, r *http.Request) {
	l := chooseLang(w, r, "")
	id := r.PathValue("id")
	e := h.svc.Entry(id)
	if e == nil {
		if h.isDomain(id) {
			http.Redirect(w, r, "/entries?"+url.Values{"domain": {id}}.Encode(), http.StatusSeeOther)
			return
		}
		h.fail(w, r, l, http.StatusNotFound, "kb", tr(l, "e404_title"), tr(l, "e404_entry", id),
			&link{Href: "/entries?" + url.Values{"q": {id}}.Encode(), Text: tr(l, "kb_title")})
		return
	}
	rates, err := h.svc.Rates(r.Context(), e.ID)
	if err != nil {
		log.Printf("web: rates of %s: %v", e.ID, err)
		h.fail(w, r, l, http.StatusInternalServerError, "kb", tr(l, "e500_title"), tr(l, "e500", err.Error()), nil)
		return
	}
	p := h.newPage(r, l, e.ID, "kb")
	p.Body = h.entryView(e, rates, l)
	h.render(w, http.StatusOK, "entry", p)
}

func (h *handler) isDomain(name string) bool {
	for _, d := range h.svc.Domains() {
		if d.Name == name {
			return true
		}
	}
	return false
}

func (h *handler) entryView(e *kb.Entry, rates *service.Rates, l string) entryBody {
	b := entryBody{
		ID:          e.ID,
		Signature:   view.Pick(l, e.Signature, e.SignatureZh),
		RootCause:   view.Pick(l, e.RootCause, e.RootCauseZh),
		HasStore:    h.svc.HasStore(),
		PriorWeight: outcome.PriorWeight,
		Versions:    versionRows(e.Versions),
		Aliases:     e.Aliases,
		Tags:        e.Tags,
		Match:       e.Examples.Match,
		NoMatch:     e.Examples.NoMatch,
		ExSources:   sources(e.Examples.Sources),
		Regex:       e.Regex,
		RegexNot:    e.RegexNot,
		DocURL:      webURL(e.OfficialDocURL),
	}
	if e.OfficialDocSection != nil {
		b.DocSection = *e.OfficialDocSection
	}
	meta := func(key, v string) {
		if v != "" {
			b.Meta = append(b.Meta, fact{Name: tr(l, key), Text: v})
		}
	}
	meta("e_domain", e.Domain)
	meta("e_category", e.Category)
	meta("e_code", e.ErrorCode)
	if line, next := view.OperatorLine(e.Operator, l); line != "" {
		meta("e_operator", line+". "+next)
	}
	meta("e_rctype", e.RootCauseType)
	meta("e_tier", e.VerificationTier)
	meta("e_conf", fmtFloat(e.Confidence))
	meta("e_fix", tr(l, "works", e.FixRate().Label(l)))
	meta("e_resolv", e.Resolvable)
	if e.EvidenceCount > 0 {
		meta("e_evidence", view.Group(int64(e.EvidenceCount)))
	}
	meta("e_seen", e.FirstSeen)
	meta("e_confirmed", e.LastConfirmed)
	meta("e_updated", e.LastUpdated)
	meta("e_origin", e.Origin)

	dead, work := diagnose.Items(e)
	for i, x := range dead {
		it := entryItem{item: item{N: i + 1, Text: x.Action, Why: x.WhyFails, Rate: tr(l, "fails", x.RateLabel(l)), Cond: x.Condition, Sources: sources(x.Sources)}}
		if l == "zh" && x.Zh != "" {
			it.Text, it.Why = x.Zh, ""
		}
		if i < len(rates.DeadEnds) {
			it.Observed = view.ObservedText(rates.DeadEnds[i], l)
		}
		b.DeadEnds = append(b.DeadEnds, it)
	}
	for i, x := range work {
		it := entryItem{item: item{N: i + 1, Text: view.Pick(l, x.Action, x.Zh), How: x.How, Rate: workRate(x, l), Cond: x.Condition, Sources: sources(x.Sources)}}
		if i < len(rates.Workarounds) && !x.IsCheck() {
			it.Observed = view.ObservedText(rates.Workarounds[i], l)
		}
		b.Work = append(b.Work, it)
	}
	if !b.HasStore {
		// Without a store there is nothing to blend; the note says so once.
		for i := range b.DeadEnds {
			b.DeadEnds[i].Observed = ""
		}
		for i := range b.Work {
			b.Work[i].Observed = ""
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(e.OSSpecific), osOrder) {
		if v := e.OSSpecific[k]; v != "" {
			b.OS = append(b.OS, fact{Name: k, Text: v})
		}
	}
	g := e.TransitionGraph
	b.LeadsTo = h.links(g.LeadsTo)
	b.PrecededBy = h.links(g.PrecededBy)
	for _, c := range g.FrequentlyConfusedWith {
		b.Confused = append(b.Confused, confusion{idLink: h.link(c.ErrorID), Distinction: c.Distinction})
	}
	return b
}

// osOrder puts the common systems first, the rest by name.
func osOrder(a, b string) int {
	rank := func(s string) int {
		if i := slices.Index([]string{"linux", "windows", "darwin", "macos"}, s); i >= 0 {
			return i
		}
		return 4
	}
	if c := rank(a) - rank(b); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// link points at an entry's page, or nowhere when the base lacks it.
func (h *handler) link(id string) idLink {
	if h.svc.Entry(id) == nil {
		return idLink{ID: id}
	}
	return idLink{ID: id, Href: entryURL(id)}
}

func (h *handler) links(ids []string) []idLink {
	var out []idLink
	for _, id := range ids {
		out = append(out, h.link(id))
	}
	return out
}
