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
	"github.com/gpudx/gpudx/internal/render"
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
}

// Ranks says which rank of a distributed job failed first.
type Ranks struct {
	FirstFailed *int   `json:"first_failed,omitempty" jsonschema:"the rank that failed first, when known"`
	Failed      []int  `json:"failed" jsonschema:"ranks that reported an error of their own"`
	OnlyWaited  []int  `json:"only_waited" jsonschema:"ranks that only timed out or were torn down waiting for a failed one"`
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
	Index    int      `json:"index" jsonschema:"position in the entry, from 0: report_outcome's index with kind dead_end"`
	Action   string   `json:"action"`
	WhyFails string   `json:"why_fails"`
	FailRate float64  `json:"fail_rate" jsonschema:"how often it fails, 0 to 1: the curated rate blended with reported outcomes when there are reports"`
	Rate     Rate     `json:"rate" jsonschema:"what fail_rate is made of and rests on"`
	Sources  []string `json:"sources"`
	Applicability
}

// Workaround is an action that fixes or avoids the error.
type Workaround struct {
	Index       int      `json:"index" jsonschema:"position in the entry, from 0: report_outcome's index with kind workaround"`
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
Give the log text in "log", or, when gpudx runs locally (stdio), a file in "path". Indexes in the answer are what report_outcome takes.`,
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
	return out, diagnoseText(out), nil
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
	}
	if rk := rep.Ranks; rk != nil {
		out.Ranks = &Ranks{FirstFailed: rk.FirstFailed, Failed: nonNil(rk.Failed), OnlyWaited: nonNil(rk.OnlyWaited), Reason: rk.Reason}
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
	for _, x := range d.DeadEnds {
		rate := rateOf(x.FailRate, x.Observed, x.RateBasis, x.RateLabel("en"))
		o.DeadEnds = append(o.DeadEnds, DeadEnd{Index: x.Index, Action: x.Action, WhyFails: x.WhyFails,
			FailRate: shown(x.FailRate, x.Observed), Rate: rate, Sources: nonNil(x.Sources),
			Applicability: condOf(x.Condition, x.Applicability)})
	}
	for _, w := range d.Workarounds {
		rate := rateOf(w.SuccessRate, w.Observed, w.RateBasis, w.RateLabel("en"))
		o.Workarounds = append(o.Workarounds, Workaround{Index: w.Index, Action: w.Action, How: w.How, Kind: w.Kind,
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

// diagnoseText is the short answer: the root cause, what not to try
// first, what to try, then the rest in a line each.
func diagnoseText(out *DiagnoseOut) string {
	var b strings.Builder
	if len(out.Diagnoses) == 0 {
		fmt.Fprintf(&b, "No known GPU error found (%d lines read, %d entries checked). If the job failed, the error may be one gpudx does not know: try lookup_error with the last error line, or search_entries with its words.\n", out.Lines, out.Entries)
		return b.String()
	}
	fmt.Fprintf(&b, "%d known error(s) found in %d lines.\n", len(out.Diagnoses), out.Lines)
	if out.Ranks != nil && out.Ranks.Reason != "" {
		if out.Ranks.FirstFailed != nil {
			fmt.Fprintf(&b, "Ranks: rank %d failed first (%s)\n", *out.Ranks.FirstFailed, out.Ranks.Reason)
		} else {
			fmt.Fprintf(&b, "Ranks: %s\n", out.Ranks.Reason)
		}
	}
	// Full advice for the root causes (or the first diagnosis when none is
	// marked root), a line for each other one.
	var full, rest []*Diagnosis
	for i := range out.Diagnoses {
		d := &out.Diagnoses[i]
		if d.Root && len(full) < 3 {
			full = append(full, d)
		} else {
			rest = append(rest, d)
		}
	}
	if len(full) == 0 {
		full, rest = []*Diagnosis{rest[0]}, rest[1:]
	}
	for _, d := range full {
		label := "Root cause"
		if !d.Root {
			label = "Found"
		}
		fmt.Fprintf(&b, "\n%s: %s (%s)\n  %s\n", label, d.ID, where(d), clip(d.Signature, 200))
		if d.Memory != nil {
			fmt.Fprintf(&b, "  Memory: %s: %s\n", d.Memory.Verdict, d.Memory.Reason)
		}
		if line, next := render.OperatorLine(d.Operator, "en"); line != "" {
			fmt.Fprintf(&b, "  Operator: %s. %s\n", line, next)
		}
		writeItems(&b, d.ID, d.DeadEnds, d.Workarounds)
	}
	if len(rest) > 0 {
		b.WriteString("\nAlso found:\n")
		for _, d := range rest {
			fmt.Fprintf(&b, "- %s (%s)", d.ID, where(d))
			if len(d.CausedBy) > 0 {
				fmt.Fprintf(&b, ", caused by %s", strings.Join(d.CausedBy, ", "))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\nAfter trying an item, call report_outcome with its entry id, kind (dead_end or workaround) and index.\n")
	return b.String()
}

func where(d *Diagnosis) string {
	s := fmt.Sprintf("line %d", d.FirstLine)
	if d.Count > 1 {
		s += fmt.Sprintf(", %d matches", d.Count)
	}
	if len(d.Ranks) > 0 {
		rs := make([]string, 0, len(d.Ranks))
		for _, r := range d.Ranks[:min(len(d.Ranks), 16)] {
			rs = append(rs, fmt.Sprint(r))
		}
		s += ", ranks " + strings.Join(rs, ",")
		if len(d.Ranks) > 16 {
			s += ",…"
		}
	}
	return s
}

// writeItems writes the dead ends that apply, then the workarounds that
// apply, and counts the ones whose condition does not hold.
func writeItems(b *strings.Builder, id string, des []DeadEnd, ws []Workaround) {
	var skipped int
	wrote := false
	for _, x := range des {
		if !x.Applies {
			skipped++
			continue
		}
		if !wrote {
			b.WriteString("  Do not try first (usually fails):\n")
			wrote = true
		}
		fmt.Fprintf(b, "  ✗ dead_end %d: %s (fails %s)%s\n    why: %s\n", x.Index, x.Action, x.Rate.Label, unknownNote(x.Applicability), x.WhyFails)
	}
	wrote = false
	for _, w := range ws {
		if !w.Applies {
			skipped++
			continue
		}
		if !wrote {
			b.WriteString("  Try (best first):\n")
			wrote = true
		}
		fmt.Fprintf(b, "  ✓ workaround %d: %s (%s)%s\n    how: %s\n", w.Index, w.Action, worksLabel(w.Kind, w.Rate.Label), unknownNote(w.Applicability), w.How)
	}
	if skipped > 0 {
		fmt.Fprintf(b, "  (%d more item(s) of %s do not apply to this log: their condition fails; see the structured result)\n", skipped, id)
	}
}

func unknownNote(c Applicability) string {
	if c.ConditionStatus == "unknown" {
		return " [may not apply: " + c.ConditionReason + "]"
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

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }
