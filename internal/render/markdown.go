package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpudx/gpudx/diagnose"
)

// mdEscape keeps table cells on one line and pipes literal.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", "<br>")
}

// Markdown writes the report to paste into an issue or a chat.
func Markdown(w io.Writer, r *diagnose.Report, o Options) error {
	L := lang(o)
	var b strings.Builder
	b.WriteString("## gpudx diagnosis\n\n")
	if len(r.Diagnoses) == 0 {
		fmt.Fprintf(&b, "%s.\n\n", L["none"])
	}
	fmt.Fprintf(&b, "_%s_\n", fmt.Sprintf(L["read"], group(int64(r.Stats.Lines)), group(r.Stats.Bytes), r.Stats.Entries))
	if s := envLine(r.Environment, L); s != "" {
		fmt.Fprintf(&b, "\n**%s:** %s\n", L["env"], mdEscape(s))
	}
	if s := ranksLine(r.Ranks, o, L); s != "" && len(r.Diagnoses) > 0 {
		fmt.Fprintf(&b, "\n**%s:** %s\n", L["ranks"], mdEscape(s))
	}
	for _, d := range r.Diagnoses {
		head := L["root"]
		if !d.Root {
			head = L["also"]
			if len(d.CausedBy) > 0 {
				head = fmt.Sprintf(L["followup"], "`"+strings.Join(d.CausedBy, "`, `")+"`")
			}
		}
		fmt.Fprintf(&b, "\n### %s: `%s`\n\n", head, d.ID)
		fmt.Fprintf(&b, "**%s** — %s\n\n", mdEscape(signature(d, o)), where(d, L))
		if !d.Root {
			if len(d.Evidence) > 0 {
				fmt.Fprintf(&b, "```\n%d: %s\n```\n", d.Evidence[0].Line, d.Evidence[0].Text)
			}
			continue
		}
		fmt.Fprintf(&b, "**%s.** %s\n\n", L["what"], rootCause(d, o))
		if len(d.Evidence) > 0 {
			b.WriteString("```\n")
			for _, e := range d.Evidence {
				fmt.Fprintf(&b, "%d: %s\n", e.Line, e.Text)
			}
			b.WriteString("```\n\n")
		}
		if len(d.Facts) > 0 {
			fmt.Fprintf(&b, "**%s:** `%s`\n\n", L["facts"], factList(d.Facts))
		}
		if line, next := OperatorLine(d.Operator, o.Lang); line != "" {
			fmt.Fprintf(&b, "**%s:** %s. %s\n\n", L["operator"], mdEscape(line), mdEscape(next))
		}
		if head, figs, advice := memoryLines(d, o, L); head != "" {
			fmt.Fprintf(&b, "**%s**\n\n", mdEscape(head))
			if figs != "" {
				fmt.Fprintf(&b, "_%s_\n\n", figs)
			}
			for _, a := range advice {
				fmt.Fprintf(&b, "- %s\n", mdEscape(a))
			}
			b.WriteString("\n")
		}
		if vs := versionLines(d, o); len(vs) > 0 {
			fmt.Fprintf(&b, "**%s**\n\n", L["versions"])
			for _, v := range vs {
				fmt.Fprintf(&b, "- %s\n", mdEscape(v))
			}
			b.WriteString("\n")
		}
		if len(d.DeadEnds) > 0 {
			fmt.Fprintf(&b, "**%s**\n\n", L["dead"])
			for _, x := range d.DeadEnds {
				text := x.Action + " — " + x.WhyFails
				if o.Lang == "zh" && x.Zh != "" {
					text = x.Zh
				}
				na := ""
				if !x.Applies {
					na = " — _" + L["notapply"] + ": " + mdEscape(x.Reason) + "_"
				}
				fmt.Fprintf(&b, "- ✗ **%d.** %s (%s)%s%s\n", x.Index+1, mdEscape(text), fmt.Sprintf(L["fails"], x.RateLabel(o.Lang)), mdSources(x.Sources), na)
			}
			b.WriteString("\n")
		}
		if len(d.Workarounds) > 0 {
			fmt.Fprintf(&b, "**%s**\n\n", L["do"])
			// A bullet with the entry's number, not an ordered list:
			// renderers renumber those from the first item, and these
			// numbers are the ones `gpudx report` takes.
			for _, x := range d.Workarounds {
				text := x.Action
				if o.Lang == "zh" && x.Zh != "" {
					text = x.Zh
				}
				na := ""
				if !x.Applies {
					na = " — _" + L["notapply"] + ": " + mdEscape(x.Reason) + "_"
				}
				fmt.Fprintf(&b, "- **%d.** %s (%s)%s%s\n", x.Index+1, mdEscape(text), workRate(x, o.Lang, L), mdSources(x.Sources), na)
				if x.How != "" {
					fmt.Fprintf(&b, "  ```\n%s\n  ```\n", indent(x.How, "  "))
				}
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "_%s_\n", fmt.Sprintf(L["tier"], d.VerificationTier, d.Confidence))
		if o.Explain && len(d.Why) > 0 {
			fmt.Fprintf(&b, "\n**%s:**\n", L["whyhere"])
			for _, w := range why(d, o) {
				fmt.Fprintf(&b, "- %s\n", mdEscape(w))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
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
