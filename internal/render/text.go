package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/internal/view"
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
	v := view.Build(r, o.lang())
	l := v.Lang
	p := painter{o.Color}
	var b strings.Builder
	if v.None {
		fmt.Fprintf(&b, "%s.\n", view.T(l, "none"))
	} else {
		fmt.Fprintf(&b, "%s\n", p.bold(view.T(l, "found", v.Count)))
	}
	fmt.Fprintf(&b, "%s\n", p.dim(v.Read))
	if v.Env != "" {
		fmt.Fprintf(&b, "%s: %s\n", view.T(l, "env"), v.Env)
	}
	if v.Ranks != "" && !v.None {
		fmt.Fprintf(&b, "%s: %s\n", view.T(l, "ranks"), v.Ranks)
	}
	for i := range v.Diagnoses {
		d := &v.Diagnoses[i]
		b.WriteString("\n")
		if d.Kind == "root" {
			textFull(&b, d, l, p)
		} else {
			textBrief(&b, d, l, p)
		}
		if o.Explain && len(d.Why) > 0 {
			fmt.Fprintf(&b, "  %s:\n", p.bold(view.T(l, "whyhere")))
			for _, w := range d.Why {
				fmt.Fprintf(&b, "    - %s\n", w)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// factLine writes facts as name=text pairs.
func factLine(fs []view.Fact) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Name + "=" + f.Text
	}
	return strings.Join(parts, "  ")
}

func textFull(b *strings.Builder, d *view.Diagnosis, l string, p painter) {
	fmt.Fprintf(b, "%s  %s  %s\n", p.red("● "+view.T(l, "root")), p.bold(d.ID), p.dim(d.Where(l, "  ")))
	fmt.Fprintf(b, "  %s\n", p.bold(d.Signature))
	fmt.Fprintf(b, "\n  %s\n%s\n", p.bold(view.T(l, "what")), indent(d.RootCause, "    "))
	if len(d.Evidence) > 0 {
		fmt.Fprintf(b, "\n  %s\n", p.bold(view.T(l, "evidence")))
		for _, e := range d.Evidence {
			fmt.Fprintf(b, "    %s %s\n", p.dim(fmt.Sprintf("%d:", e.Line)), e.Text)
		}
	}
	if len(d.Facts) > 0 {
		fmt.Fprintf(b, "\n  %s: %s\n", p.bold(view.T(l, "facts")), factLine(d.Facts))
	}
	if d.Operator != "" {
		fmt.Fprintf(b, "\n  %s: %s\n%s\n", p.bold(view.T(l, "operator")), d.Operator, indent("→ "+d.OpNext, "    "))
	}
	if len(d.SeenIn) > 0 {
		fmt.Fprintf(b, "  %s: %s\n", view.T(l, "seenin"), strings.Join(d.SeenIn, ", "))
	}
	if m := d.Memory; m != nil {
		fmt.Fprintf(b, "\n  %s\n", p.bold(fmt.Sprintf("%s: %s — %s", view.T(l, "memory"), m.Verdict, m.Reason)))
		if len(m.Figures) > 0 {
			fmt.Fprintf(b, "    %s\n", p.dim(figureLine(m.Figures)))
		}
		for _, a := range m.Advice {
			fmt.Fprintf(b, "%s\n", indent("→ "+a, "    "))
		}
	}
	if len(d.Notes) > 0 {
		fmt.Fprintf(b, "\n  %s\n", p.bold(view.T(l, "versions")))
		for _, n := range d.Notes {
			fmt.Fprintf(b, "    %s\n", n)
		}
	}
	writeDeadEnds(b, d.DeadEnds, 0, l, p)
	writeWorkarounds(b, d.Work, 1, l, p)
	if len(d.LeadsTo) > 0 {
		fmt.Fprintf(b, "\n  %s: %s\n", view.T(l, "leads"), strings.Join(d.LeadsTo, ", "))
	}
	if len(d.Subsumes) > 0 {
		fmt.Fprintf(b, "  %s: %s\n", view.T(l, "subsumes"), strings.Join(d.Subsumes, ", "))
	}
	tail := d.Tier
	if d.DocURL != "" {
		tail += " · " + view.T(l, "doc") + ": " + d.DocURL
	}
	fmt.Fprintf(b, "  %s\n", p.dim(tail))
}

// figureLine writes the memory figures as "name value" pairs.
func figureLine(fs []view.Fact) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Name + " " + f.Text
	}
	return strings.Join(parts, " · ")
}

func textBrief(b *strings.Builder, d *view.Diagnosis, l string, p painter) {
	head := view.T(l, "also")
	if d.Kind == "follow" {
		head = view.T(l, "followup", strings.Join(d.CausedBy, ", "))
	}
	fmt.Fprintf(b, "%s  %s  %s\n", p.yellow("○ "+head), p.bold(d.ID), p.dim(d.Where(l, "  ")))
	fmt.Fprintf(b, "  %s\n", d.Signature)
	if len(d.Evidence) > 0 {
		fmt.Fprintf(b, "    %s %s\n", p.dim(fmt.Sprintf("%d:", d.Evidence[0].Line)), d.Evidence[0].Text)
	}
	if len(d.Facts) > 0 {
		fmt.Fprintf(b, "  %s: %s\n", view.T(l, "facts"), factLine(d.Facts))
	}
	if d.Operator != "" {
		fmt.Fprintf(b, "  %s: %s\n", view.T(l, "operator"), d.Operator)
	}
	fmt.Fprintf(b, "  %s\n", p.dim(view.T(l, "more", d.ID)))
}

// writeDeadEnds writes the "don't waste time on" block with at most
// maxSources sources per item (-1 for all).
func writeDeadEnds(b *strings.Builder, items []view.Item, maxSources int, l string, p painter) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "\n  %s\n", p.yellow(view.T(l, "dead")))
	for _, x := range items {
		rate := p.dim("(" + x.Rate + x.Observed + ")")
		if !x.Applies {
			rate += " " + p.dim("["+view.T(l, "notapply")+"]")
		}
		fmt.Fprintf(b, "    ✗ %d. %s %s\n", x.N, x.Text, rate)
		if x.Why != "" {
			fmt.Fprintf(b, "%s\n", indent(view.T(l, "why")+": "+x.Why, "         "))
		}
		if c := condLine(x, l); c != "" {
			fmt.Fprintf(b, "         %s\n", c)
		}
		for _, s := range firstN(x.Sources, maxSources) {
			fmt.Fprintf(b, "         %s\n", p.dim(view.T(l, "src")+": "+s))
		}
	}
}

// writeWorkarounds writes the "do now" block in the given order.
func writeWorkarounds(b *strings.Builder, items []view.Item, maxSources int, l string, p painter) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "\n  %s\n", p.green(view.T(l, "do")))
	for _, x := range items {
		rate := p.dim("(" + x.Rate + x.Observed + ")")
		if !x.Applies {
			rate += " " + p.dim("["+view.T(l, "notapply")+"]")
		}
		fmt.Fprintf(b, "    %d. %s %s\n", x.N, x.Text, rate)
		if x.How != "" {
			fmt.Fprintf(b, "%s\n", indent(x.How, "       │ "))
		}
		if c := condLine(x, l); c != "" {
			fmt.Fprintf(b, "       %s\n", c)
		}
		for _, s := range firstN(x.Sources, maxSources) {
			fmt.Fprintf(b, "       %s\n", p.dim(view.T(l, "src")+": "+s))
		}
	}
}

// condLine says an item's condition and how it came out.
func condLine(x view.Item, l string) string {
	if x.Cond == "" {
		return ""
	}
	s := view.T(l, "when") + ": " + x.Cond
	if x.CondState != "" {
		s += " — " + x.CondState
	}
	return s
}

func firstN(s []string, n int) []string {
	if n < 0 || n > len(s) {
		return s
	}
	return s[:n]
}
