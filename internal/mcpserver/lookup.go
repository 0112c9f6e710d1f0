package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpudx/gpudx/internal/view"
	"strings"

	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/outcome"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LookupIn is lookup_error's input.
type LookupIn struct {
	Message string `json:"message" jsonschema:"an error name, code or pasted line, e.g. CUBLAS_STATUS_ALLOC_FAILED, cudaErrorIllegalAddress, Xid 79, or 'NCCL WARN ... unhandled system error' (at most 64 KiB)"`
}

// LookupOut is lookup_error's structured output.
type LookupOut struct {
	Matches []Match `json:"matches" jsonschema:"best matching entries first; regex_matched tells a real match of the message from a match on words"`
}

// Match is one entry that matches a looked-up error.
type Match struct {
	ID           string      `json:"id"`
	Signature    string      `json:"signature"`
	Domain       string      `json:"domain"`
	Category     string      `json:"category"`
	ErrorCode    string      `json:"error_code,omitempty"`
	RegexMatched bool        `json:"regex_matched" jsonschema:"true when the entry's regex matches the text given (the message is this error); false when only its name, id or words matched"`
	Score        int         `json:"score" jsonschema:"search rank score; higher is closer"`
	RootCause    string      `json:"root_cause"`
	DeadEnds     []EntryItem `json:"dead_ends" jsonschema:"what NOT to try first (usually fails)"`
	Workarounds  []EntryItem `json:"workarounds" jsonschema:"what to try, with success rates"`
	ConfusedWith []string    `json:"confused_with,omitempty" jsonschema:"ids of errors that look alike"`
}

// EntryItem is a dead end or workaround of an entry with its blended rate.
type EntryItem struct {
	Item      int      `json:"item" jsonschema:"the item's number in its entry, from 1: report_outcome's item (gpudx report's N)"`
	Index     int      `json:"index" jsonschema:"the same position counted from 0 (item - 1)"`
	Action    string   `json:"action"`
	Detail    string   `json:"detail" jsonschema:"for a dead end why it fails, for a workaround how to do it"`
	Kind      string   `json:"kind,omitempty" jsonschema:"for a workaround: fix, or check (a diagnostic step that finds out what is wrong, with no rate)"`
	Rate      float64  `json:"rate" jsonschema:"fail rate of a dead end or success rate of a workaround, 0 to 1, blended with reported outcomes; 0 for a check"`
	Basis     string   `json:"basis" jsonschema:"what the curated rate rests on: estimate, reports or reproduced; empty for a check"`
	Label     string   `json:"label" jsonschema:"the rate as shown with its basis (~60%, estimate); to find out for a check"`
	Curated   float64  `json:"curated_rate" jsonschema:"the knowledge base's rate"`
	Reports   int      `json:"reports" jsonschema:"outcome reports blended in"`
	Worked    int      `json:"worked" jsonschema:"reports that said the action fixed the error"`
	Failed    int      `json:"failed" jsonschema:"reports that said it did not"`
	Condition string   `json:"condition,omitempty" jsonschema:"when the item applies (an expression over the message's facts and the environment)"`
	Sources   []string `json:"sources,omitempty"`
}

func (h *handlers) addLookup(s *mcp.Server) {
	addTool(s, &mcp.Tool{
		Name:  "lookup_error",
		Title: "Look up one GPU error",
		Description: `Look up one error by its name, code or a pasted message line (CUBLAS_STATUS_ALLOC_FAILED, cudaErrorIllegalAddress, ncclSystemError, "Xid 79", "NCCL WARN ... unhandled system error").
Returns the best matching knowledge-base entries (up to 5), each saying whether its regex matched the text (a real match) or only its words, with the root cause, dead ends (do not try first) and workarounds with rates. For a whole log use diagnose_log, which also checks conditions against the log's figures.`,
		Annotations: readOnly(),
	}, h.lookup)
}

const lookupResults = 5

func (h *handlers) lookup(ctx context.Context, in LookupIn) (*LookupOut, string, error) {
	msg := strings.TrimSpace(in.Message)
	switch {
	case msg == "":
		return nil, "", errors.New("message is empty: give an error name or line")
	case len(msg) > maxMessageText:
		return nil, "", fmt.Errorf("message is %d bytes; lookup_error takes an error line or a few (at most %d): give a whole log to diagnose_log", len(msg), maxMessageText)
	}
	out := &LookupOut{Matches: []Match{}}
	for _, r := range h.svc.Search(msg, lookupResults) {
		m, err := h.match(ctx, r, msg)
		if err != nil {
			return nil, "", err
		}
		out.Matches = append(out.Matches, m)
	}
	return out, lookupText(msg, out), nil
}

func (h *handlers) match(ctx context.Context, r kb.Result, msg string) (Match, error) {
	e := r.Entry
	m := Match{ID: e.ID, Signature: e.Signature, Domain: e.Domain, Category: e.Category, ErrorCode: e.ErrorCode,
		RegexMatched: regexMatches(e, msg), Score: r.Score, RootCause: e.RootCause}
	var err error
	if m.DeadEnds, m.Workarounds, err = h.items(ctx, e); err != nil {
		return Match{}, err
	}
	for _, c := range e.TransitionGraph.FrequentlyConfusedWith {
		m.ConfusedWith = append(m.ConfusedWith, c.ErrorID)
	}
	return m, nil
}

// regexMatches reports whether e matches msg or one of its lines (its
// regex, less the lines its regex_not rules out).
func regexMatches(e *kb.Entry, msg string) bool {
	return e.MatchLine(msg) || e.MatchAnyLine(msg)
}

// items lists an entry's dead ends and workarounds with their blended
// rates, in entry order.
func (h *handlers) items(ctx context.Context, e *kb.Entry) (des, ws []EntryItem, err error) {
	rates, err := h.svc.Rates(ctx, e.ID)
	if err != nil {
		return nil, nil, err
	}
	des, ws = []EntryItem{}, []EntryItem{}
	for i, x := range e.DeadEnds {
		r := rateAt(rates.DeadEnds, i, x.FailRate)
		it := item(i, x.Action, x.WhyFails, x.Condition, x.Sources, r)
		it.Basis, it.Label = string(x.Rate().Basis), x.Rate().WithReports(r.Blended, r.Reports).Label("en")
		des = append(des, it)
	}
	for i, w := range e.Workarounds {
		var it EntryItem
		if w.IsCheck() {
			// A check has no rate, so nothing to blend reports with.
			it = item(i, w.Action, w.How, w.Condition, w.Sources, outcome.Rate{PriorWeight: outcome.PriorWeight})
			it.Kind, it.Label = kb.KindCheck, kb.CheckLabel("en")
		} else {
			r := rateAt(rates.Workarounds, i, w.SuccessRate)
			it = item(i, w.Action, w.How, w.Condition, w.Sources, r)
			it.Kind, it.Basis, it.Label = kb.KindFix, string(w.Rate().Basis), w.Rate().WithReports(r.Blended, r.Reports).Label("en")
		}
		ws = append(ws, it)
	}
	return des, ws, nil
}

func rateAt(rs []outcome.Rate, i int, curated float64) outcome.Rate {
	if i < len(rs) {
		return rs[i]
	}
	return outcome.Rate{Curated: curated, Blended: curated, PriorWeight: outcome.PriorWeight}
}

func item(i int, action, detail, cond string, sources []string, r outcome.Rate) EntryItem {
	return EntryItem{Item: i + 1, Index: i, Action: action, Detail: detail, Rate: r.Blended, Curated: r.Curated,
		Reports: r.Reports, Worked: r.Worked, Failed: r.Failed, Condition: cond, Sources: sources}
}

// rateOf and shown read a diagnosis item's rate: the blended one when the
// service has a store, else the curated one.
func rateOf(curated float64, obs *outcome.Rate, basis kb.Basis, label string) Rate {
	if obs == nil {
		return Rate{Curated: curated, Basis: string(basis), Label: label, PriorWeight: outcome.PriorWeight}
	}
	return Rate{Curated: obs.Curated, Basis: string(basis), Label: label, Reports: obs.Reports, Worked: obs.Worked, Failed: obs.Failed, PriorWeight: obs.PriorWeight}
}

func shown(curated float64, obs *outcome.Rate) float64 {
	if obs == nil {
		return curated
	}
	return obs.Blended
}

func lookupText(msg string, out *LookupOut) string {
	var b strings.Builder
	if len(out.Matches) == 0 {
		fmt.Fprintf(&b, "No entry matches %q. Try search_entries with fewer or other words, or diagnose_log with the whole log.\n", view.Clip(msg, 120))
		return b.String()
	}
	best := out.Matches[0]
	how := "only its words or name matched, not its message pattern"
	if best.RegexMatched {
		how = "its message pattern matched the text"
	}
	fmt.Fprintf(&b, "Best match: %s (%s)\n  %s\n  Root cause: %s\n", best.ID, how, view.Clip(best.Signature, 200), view.Clip(best.RootCause, 600))
	writeEntryItems(&b, best.DeadEnds, best.Workarounds)
	if len(out.Matches) > 1 {
		b.WriteString("Other candidates:\n")
		for _, m := range out.Matches[1:] {
			tag := ""
			if m.RegexMatched {
				tag = " (pattern matched)"
			}
			fmt.Fprintf(&b, "- %s%s: %s\n", m.ID, tag, view.Clip(m.Signature, 120))
		}
	}
	b.WriteString("Conditions were not checked against a log: diagnose_log does that. get_entry shows an entry in full.\n")
	return b.String()
}

func writeEntryItems(b *strings.Builder, des, ws []EntryItem) {
	if len(des) > 0 {
		b.WriteString("  Do not try first (usually fails):\n")
		for _, x := range des {
			fmt.Fprintf(b, "  ✗ dead_end item %d: %s (fails %s)%s\n", x.Item, x.Action, x.Label, when(x.Condition))
		}
	}
	if len(ws) > 0 {
		b.WriteString("  Try:\n")
		for _, w := range ws {
			fmt.Fprintf(b, "  ✓ workaround item %d: %s (%s)%s\n    how: %s\n", w.Item, w.Action, worksLabel(w.Kind, w.Label), when(w.Condition), w.Detail)
		}
	}
}

func when(cond string) string {
	if cond == "" {
		return ""
	}
	return " [when " + cond + "]"
}
