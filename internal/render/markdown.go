package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/internal/view"
)

// mdEscape keeps table cells on one line and pipes literal.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", "<br>")
}

// Markdown writes the report to paste into an issue or a chat.
func Markdown(w io.Writer, r *diagnose.Report, o Options) error {
	v := view.Build(r, o.lang())
	l := v.Lang
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", view.T(l, "md_title"))
	if v.None {
		fmt.Fprintf(&b, "%s.\n\n", view.T(l, "none"))
	}
	fmt.Fprintf(&b, "_%s_\n", v.Read)
	if v.Env != "" {
		fmt.Fprintf(&b, "\n**%s:** %s\n", view.T(l, "env"), mdEscape(v.Env))
	}
	if v.Ranks != "" && !v.None {
		fmt.Fprintf(&b, "\n**%s:** %s\n", view.T(l, "ranks"), mdEscape(v.Ranks))
	}
	if len(v.Groups) > 0 {
		fmt.Fprintf(&b, "\n**%s:** %s\n", view.T(l, "groups", len(v.Groups)), mdEscape(strings.Join(v.Groups, " | ")))
	}
	for _, u := range v.Unrecognized {
		fmt.Fprintf(&b, "\n### %s — %s\n\n%s\n\n```\n%s\n```\n", view.T(l, "unrecognized"), u.At, view.T(l, "unrec_note"), u.Text)
		if len(u.Nearest) > 0 {
			fmt.Fprintf(&b, "\n%s: `%s` (%s)\n", view.T(l, "nearest"), strings.Join(u.Nearest, "`, `"), u.Sure)
		}
	}
	for i := range v.Diagnoses {
		d := &v.Diagnoses[i]
		head := view.T(l, "root")
		switch d.Kind {
		case "follow":
			head = view.T(l, "followup", "`"+strings.Join(d.CausedBy, "`, `")+"`")
		case "also":
			head = view.T(l, "also")
		}
		fmt.Fprintf(&b, "\n### %s: `%s`\n\n", head, d.ID)
		fmt.Fprintf(&b, "**%s** — %s\n\n", mdEscape(d.Title), d.Where(l, "  "))
		if d.Kind != "root" {
			if len(d.Evidence) > 0 {
				fmt.Fprintf(&b, "```\n%d: %s\n```\n", d.Evidence[0].Line, d.Evidence[0].Text)
			}
			continue
		}
		fmt.Fprintf(&b, "**%s.** %s\n\n", view.T(l, "what"), d.RootCause)
		if len(d.Evidence) > 0 {
			b.WriteString("```\n")
			for _, e := range d.Evidence {
				fmt.Fprintf(&b, "%d: %s\n", e.Line, e.Text)
			}
			b.WriteString("```\n\n")
		}
		if len(d.Facts) > 0 {
			fmt.Fprintf(&b, "**%s:** `%s`\n\n", view.T(l, "facts"), factLine(d.Facts))
		}
		if d.Operator != "" {
			fmt.Fprintf(&b, "**%s:** %s. %s\n\n", view.T(l, "operator"), mdEscape(d.Operator), mdEscape(d.OpNext))
		}
		if m := d.Memory; m != nil {
			fmt.Fprintf(&b, "**%s**\n\n", mdEscape(fmt.Sprintf("%s: %s — %s", view.T(l, "memory"), m.Verdict, m.Reason)))
			if len(m.Figures) > 0 {
				fmt.Fprintf(&b, "_%s_\n\n", figureLine(m.Figures))
			}
			if m.Self != "" {
				fmt.Fprintf(&b, "_%s._\n\n", mdEscape(m.Self))
			}
			for _, a := range m.Advice {
				fmt.Fprintf(&b, "- %s\n", mdEscape(a))
			}
			b.WriteString("\n")
		}
		if len(d.Notes) > 0 {
			fmt.Fprintf(&b, "**%s**\n\n", view.T(l, "versions"))
			for _, n := range d.Notes {
				fmt.Fprintf(&b, "- %s\n", mdEscape(n))
			}
			b.WriteString("\n")
		}
		if items, hidden := shownItems(d.DeadEnds, o.All); len(items)+hidden > 0 {
			fmt.Fprintf(&b, "**%s**\n\n", view.T(l, "dead"))
			for _, x := range items {
				text := x.Text
				if x.Why != "" {
					text += " — " + x.Why
				}
				fmt.Fprintf(&b, "- ✗ **%d.** %s (%s)%s%s%s\n", x.N, mdEscape(text), x.Rate, mdItemRef(x, l), mdSources(x.Sources), mdNotApply(x, l))
			}
			mdHidden(&b, hidden, l)
			b.WriteString("\n")
		}
		mdWork(&b, view.T(l, "tofind"), d.Checks, o.All, l)
		mdWork(&b, view.T(l, "do"), d.Work, o.All, l)
		fmt.Fprintf(&b, "_%s_\n", d.Tier)
		if o.Explain && len(d.Why) > 0 {
			fmt.Fprintf(&b, "\n**%s:**\n", view.T(l, "whyhere"))
			for _, w := range d.Why {
				fmt.Fprintf(&b, "- %s\n", mdEscape(w))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdNotApply(x view.Item, l string) string {
	if x.Applies {
		return ""
	}
	return " — _" + view.T(l, "notapply") + ": " + mdEscape(x.Reason) + "_"
}

func mdSources(srcs []string) string {
	if len(srcs) == 0 {
		return ""
	}
	parts := make([]string, len(srcs))
	for i, s := range srcs {
		parts[i] = fmt.Sprintf("[%d](%s)", i+1, s)
	}
	return " " + strings.Join(parts, " ")
}

// shownItems is the items a report lists and the count it leaves out: those
// whose condition does not hold here, unless all.
func shownItems(items []view.Item, all bool) ([]view.Item, int) {
	if all {
		return items, 0
	}
	var out []view.Item
	for _, x := range items {
		if x.Applies {
			out = append(out, x)
		}
	}
	return out, len(items) - len(out)
}

func mdItemRef(x view.Item, l string) string {
	if x.Index+1 == x.N {
		return ""
	}
	return " [" + view.T(l, "itemref", x.Index+1) + "]"
}

func mdHidden(b *strings.Builder, n int, l string) {
	if n > 0 {
		fmt.Fprintf(b, "\n_%s_\n", view.T(l, "hidden", n))
	}
}

// mdWork writes a block of workarounds: the checks or the fixes. Bullets
// with the numbers written out, as for the dead ends: the lists are
// numbered the same way.
func mdWork(b *strings.Builder, head string, all []view.Item, showAll bool, l string) {
	items, hidden := shownItems(all, showAll)
	if len(items)+hidden == 0 {
		return
	}
	fmt.Fprintf(b, "**%s**\n\n", head)
	for _, x := range items {
		rate := ""
		if x.Rate != "" {
			rate = " (" + x.Rate + ")"
		}
		fmt.Fprintf(b, "- **%d.** %s%s%s%s%s\n", x.N, mdEscape(x.Text), rate, mdItemRef(x, l), mdSources(x.Sources), mdNotApply(x, l))
		if x.How != "" {
			fmt.Fprintf(b, "  ```\n%s\n  ```\n", indent(x.How, "  "))
		}
	}
	mdHidden(b, hidden, l)
	b.WriteString("\n")
}
