package render

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/env"
	"github.com/gpudx/gpudx/facts"
)

// envLine summarises the environment in one line, or "" when nothing is
// known.
func envLine(e env.Environment, L map[string]string) string {
	var parts []string
	add := func(name, v string) {
		if v != "" {
			parts = append(parts, name+" "+v)
		}
	}
	add("PyTorch", e.Torch)
	add(L["builtcuda"], e.TorchCUDA)
	add("CUDA", e.CUDA)
	add("driver", e.Driver)
	add(L["drvcuda"], e.DriverCUDA)
	add("cuDNN", e.CUDNN)
	add("NCCL", e.NCCL)
	add("Python", e.Python)
	if e.OS != "" {
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

func ranksLine(r *diagnose.RankSummary, o Options, L map[string]string) string {
	if r == nil {
		return ""
	}
	reason := r.Reason
	if o.Lang == "zh" && r.ReasonZh != "" {
		reason = r.ReasonZh
	}
	if r.FirstFailed != nil {
		return fmt.Sprintf(L["rankfirst"], *r.FirstFailed, reason)
	}
	return reason
}

// maxListed bounds the ranks printed in one list; JSON has them all.
const maxListed = 16

// IntList writes xs as a comma list, at most 16 of them and a count of
// the rest (the web page lists ranks as the text output does).
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

// memoryBlock is the out-of-memory arithmetic: the figures, the verdict and
// the advice.
func memoryLines(d *diagnose.Diagnosis, o Options, L map[string]string) (head string, figures string, advice []string) {
	m := d.Memory
	if m == nil {
		return "", "", nil
	}
	reason := m.Reason
	if o.Lang == "zh" && m.ReasonZh != "" {
		reason = m.ReasonZh
	}
	verdict := L["v_"+string(m.Verdict)]
	if verdict == "" {
		verdict = strings.ReplaceAll(string(m.Verdict), "_", " ")
	}
	head = fmt.Sprintf("%s: %s — %s", L["memory"], verdict, reason)
	var fs []string
	add := func(name string, v int64) {
		if v >= 0 {
			fs = append(fs, L[name]+" "+facts.FormatBytes(float64(v)))
		}
	}
	add("m_requested", m.Requested)
	add("m_capacity", m.Capacity)
	add("m_free", m.Free)
	add("m_allocated", m.Allocated)
	add("m_reserved", m.Reserved)
	add("m_unalloc", m.ReservedUnallocated)
	add("m_others", m.OtherProcesses)
	figures = strings.Join(fs, " · ")
	for _, a := range m.Advice {
		t := a.Text
		if o.Lang == "zh" && a.Zh != "" {
			t = a.Zh
		}
		advice = append(advice, t)
	}
	return head, figures, advice
}

func versionLines(d *diagnose.Diagnosis, o Options) []string {
	var out []string
	for _, n := range d.VersionNotes {
		t := n.Text
		if o.Lang == "zh" && n.Zh != "" {
			t = n.Zh
		}
		out = append(out, t)
	}
	return out
}

// condLine says how an item's condition came out.
func condLine(cond string, a diagnose.Applicability, L map[string]string) string {
	if cond == "" {
		return ""
	}
	s := L["when"] + ": " + cond
	switch a.ConditionStatus {
	case "holds":
		s += " — " + L["holds"]
	case "fails":
		s += " — " + L["fails_cond"]
	case "unknown":
		// The reason already says what is not known.
		if r, ok := strings.CutPrefix(a.Reason, "not known: "); ok {
			return s + " — " + L["unknown"] + ": " + r
		}
		if a.Reason != "" {
			return s + " — " + a.Reason
		}
		return s + " — " + L["unknown"]
	}
	if a.Reason != "" {
		s += " (" + a.Reason + ")"
	}
	return s
}

// why is the ranking explanation in the output's language.
func why(d *diagnose.Diagnosis, o Options) []string {
	if o.Lang == "zh" && len(d.WhyZh) == len(d.Why) {
		return d.WhyZh
	}
	return d.Why
}
