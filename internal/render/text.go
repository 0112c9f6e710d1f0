package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/outcome"
)

type painter struct{ on bool }

func (p painter) c(code, s string) string {
	if !p.on || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}
func (p painter) bold(s string) string   { return p.c("1", s) }
func (p painter) red(s string) string    { return p.c("1;31", s) }
func (p painter) green(s string) string  { return p.c("32", s) }
func (p painter) yellow(s string) string { return p.c("33", s) }
func (p painter) dim(s string) string    { return p.c("2", s) }

// indent prefixes every line of s.
func indent(s, pre string) string {
	return pre + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pre)
}

// Text writes the report for a terminal: each root failure in full (what
// went wrong, what not to try, what to do), then the errors that follow from
// it or stand beside it, briefly.
func Text(w io.Writer, r *diagnose.Report, o Options) error {
	L := lang(o)
	p := painter{o.Color}
	var b strings.Builder
	if len(r.Diagnoses) == 0 {
		fmt.Fprintf(&b, "%s.\n", L["none"])
	} else {
		fmt.Fprintf(&b, "%s\n", p.bold(fmt.Sprintf(L["found"], len(r.Diagnoses))))
	}
	fmt.Fprintf(&b, "%s\n", p.dim(fmt.Sprintf(L["read"], group(int64(r.Stats.Lines)), group(r.Stats.Bytes), r.Stats.Entries)))
	if s := envLine(r.Environment, L); s != "" {
		fmt.Fprintf(&b, "%s: %s\n", L["env"], s)
	}
	if s := ranksLine(r.Ranks, o, L); s != "" && len(r.Diagnoses) > 0 {
		fmt.Fprintf(&b, "%s: %s\n", L["ranks"], s)
	}
	// Inputs of more than one job (a minimal form).
	if len(r.Groups) > 1 {
		parts := make([]string, len(r.Groups))
		for i, g := range r.Groups {
			parts[i] = strings.Join(g, ", ")
		}
		fmt.Fprintf(&b, "%s: %s\n", fmt.Sprintf(L["groups"], len(r.Groups)), strings.Join(parts, " | "))
	}
	// What looks like the failure when no entry matched (a minimal form).
	for _, u := range r.Unrecognized {
		at := fmt.Sprintf("%d", u.Line)
		if u.File != "" {
			at = u.File + ":" + at
		}
		fmt.Fprintf(&b, "\n%s %s: %s\n", p.bold(L["unrecognized"]), at, u.Text)
		if len(u.Nearest) > 0 {
			ids := make([]string, len(u.Nearest))
			for i, n := range u.Nearest {
				ids[i] = n.ID
			}
			fmt.Fprintf(&b, "  %s: %s (%s)\n", L["nearest"], strings.Join(ids, ", "), L["sure_"+u.Sure])
		}
	}
	for _, d := range r.Diagnoses {
		b.WriteString("\n")
		if d.Root {
			textFull(&b, d, o, p, L)
		} else {
			textBrief(&b, d, o, p, L)
		}
		if o.Explain && len(d.Why) > 0 {
			fmt.Fprintf(&b, "  %s:\n", p.bold(L["whyhere"]))
			for _, w := range why(d, o) {
				fmt.Fprintf(&b, "    - %s\n", w)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func where(d *diagnose.Diagnosis, L map[string]string) string {
	s := fmt.Sprintf(L["lines"], lineSpan(d))
	if d.File != "" {
		s = d.File + ": " + s
	}
	if d.Count > 1 {
		s += "  " + fmt.Sprintf(L["times"], d.Count)
	}
	if len(d.Ranks) > 0 {
		s += "  " + fmt.Sprintf(L["onranks"], IntList(d.Ranks))
	}
	return s
}

func textFull(b *strings.Builder, d *diagnose.Diagnosis, o Options, p painter, L map[string]string) {
	fmt.Fprintf(b, "%s  %s  %s\n", p.red("● "+L["root"]), p.bold(d.ID), p.dim(where(d, L)))
	fmt.Fprintf(b, "  %s\n", p.bold(signature(d, o)))
	fmt.Fprintf(b, "\n  %s\n%s\n", p.bold(L["what"]), indent(rootCause(d, o), "    "))
	if len(d.Evidence) > 0 {
		fmt.Fprintf(b, "\n  %s\n", p.bold(L["evidence"]))
		for _, e := range d.Evidence {
			fmt.Fprintf(b, "    %s %s\n", p.dim(fmt.Sprintf("%d:", e.Line)), e.Text)
		}
	}
	if len(d.Facts) > 0 {
		fmt.Fprintf(b, "\n  %s: %s\n", p.bold(L["facts"]), factList(d.Facts))
	}
	if line, next := OperatorLine(d.Operator, o.Lang); line != "" {
		fmt.Fprintf(b, "\n  %s: %s\n%s\n", p.bold(L["operator"]), line, indent("→ "+next, "    "))
	}
	if len(d.Files) > 1 {
		parts := make([]string, len(d.Files))
		for i, f := range d.Files {
			parts[i] = fmt.Sprintf("%s:%d ×%d", f.File, f.FirstLine, f.Count)
		}
		fmt.Fprintf(b, "  %s: %s\n", L["seenin"], strings.Join(parts, ", "))
	}
	if head, figs, advice := memoryLines(d, o, L); head != "" {
		fmt.Fprintf(b, "\n  %s\n", p.bold(head))
		if figs != "" {
			fmt.Fprintf(b, "    %s\n", p.dim(figs))
		}
		for _, a := range advice {
			fmt.Fprintf(b, "%s\n", indent("→ "+a, "    "))
		}
	}
	if vs := versionLines(d, o); len(vs) > 0 {
		fmt.Fprintf(b, "\n  %s\n", p.bold(L["versions"]))
		for _, v := range vs {
			fmt.Fprintf(b, "    %s\n", v)
		}
	}
	writeDeadEnds(b, d.DeadEnds, 0, o, p, L)
	writeWorkarounds(b, d.Workarounds, 1, o, p, L)
	if len(d.LeadsTo) > 0 {
		fmt.Fprintf(b, "\n  %s: %s\n", L["leads"], strings.Join(d.LeadsTo, ", "))
	}
	if len(d.Subsumes) > 0 {
		fmt.Fprintf(b, "  %s: %s\n", L["subsumes"], strings.Join(d.Subsumes, ", "))
	}
	tail := fmt.Sprintf(L["tier"], d.VerificationTier, d.Confidence)
	if d.OfficialDocURL != "" {
		tail += " · " + L["doc"] + ": " + d.OfficialDocURL
	}
	fmt.Fprintf(b, "  %s\n", p.dim(tail))
}

func textBrief(b *strings.Builder, d *diagnose.Diagnosis, o Options, p painter, L map[string]string) {
	head := L["also"]
	if len(d.CausedBy) > 0 {
		head = fmt.Sprintf(L["followup"], strings.Join(d.CausedBy, ", "))
	}
	fmt.Fprintf(b, "%s  %s  %s\n", p.yellow("○ "+head), p.bold(d.ID), p.dim(where(d, L)))
	fmt.Fprintf(b, "  %s\n", signature(d, o))
	if len(d.Evidence) > 0 {
		fmt.Fprintf(b, "    %s %s\n", p.dim(fmt.Sprintf("%d:", d.Evidence[0].Line)), d.Evidence[0].Text)
	}
	if len(d.Facts) > 0 {
		fmt.Fprintf(b, "  %s: %s\n", L["facts"], factList(d.Facts))
	}
	if line, _ := OperatorLine(d.Operator, o.Lang); line != "" {
		fmt.Fprintf(b, "  %s: %s\n", L["operator"], line)
	}
	fmt.Fprintf(b, "  %s\n", p.dim(fmt.Sprintf(L["more"], d.ID)))
}

// writeDeadEnds writes the "don't waste time on" block with at most
// maxSources sources per item (-1 for all). Items are numbered as in the
// entry (Index+1), the numbers `gpudx report --dead-end` takes, whatever
// order the diagnosis put them in.
func writeDeadEnds(b *strings.Builder, items []diagnose.DeadEnd, maxSources int, o Options, p painter, L map[string]string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "\n  %s\n", p.yellow(L["dead"]))
	for _, x := range items {
		rate := p.dim("(" + fmt.Sprintf(L["fails"], pct(x.FailRate)) + observed(x.Observed, o) + ")")
		if !x.Applies {
			rate += " " + p.dim("["+L["notapply"]+"]")
		}
		if o.Lang == "zh" && x.Zh != "" {
			fmt.Fprintf(b, "    ✗ %d. %s %s\n", x.Index+1, x.Zh, rate)
		} else {
			fmt.Fprintf(b, "    ✗ %d. %s %s\n", x.Index+1, x.Action, rate)
			fmt.Fprintf(b, "%s\n", indent(L["why"]+": "+x.WhyFails, "         "))
		}
		if c := condLine(x.Condition, x.Applicability, L); c != "" {
			fmt.Fprintf(b, "         %s\n", c)
		}
		for _, s := range firstN(x.Sources, maxSources) {
			fmt.Fprintf(b, "         %s\n", p.dim(L["src"]+": "+s))
		}
	}
}

// writeWorkarounds writes the "do now" block in the given order, each
// numbered as in the entry (Index+1), the numbers `gpudx report
// --workaround` takes.
func writeWorkarounds(b *strings.Builder, items []diagnose.Workaround, maxSources int, o Options, p painter, L map[string]string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "\n  %s\n", p.green(L["do"]))
	for _, x := range items {
		text := x.Action
		if o.Lang == "zh" && x.Zh != "" {
			text = x.Zh
		}
		rate := p.dim("(" + fmt.Sprintf(L["works"], pct(x.SuccessRate)) + observed(x.Observed, o) + ")")
		if !x.Applies {
			rate += " " + p.dim("["+L["notapply"]+"]")
		}
		fmt.Fprintf(b, "    %d. %s %s\n", x.Index+1, text, rate)
		if x.How != "" {
			fmt.Fprintf(b, "%s\n", indent(x.How, "       │ "))
		}
		if c := condLine(x.Condition, x.Applicability, L); c != "" {
			fmt.Fprintf(b, "       %s\n", c)
		}
		for _, s := range firstN(x.Sources, maxSources) {
			fmt.Fprintf(b, "       %s\n", p.dim(L["src"]+": "+s))
		}
	}
}

// observed follows a curated rate with the rate blended with reported
// outcomes (" → 55% with 3 reports"); "" when nobody reported any.
func observed(r *outcome.Rate, o Options) string {
	if r == nil || r.Reports == 0 {
		return ""
	}
	if o.Lang == "zh" {
		return fmt.Sprintf(" → %d%%，计入 %d 份反馈", pct(r.Blended), r.Reports)
	}
	return fmt.Sprintf(" → %d%% with %s", pct(r.Blended), plural(r.Reports, "report"))
}

// plural writes n things in English.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func firstN(s []string, n int) []string {
	if n < 0 || n > len(s) {
		return s
	}
	return s[:n]
}
