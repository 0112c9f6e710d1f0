package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpudx/gpudx/internal/view"
	"sort"
	"strings"

	"github.com/gpudx/gpudx/internal/service"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/outcome"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// GetEntryIn is get_entry's input.
type GetEntryIn struct {
	ID string `json:"id" jsonschema:"entry id, domain/slug, as diagnose_log, lookup_error and search_entries return it (e.g. pytorch/cuda-out-of-memory)"`
}

// EntryOut is get_entry's structured output: one entry in full.
type EntryOut struct {
	ID                  string         `json:"id"`
	Signature           string         `json:"signature"`
	Regex               string         `json:"regex" jsonschema:"the pattern that recognises the message (Go RE2 syntax)"`
	RegexNot            string         `json:"regex_not,omitempty" jsonschema:"lines it matches are not this error even where regex matches (harmless lines that quote it)"`
	Aliases             []string       `json:"aliases"`
	Domain              string         `json:"domain"`
	Category            string         `json:"category"`
	ErrorCode           string         `json:"error_code,omitempty"`
	RootCause           string         `json:"root_cause"`
	RootCauseType       string         `json:"root_cause_type"`
	DeadEnds            []EntryItem    `json:"dead_ends" jsonschema:"what NOT to try first, in entry order (index is report_outcome's index)"`
	Workarounds         []EntryItem    `json:"workarounds" jsonschema:"what to try, in entry order (index is report_outcome's index)"`
	PriorWeight         int            `json:"prior_weight" jsonschema:"how many reports a curated rate counts as when blended with outcome reports"`
	LeadsTo             []string       `json:"leads_to" jsonschema:"errors this one is known to cause"`
	PrecededBy          []string       `json:"preceded_by" jsonschema:"errors known to cause this one"`
	ConfusedWith        []kb.Confusion `json:"frequently_confused_with" jsonschema:"errors that look alike and how to tell them apart"`
	Versions            []kb.Version   `json:"versions" jsonschema:"releases where the error's behaviour changed"`
	Examples            []string       `json:"examples" jsonschema:"real forms of the message"`
	OfficialDocURL      string         `json:"official_doc_url,omitempty"`
	VerificationTier    string         `json:"verification_tier"`
	Confidence          float64        `json:"confidence"`
	FixSuccessRate      float64        `json:"fix_success_rate"`
	FixSuccessRateBasis string         `json:"fix_success_rate_basis" jsonschema:"what fix_success_rate rests on: estimate, reports or reproduced"`
	Resolvable          string         `json:"resolvable"`
	Tags                []string       `json:"tags"`
	LastConfirmed       string         `json:"last_confirmed,omitempty"`
	Operator            *kb.Operator   `json:"operator,omitempty" jsonschema:"for a driver or hardware event (Xid): severity, whose fault, whether to drain the node, NVIDIA's resolution bucket and the operator's next step"`
}

func (h *handlers) addGetEntry(s *mcp.Server) {
	addTool(s, &mcp.Tool{
		Name:  "get_entry",
		Title: "Read a knowledge-base entry",
		Description: `Read one knowledge-base entry in full by id (domain/slug, e.g. pytorch/cuda-out-of-memory): its root cause, every dead end (do not try first) and workaround with its rate blended with the outcome reports people sent (and how many), sources, conditions, related errors and version notes.
An unknown id is an error that suggests close ids.`,
		Annotations: readOnly(),
	}, h.getEntry)
}

func (h *handlers) getEntry(ctx context.Context, in GetEntryIn) (*EntryOut, string, error) {
	id := strings.TrimSpace(in.ID)
	if id == "" {
		return nil, "", errors.New("id is empty: give an entry id such as pytorch/cuda-out-of-memory (search_entries finds ids)")
	}
	e := h.svc.Entry(id)
	if e == nil {
		return nil, "", h.notFound(id)
	}
	des, ws, err := h.items(ctx, e)
	if err != nil {
		return nil, "", err
	}
	out := &EntryOut{
		ID: e.ID, Signature: e.Signature, Regex: e.Regex, RegexNot: e.RegexNot, Aliases: nonNil(e.Aliases), Domain: e.Domain,
		Category: e.Category, ErrorCode: e.ErrorCode, RootCause: e.RootCause, RootCauseType: e.RootCauseType,
		DeadEnds: des, Workarounds: ws, PriorWeight: outcome.PriorWeight,
		LeadsTo: nonNil(e.TransitionGraph.LeadsTo), PrecededBy: nonNil(e.TransitionGraph.PrecededBy),
		ConfusedWith: nonNil(e.TransitionGraph.FrequentlyConfusedWith), Versions: nonNil(e.Versions),
		Examples: nonNil(e.Examples.Match), OfficialDocURL: e.OfficialDocURL, VerificationTier: e.VerificationTier,
		Confidence: e.Confidence, FixSuccessRate: e.FixSuccessRate, FixSuccessRateBasis: string(e.FixRate().Basis), Resolvable: e.Resolvable,
		Tags: nonNil(e.Tags), LastConfirmed: e.LastConfirmed, Operator: e.Operator,
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s, %s)\n  %s\n  Root cause: %s\n", e.ID, e.Domain, e.Category, view.Clip(e.Signature, 200), e.RootCause)
	writeEntryItems(&b, des, ws)
	if len(out.LeadsTo) > 0 {
		fmt.Fprintf(&b, "Leads to: %s\n", strings.Join(out.LeadsTo, ", "))
	}
	return out, b.String(), nil
}

// notFound is the error for an unknown id, with the closest ids.
func (h *handlers) notFound(id string) error {
	close := h.closeIDs(id, 5)
	if len(close) == 0 {
		return fmt.Errorf("no entry %q; search_entries or list_domains show what there is", id)
	}
	return fmt.Errorf("no entry %q; close ids: %s", id, strings.Join(close, ", "))
}

// closeIDs ranks entries for a mistyped id: the search score of its words,
// more for the same domain and for a slug that starts the same way.
func (h *handlers) closeIDs(id string, n int) []string {
	domain, slug, ok := strings.Cut(strings.ToLower(id), "/")
	if !ok {
		domain, slug = "", domain
	}
	words := strings.NewReplacer("/", " ", "-", " ", "_", " ").Replace(id)
	score := map[string]int{}
	for _, r := range h.svc.Search(words, 0) {
		score[r.Entry.ID] = r.Score
	}
	type cand struct {
		id    string
		score int
	}
	var cs []cand
	for _, e := range h.svc.Entries(service.Filter{}) {
		sc := score[e.ID]
		if sc == 0 {
			continue
		}
		d, s, _ := strings.Cut(strings.ToLower(e.ID), "/")
		if d == domain {
			sc += 50
		}
		sc += 5 * commonPrefix(s, slug)
		cs = append(cs, cand{e.ID, sc})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].score > cs[j].score })
	var out []string
	for _, c := range cs[:min(len(cs), n)] {
		out = append(out, c.id)
	}
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// SearchIn is search_entries' input.
type SearchIn struct {
	Query  string `json:"query" jsonschema:"words, an error name or code, an id, or a pasted message line"`
	Domain string `json:"domain,omitempty" jsonschema:"only entries of this domain (list_domains names them, e.g. cuda, nccl, pytorch)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many results, 1 to 50 (default 10)"`
}

// SearchOut is search_entries' structured output.
type SearchOut struct {
	Results []SearchResult `json:"results" jsonschema:"best first"`
}

// SearchResult is one entry found.
type SearchResult struct {
	ID           string `json:"id"`
	Signature    string `json:"signature"`
	Domain       string `json:"domain"`
	Category     string `json:"category"`
	ErrorCode    string `json:"error_code,omitempty"`
	Score        int    `json:"score" jsonschema:"higher is closer"`
	RegexMatched bool   `json:"regex_matched" jsonschema:"the entry's regex matches the query text"`
}

func (h *handlers) addSearch(s *mcp.Server) {
	addTool(s, &mcp.Tool{
		Name:        "search_entries",
		Title:       "Search the knowledge base",
		Description: `Search the knowledge base of GPU errors by words, error names or codes, ids or a pasted line; optionally within one domain. Returns entry ids with their signatures, best first; get_entry reads one in full.`,
		Annotations: readOnly(),
	}, h.search)
}

const maxSearch = 50

func (h *handlers) search(ctx context.Context, in SearchIn) (*SearchOut, string, error) {
	q := strings.TrimSpace(in.Query)
	switch {
	case q == "":
		return nil, "", errors.New("query is empty: give words, an error name or a message line")
	case len(q) > maxMessageText:
		return nil, "", fmt.Errorf("query is %d bytes, more than %d", len(q), maxMessageText)
	case in.Limit < 0 || in.Limit > maxSearch:
		return nil, "", fmt.Errorf("limit %d is out of range: give 1 to %d", in.Limit, maxSearch)
	}
	limit := in.Limit
	if limit == 0 {
		limit = 10
	}
	domain := strings.TrimSpace(in.Domain)
	if domain != "" && !h.hasDomain(domain) {
		return nil, "", fmt.Errorf("no domain %q; domains are: %s", domain, strings.Join(h.domainNames(), ", "))
	}
	out := &SearchOut{Results: []SearchResult{}}
	for _, r := range h.svc.Search(q, 0) {
		e := r.Entry
		if domain != "" && !strings.EqualFold(e.Domain, domain) {
			continue
		}
		out.Results = append(out.Results, SearchResult{ID: e.ID, Signature: e.Signature, Domain: e.Domain,
			Category: e.Category, ErrorCode: e.ErrorCode, Score: r.Score, RegexMatched: regexMatches(e, q)})
		if len(out.Results) == limit {
			break
		}
	}
	var b strings.Builder
	if len(out.Results) == 0 {
		fmt.Fprintf(&b, "Nothing found for %q. Try other words, an error code, or list_domains.\n", view.Clip(q, 120))
	}
	for _, r := range out.Results {
		fmt.Fprintf(&b, "%s: %s\n", r.ID, view.Clip(r.Signature, 120))
	}
	return out, b.String(), nil
}

func (h *handlers) hasDomain(d string) bool {
	for _, x := range h.svc.Domains() {
		if strings.EqualFold(x.Name, d) {
			return true
		}
	}
	return false
}

func (h *handlers) domainNames() []string {
	var ns []string
	for _, x := range h.svc.Domains() {
		ns = append(ns, x.Name)
	}
	return ns
}

// DomainsIn is list_domains' (empty) input.
type DomainsIn struct{}

// DomainsOut is list_domains' structured output.
type DomainsOut struct {
	Entries int      `json:"entries" jsonschema:"entries in the knowledge base"`
	Domains []Domain `json:"domains" jsonschema:"by name"`
}

// Domain is one domain of the knowledge base.
type Domain struct {
	Name       string   `json:"name" jsonschema:"the domain, the part of an id before the slash"`
	Entries    int      `json:"entries" jsonschema:"entries in the domain"`
	Categories []string `json:"categories" jsonschema:"categories its entries fall in"`
}

func (h *handlers) addDomains(s *mcp.Server) {
	addTool(s, &mcp.Tool{
		Name:        "list_domains",
		Title:       "List the knowledge base's domains",
		Description: `List the domains of the knowledge base (cuda, nccl, pytorch, driver, ...) with how many entries each holds and their categories. Use a domain to narrow search_entries.`,
		Annotations: readOnly(),
	}, h.domains)
}

func (h *handlers) domains(ctx context.Context, _ DomainsIn) (*DomainsOut, string, error) {
	out := &DomainsOut{Domains: []Domain{}}
	var b strings.Builder
	for _, d := range h.svc.Domains() {
		out.Entries += d.Entries
		out.Domains = append(out.Domains, Domain{Name: d.Name, Entries: d.Entries, Categories: nonNil(d.Categories)})
		fmt.Fprintf(&b, "%s: %d entries (%s)\n", d.Name, d.Entries, strings.Join(d.Categories, ", "))
	}
	return out, fmt.Sprintf("%d entries in %d domains\n", out.Entries, len(out.Domains)) + b.String(), nil
}

// entryErr turns the service's ErrNotFound into a message with close ids.
func (h *handlers) entryErr(id string, err error) error {
	if errors.Is(err, service.ErrNotFound) {
		return h.notFound(id)
	}
	return err
}
