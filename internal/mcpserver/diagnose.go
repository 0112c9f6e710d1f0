package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/env"
	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/internal/view"
	"github.com/gpudx/gpudx/kb"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DiagnoseIn is diagnose_log's input.
type DiagnoseIn struct {
	Log  string `json:"log,omitempty" jsonschema:"the job's output as text (stdout/stderr, torchrun output, dmesg), at most 64 MiB; give log or path"`
	Path string `json:"path,omitempty" jsonschema:"a log file to read (plain or gzip, any size, streamed); only when gpudx runs on your machine (gpudx mcp over stdio), refused over HTTP; give log or path"`
	Env  string `json:"env,omitempty" jsonschema:"optional captured environment: the output of python -m torch.utils.collect_env, nvidia-smi or pip list (at most 1 MiB); makes version conditions decidable"`
}

// DiagnoseOut is diagnose_log's structured output.
type DiagnoseOut struct {
	Summary     string          `json:"summary" jsonschema:"one line: how many known errors and the root cause"`
	RootCauses  []string        `json:"root_causes" jsonschema:"ids of the diagnoses marked root (fix these first; the others follow from them)"`
	Diagnoses   []Diagnosis     `json:"diagnoses" jsonschema:"known errors found, root causes first"`
	Environment env.Environment `json:"environment" jsonschema:"versions and GPUs read from the log and env"`
	Ranks       *Ranks          `json:"ranks,omitempty" jsonschema:"for a distributed job: which rank failed first and which only waited"`
	Lines       int             `json:"lines" jsonschema:"lines read"`
	Bytes       int64           `json:"bytes" jsonschema:"bytes read"`
	Entries     int             `json:"entries" jsonschema:"knowledge-base entries checked"`
	// Unrecognized is what looks like the failure when no entry matched
	// it, as in gpudx diagnose --format json.
	Unrecognized []diagnose.Unrecognized `json:"unrecognized,omitempty" jsonschema:"lines that look like the failure but match no entry, with the nearest entries and how sure that is"`
}

// Ranks says which rank of a distributed job failed first.
type Ranks struct {
	FirstFailed *int   `json:"first_failed,omitempty" jsonschema:"the rank that failed first, when known"`
	Failed      []int  `json:"failed" jsonschema:"ranks that reported an error of their own"`
	OnlyWaited  []int  `json:"only_waited" jsonschema:"ranks that only timed out or were torn down waiting for a failed one"`
	OnlyWaiters bool   `json:"only_waiters,omitempty" jsonschema:"no rank printed an error of its own: every rank seen only waited"`
	PointedAt   []int  `json:"pointed_at,omitempty" jsonschema:"ranks the waiting ranks' lines point at (desync report, last enqueued collective, collective timed out in)"`
	Reason      string `json:"reason" jsonschema:"how this was decided"`
}

// Diagnosis is one known error found in the log.
type Diagnosis struct {
	ID          string            `json:"id" jsonschema:"entry id (domain/slug); give it to get_entry or report_outcome"`
	Signature   string            `json:"signature" jsonschema:"the error as it usually reads"`
	Domain      string            `json:"domain"`
	Category    string            `json:"category"`
	ErrorCode   string            `json:"error_code,omitempty"`
	Root        bool              `json:"root" jsonschema:"true for a root cause; false for an error caused by another one or of less weight"`
	CausedBy    []string          `json:"caused_by,omitempty" jsonschema:"ids of the diagnoses that lead to this one"`
	Count       int               `json:"count" jsonschema:"how many lines matched"`
	FirstLine   int               `json:"first_line" jsonschema:"line number of the first match, from 1"`
	Ranks       []int             `json:"ranks,omitempty" jsonschema:"ranks whose lines matched"`
	Evidence    []Evidence        `json:"evidence" jsonschema:"matching lines, the first ones and the last"`
	RootCause   string            `json:"root_cause" jsonschema:"what went wrong"`
	Why         []string          `json:"why" jsonschema:"why the diagnosis is ranked where it is"`
	Facts       map[string]string `json:"facts" jsonschema:"figures read from the message (sizes, ids, versions) as text"`
	Memory      *Memory           `json:"memory,omitempty" jsonschema:"for an out-of-memory message: the arithmetic and its verdict"`
	Operator    *kb.Operator      `json:"operator,omitempty" jsonschema:"for a driver or hardware event (Xid): severity, whose fault, whether to drain the node, NVIDIA's resolution bucket and the operator's next step"`
	DeadEnds    []DeadEnd         `json:"dead_ends" jsonschema:"what NOT to try first: actions that usually fail for this error, ordered with those that apply here first"`
	Workarounds []Workaround      `json:"workarounds" jsonschema:"what to try: fixes with their success rate, ordered with those that apply here first"`
	LeadsTo     []string          `json:"leads_to,omitempty" jsonschema:"errors this one is known to cause"`
	DocURL      string            `json:"doc_url,omitempty" jsonschema:"official documentation"`
}

// Evidence is one matching line.
type Evidence struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// Memory is the out-of-memory arithmetic of a message. Byte figures are
// -1 where the message does not give them.
type Memory struct {
	Verdict             string   `json:"verdict" jsonschema:"fragmentation, live_tensors, other_process, exceeds_card or unknown"`
	Reason              string   `json:"reason" jsonschema:"the verdict with its figures"`
	Advice              []string `json:"advice" jsonschema:"numeric advice for these figures, most useful first"`
	GPU                 int      `json:"gpu" jsonschema:"-1 when unknown"`
	Requested           int64    `json:"requested_bytes"`
	Capacity            int64    `json:"capacity_bytes"`
	Free                int64    `json:"free_bytes"`
	Allocated           int64    `json:"allocated_bytes"`
	Reserved            int64    `json:"reserved_bytes"`
	ReservedUnallocated int64    `json:"reserved_unallocated_bytes"`
	OtherProcesses      int64    `json:"other_processes_bytes"`
}

// Applicability is whether an item's condition holds for this log.
type Applicability struct {
	Applies         bool   `json:"applies" jsonschema:"false only when the item's condition is known not to hold for this log"`
	Condition       string `json:"condition,omitempty" jsonschema:"the condition written on the item (an expression over facts and env)"`
	ConditionStatus string `json:"condition_status,omitempty" jsonschema:"holds, fails or unknown (a value is missing)"`
	ConditionReason string `json:"condition_reason,omitempty" jsonschema:"the values the condition read"`
}

// DeadEnd is an action that does not fix the error.
type DeadEnd struct {
	N        int      `json:"n" jsonschema:"its number in this answer's list, from 1, in the order shown"`
	Item     int      `json:"item" jsonschema:"its number in the entry, from 1: report_outcome's item with kind dead_end"`
	Index    int      `json:"index" jsonschema:"the entry position counted from 0 (item - 1)"`
	Action   string   `json:"action"`
	WhyFails string   `json:"why_fails"`
	FailRate float64  `json:"fail_rate" jsonschema:"how often it fails, 0 to 1: the curated rate blended with reported outcomes when there are reports"`
	Rate     Rate     `json:"rate" jsonschema:"what fail_rate is made of and rests on"`
	Sources  []string `json:"sources"`
	Applicability
}

// Workaround is an action that fixes or avoids the error.
type Workaround struct {
	N           int      `json:"n" jsonschema:"its number in this answer's list, from 1, in the order shown"`
	Item        int      `json:"item" jsonschema:"its number in the entry, from 1: report_outcome's item with kind workaround"`
	Index       int      `json:"index" jsonschema:"the entry position counted from 0 (item - 1)"`
	Action      string   `json:"action"`
	How         string   `json:"how" jsonschema:"the command or code to run"`
	Kind        string   `json:"kind" jsonschema:"fix, or check: a diagnostic step that finds out what is wrong, with no success rate"`
	SuccessRate float64  `json:"success_rate" jsonschema:"how often it works, 0 to 1: the curated rate blended with reported outcomes when there are reports; 0 for a check"`
	Rate        Rate     `json:"rate" jsonschema:"what success_rate is made of and rests on"`
	Sources     []string `json:"sources"`
	Applicability
}

// Rate says what a shown rate is made of.
type Rate struct {
	Curated     float64 `json:"curated" jsonschema:"the knowledge base's rate"`
	Basis       string  `json:"basis" jsonschema:"what the curated rate rests on: estimate (an editorial estimate), reports (counted from outcome reports) or reproduced (on real hardware); empty for a check"`
	Label       string  `json:"label" jsonschema:"the shown rate with its basis, e.g. ~60%, estimate or ≈65%, estimate + 3 reports; to find out for a check"`
	Reports     int     `json:"reports" jsonschema:"outcome reports blended in (0: the curated rate alone)"`
	Worked      int     `json:"worked" jsonschema:"reports that said the action fixed the error"`
	Failed      int     `json:"failed" jsonschema:"reports that said it did not"`
	PriorWeight int     `json:"prior_weight" jsonschema:"how many reports the curated rate counts as in the blend"`
}

func (h *handlers) addDiagnose(s *mcp.Server) {
	addTool(s, &mcp.Tool{
		Name:  "diagnose_log",
		Title: "Diagnose a GPU job's log",
		Description: `Find the known GPU errors in a failed job's output (CUDA errors, out-of-memory, NCCL timeouts and errors, Xid events, cuDNN/cuBLAS failures) and say what really went wrong.
Returns the root cause first (errors that only follow from it come after), which rank of a distributed job failed first, the out-of-memory arithmetic when there is one, dead ends (actions that usually do not help: do not try them first) and workarounds with success rates, each marked with whether its condition holds for this log.
Give the log text in "log", or, when gpudx runs locally (stdio), a file in "path". Items are numbered from 1 in the order shown ("n"); "item" is an item's number in its entry, which report_outcome takes.`,
		Annotations: readOnly(),
		InputSchema: h.fileSchema(inputSchema[DiagnoseIn]()),
	}, h.diagnose)
}

func (h *handlers) diagnose(ctx context.Context, in DiagnoseIn) (*DiagnoseOut, string, error) {
	var r io.Reader
	switch {
	case in.Log != "" && in.Path != "":
		return nil, "", errors.New("give log or path, not both")
	case in.Path != "":
		f, name, err := h.openPath("path", in.Path)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		if r, err = logReader(f, name); err != nil {
			return nil, "", err
		}
	case in.Log != "":
		if len(in.Log) > MaxLogBytes {
			return nil, "", fmt.Errorf("log is %d bytes, more than the %d (64 MiB) accepted; send the last 64 MiB (the failure is usually near the end)%s", len(in.Log), MaxLogBytes, h.pathHint())
		}
		if strings.IndexByte(in.Log[:min(len(in.Log), 8<<10)], 0) >= 0 {
			return nil, "", errors.New("log holds NUL bytes: it is binary data, not a log")
		}
		r = strings.NewReader(in.Log)
	default:
		return nil, "", errors.New(`no log: give the job's output in "log"` + h.pathHint())
	}
	rep, err := h.svc.Diagnose(ctx, r, in.Env)
	if err != nil {
		return nil, "", err
	}
	out := diagnoseOut(rep)
	return out, diagnoseText(view.Build(rep, "en")), nil
}

func (h *handlers) pathHint() string {
	if h.opt.AllowFiles {
		return `, or a file in "path"`
	}
	return ""
}

func diagnoseOut(rep *diagnose.Report) *DiagnoseOut {
	out := &DiagnoseOut{
		RootCauses:  []string{},
		Diagnoses:   []Diagnosis{},
		Environment: rep.Environment,
		Lines:       rep.Stats.Lines,
		Bytes:       rep.Stats.Bytes,
		Entries:     rep.Stats.Entries,

		Unrecognized: rep.Unrecognized,
	}
	if rk := rep.Ranks; rk != nil {
		out.Ranks = &Ranks{FirstFailed: rk.FirstFailed, Failed: nonNil(rk.Failed), OnlyWaited: nonNil(rk.OnlyWaited),
			OnlyWaiters: rk.OnlyWaiters, PointedAt: rk.PointedAt, Reason: rk.Reason}
	}
	for _, d := range rep.Diagnoses {
		if d.Root {
			out.RootCauses = append(out.RootCauses, d.ID)
		}
		out.Diagnoses = append(out.Diagnoses, diagnosisOut(d))
	}
	switch {
	case len(out.Diagnoses) == 0:
		out.Summary = fmt.Sprintf("no known GPU error found in %d lines", out.Lines)
	case len(out.RootCauses) > 0:
		out.Summary = fmt.Sprintf("%d known error(s) found; root cause: %s", len(out.Diagnoses), strings.Join(out.RootCauses, ", "))
	default:
		out.Summary = fmt.Sprintf("%d known error(s) found; first: %s", len(out.Diagnoses), out.Diagnoses[0].ID)
	}
	return out
}

func diagnosisOut(d *diagnose.Diagnosis) Diagnosis {
	o := Diagnosis{
		ID: d.ID, Signature: d.Signature, Domain: d.Domain, Category: d.Category, ErrorCode: d.ErrorCode,
		Root: d.Root, CausedBy: d.CausedBy, Count: d.Count, FirstLine: d.FirstLine, Ranks: d.Ranks,
		Evidence: []Evidence{}, RootCause: d.RootCause, Why: nonNil(d.Why), Facts: factText(d.Facts),
		DeadEnds: []DeadEnd{}, Workarounds: []Workaround{}, LeadsTo: d.LeadsTo, DocURL: d.OfficialDocURL,
		Operator: d.Operator,
	}
	for _, e := range d.Evidence {
		o.Evidence = append(o.Evidence, Evidence{Line: e.Line, Text: e.Text})
	}
	if m := d.Memory; m != nil {
		o.Memory = &Memory{Verdict: string(m.Verdict), Reason: m.Reason, Advice: []string{}, GPU: m.GPU,
			Requested: m.Requested, Capacity: m.Capacity, Free: m.Free, Allocated: m.Allocated,
			Reserved: m.Reserved, ReservedUnallocated: m.ReservedUnallocated, OtherProcesses: m.OtherProcesses}
		for _, a := range m.Advice {
			o.Memory.Advice = append(o.Memory.Advice, a.Text)
		}
	}
	for i, x := range d.DeadEnds {
		rate := rateOf(x.FailRate, x.Observed, x.RateBasis, x.RateLabel("en"))
		o.DeadEnds = append(o.DeadEnds, DeadEnd{N: i + 1, Item: x.Index + 1, Index: x.Index, Action: x.Action, WhyFails: x.WhyFails,
			FailRate: shown(x.FailRate, x.Observed), Rate: rate, Sources: nonNil(x.Sources),
			Applicability: condOf(x.Condition, x.Applicability)})
	}
	for i, w := range d.Workarounds {
		rate := rateOf(w.SuccessRate, w.Observed, w.RateBasis, w.RateLabel("en"))
		o.Workarounds = append(o.Workarounds, Workaround{N: i + 1, Item: w.Index + 1, Index: w.Index, Action: w.Action, How: w.How, Kind: w.Kind,
			SuccessRate: shown(w.SuccessRate, w.Observed), Rate: rate, Sources: nonNil(w.Sources),
			Applicability: condOf(w.Condition, w.Applicability)})
	}
	return o
}

func condOf(cond string, a diagnose.Applicability) Applicability {
	return Applicability{Applies: a.Applies, Condition: cond, ConditionStatus: a.ConditionStatus, ConditionReason: a.Reason}
}

func factText(fs map[string]facts.Fact) map[string]string {
	m := make(map[string]string, len(fs))
	for k, f := range fs {
		m[k] = f.String()
	}
	return m
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// diagnoseText is the short answer, read from the same view as the
// terminal's: the root cause, what not to try first, what to try, then the
// rest in a line each. Item numbers are the indexes report_outcome takes.
func diagnoseText(v *view.Report) string {
	var b strings.Builder
	if v.None {
		fmt.Fprintf(&b, "No known GPU error found (%s).", v.Read)
		if len(v.Unrecognized) == 0 {
			b.WriteString(" If the job failed, the error may be one gpudx does not know: try lookup_error with the last error line, or search_entries with its words.\n")
			return b.String()
		}
		b.WriteString(" These lines look like the failure but no entry matches them:\n")
		for _, u := range v.Unrecognized {
			fmt.Fprintf(&b, "- %s: %s\n", u.At, view.Clip(u.Text, 300))
			if len(u.Nearest) > 0 {
				fmt.Fprintf(&b, "  nearest entries: %s (%s)\n", strings.Join(u.Nearest, ", "), u.Sure)
			}
		}
		return b.String()
	}
	fmt.Fprintf(&b, "%s (%s).\n", view.T(v.Lang, "found", v.Count), v.Read)
	if v.Ranks != "" {
		fmt.Fprintf(&b, "Ranks: %s\n", v.Ranks)
	}
	// Full advice for the root causes (at most 3; the first diagnosis when
	// none is marked root), a line for each other one.
	var full, rest []*view.Diagnosis
	for i := range v.Diagnoses {
		d := &v.Diagnoses[i]
		if d.Kind == "root" && len(full) < 3 {
			full = append(full, d)
		} else {
			rest = append(rest, d)
		}
	}
	if len(full) == 0 {
		full, rest = []*view.Diagnosis{rest[0]}, rest[1:]
	}
	for _, d := range full {
		label := "Root cause"
		if d.Kind != "root" {
			label = "Found"
		}
		fmt.Fprintf(&b, "\n%s: %s (%s)\n  %s\n", label, d.ID, d.Where(v.Lang, ", "), d.Title)
		if len(d.Evidence) > 0 {
			fmt.Fprintf(&b, "  line %d: %s\n", d.Evidence[0].Line, view.Clip(d.Evidence[0].Text, 300))
		}
		if m := d.Memory; m != nil {
			fmt.Fprintf(&b, "  Memory: %s: %s\n", m.Verdict, m.Reason)
		}
		if d.Operator != "" {
			fmt.Fprintf(&b, "  Operator: %s. %s\n", d.Operator, d.OpNext)
		}
		writeItems(&b, d)
	}
	if len(rest) > 0 {
		b.WriteString("\nAlso found:\n")
		for _, d := range rest {
			fmt.Fprintf(&b, "- %s (%s)", d.ID, d.Where(v.Lang, ", "))
			if len(d.CausedBy) > 0 {
				fmt.Fprintf(&b, ", caused by %s", strings.Join(d.CausedBy, ", "))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\nAfter trying an item, call report_outcome with its entry id, kind (dead_end or workaround) and item (the number in brackets).\n")
	return b.String()
}

// writeItems writes the dead ends that apply, then the workarounds that
// apply, and counts the ones whose condition does not hold.
func writeItems(b *strings.Builder, d *view.Diagnosis) {
	var skipped int
	wrote := false
	for _, x := range d.DeadEnds {
		if !x.Applies {
			skipped++
			continue
		}
		if !wrote {
			b.WriteString("  Do not try first (usually fails):\n")
			wrote = true
		}
		fmt.Fprintf(b, "  ✗ %d. %s (%s)%s [dead_end item %d]\n", x.N, x.Text, x.Rate, unknownNote(x), x.Index+1)
		if x.Why != "" {
			fmt.Fprintf(b, "    why: %s\n", x.Why)
		}
	}
	for _, list := range []struct {
		head  string
		items []view.Item
	}{{"  To find out (checks, not fixes):\n", d.Checks}, {"  Try (best first):\n", d.Work}} {
		wrote = false
		for _, w := range list.items {
			if !w.Applies {
				skipped++
				continue
			}
			if !wrote {
				b.WriteString(list.head)
				wrote = true
			}
			rate := ""
			if w.Rate != "" {
				rate = " (" + w.Rate + ")"
			}
			fmt.Fprintf(b, "  ✓ %d. %s%s%s [workaround item %d]\n    how: %s\n", w.N, w.Text, rate, unknownNote(w), w.Index+1, w.How)
		}
	}
	if skipped > 0 {
		fmt.Fprintf(b, "  (%d more item(s) of %s do not apply to this log: their condition fails; see the structured result)\n", skipped, d.ID)
	}
}

func unknownNote(x view.Item) string {
	if x.Status == "unknown" {
		return " [may not apply: " + x.Reason + "]"
	}
	return ""
}

// worksLabel is "works <rate, basis>" for a fix and "to find out" for a
// check.
func worksLabel(kind, label string) string {
	if kind == kb.KindCheck {
		return label
	}
	return "works " + label
}
