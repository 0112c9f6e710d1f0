package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gpudx/gpudx/internal/service"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/outcome"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ReportIn is report_outcome's input.
type ReportIn struct {
	EntryID   string `json:"entry_id" jsonschema:"the entry id, as diagnose_log or lookup_error gave it (e.g. pytorch/cuda-out-of-memory)"`
	Kind      string `json:"kind" jsonschema:"workaround or dead_end: which list the item is in"`
	Item      int    `json:"item,omitempty" jsonschema:"the item's number in its entry, from 1, as the answer's item field and [... item N] give it (not its position in a printed list)"`
	Index     *int   `json:"index,omitempty" jsonschema:"instead of item: the same number counted from 0 (item - 1), as earlier answers gave it"`
	Worked    bool   `json:"worked" jsonschema:"true when the action fixed the error, false when it did not"`
	Note      string `json:"note,omitempty" jsonschema:"optional: what you saw (versions, what else you changed), at most 2000 bytes; stored, not shown"`
	RequestID string `json:"request_id,omitempty" jsonschema:"optional: a unique id for this report (a UUID); sending the same report again with it is not counted twice"`
}

// ReportOut is report_outcome's structured output.
type ReportOut struct {
	Stored    bool    `json:"stored" jsonschema:"true when this call stored a new report"`
	Duplicate bool    `json:"duplicate" jsonschema:"true when a report with this request_id was already stored (nothing counted twice)"`
	EntryID   string  `json:"entry_id"`
	Kind      string  `json:"kind"`
	Item      int     `json:"item" jsonschema:"the item's number in its entry, from 1"`
	Index     int     `json:"index" jsonschema:"item - 1"`
	Action    string  `json:"action" jsonschema:"the item the report is about"`
	Rate      float64 `json:"rate" jsonschema:"the item's new blended rate (success rate of a workaround, fail rate of a dead end), 0 to 1"`
	Curated   float64 `json:"curated_rate"`
	Basis     string  `json:"basis" jsonschema:"what the curated rate rests on: estimate, reports or reproduced; empty for a check"`
	Label     string  `json:"label" jsonschema:"the new rate with its basis, e.g. ≈64%, estimate + 1 report; to find out for a check, which has no rate"`
	Reports   int     `json:"reports" jsonschema:"reports now behind the rate"`
	Worked    int     `json:"worked"`
	Failed    int     `json:"failed"`
}

func (h *handlers) addReport(s *mcp.Server) {
	f := false
	schema := inputSchema[ReportIn]()
	schema.Properties["kind"].Enum = []any{string(outcome.Workaround), string(outcome.DeadEnd)}
	addTool(s, &mcp.Tool{
		InputSchema: schema,
		Name:        "report_outcome",
		Title:       "Report whether a fix worked",
		Description: `Record whether a workaround or dead end from a gpudx answer held when you tried it: entry_id, kind (workaround or dead_end) and item (the item's number in its entry, from 1) exactly as diagnose_log, lookup_error or get_entry gave them, and worked (true: the action fixed the error). The shown rates blend the curated rate with these reports, so report what you tried, whether it worked or not.
Give a request_id to make a retry safe. Fails when the server runs without an outcome database.`,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &f, OpenWorldHint: &f},
	}, h.report)
}

func (h *handlers) report(ctx context.Context, in ReportIn) (*ReportOut, string, error) {
	idx := in.Item - 1
	switch {
	case strings.TrimSpace(in.EntryID) == "":
		return nil, "", errors.New("entry_id is empty: give the entry id from the answer, e.g. pytorch/cuda-out-of-memory")
	case in.Index != nil && in.Item != 0 && *in.Index != in.Item-1:
		return nil, "", fmt.Errorf("item %d and index %d name different items (index counts from 0): give item alone", in.Item, *in.Index)
	case in.Index != nil:
		idx = *in.Index
	case in.Item < 1:
		return nil, "", errors.New("give item: the item's number in its entry, from 1, as the answer's item field gives it")
	}
	rep := outcome.Report{RequestID: in.RequestID, EntryID: strings.TrimSpace(in.EntryID), Kind: outcome.Kind(in.Kind),
		Index: idx, Worked: in.Worked, Note: in.Note}
	dup, err := h.svc.Record(ctx, rep)
	switch {
	case errors.Is(err, service.ErrNoStore):
		return nil, "", errors.New("this server runs without an outcome database, so reports cannot be stored (start gpudx mcp or gpudx serve with a database: drop --no-db, or give --db PATH or a postgres:// URL)")
	case errors.Is(err, outcome.ErrConflict):
		return nil, "", fmt.Errorf("request_id %q was already used for a different report; use a new request_id for a new report (%v)", in.RequestID, err)
	case err != nil:
		return nil, "", h.entryErr(rep.EntryID, err)
	}
	e := h.svc.Entry(rep.EntryID)
	rates, err := h.svc.Rates(ctx, e.ID)
	if err != nil {
		return nil, "", err
	}
	var curated kb.Rate
	r, action, check := rates.Workarounds[rep.Index], e.Workarounds[rep.Index].Action, false
	if rep.Kind == outcome.DeadEnd {
		r, action, curated = rates.DeadEnds[rep.Index], e.DeadEnds[rep.Index].Action, e.DeadEnds[rep.Index].Rate()
	} else {
		w := e.Workarounds[rep.Index]
		curated, check = w.Rate(), w.IsCheck()
	}
	label := curated.WithReports(r.Blended, r.Reports).Label("en")
	if check {
		label = kb.CheckLabel("en")
	}
	out := &ReportOut{Stored: !dup, Duplicate: dup, EntryID: e.ID, Kind: string(rep.Kind), Item: rep.Index + 1, Index: rep.Index,
		Action: action, Rate: r.Blended, Curated: r.Curated, Basis: string(curated.Basis), Label: label,
		Reports: r.Reports, Worked: r.Worked, Failed: r.Failed}
	what := "success rate"
	if rep.Kind == outcome.DeadEnd {
		what = "fail rate"
	}
	head := "Stored."
	if dup {
		head = "Already stored with this request_id; not counted again."
	}
	text := fmt.Sprintf("%s %s %s item %d (%s): %s now %s (%d worked, %d failed); the curated rate is %s.\n",
		head, e.ID, rep.Kind, rep.Index+1, action, what, label, r.Worked, r.Failed, curated.Label("en"))
	if check {
		text = fmt.Sprintf("%s %s %s item %d (%s): a check (%s), which has no success rate; %d report(s) about it (%d worked, %d failed).\n",
			head, e.ID, rep.Kind, rep.Index+1, action, label, r.Reports, r.Worked, r.Failed)
	}
	return out, text, nil
}
