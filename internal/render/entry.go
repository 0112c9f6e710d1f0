package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpudx/gpudx/kb"
)

// EntryText writes one knowledge-base entry in full for a terminal.
func EntryText(w io.Writer, e *kb.Entry, o Options) error {
	L := lang(o)
	p := painter{o.Color}
	var b strings.Builder
	sig, rc := e.Signature, e.RootCause
	if o.Lang == "zh" {
		if e.SignatureZh != "" {
			sig = e.SignatureZh
		}
		if e.RootCauseZh != "" {
			rc = e.RootCauseZh
		}
	}
	fmt.Fprintf(&b, "%s  %s\n", p.bold(e.ID), p.dim(strings.Join(nonEmpty(e.Domain, e.Category, e.ErrorCode), " · ")))
	fmt.Fprintf(&b, "  %s\n", p.bold(sig))
	fmt.Fprintf(&b, "\n  %s\n%s\n", p.bold(L["what"]), indent(rc, "    "))
	if len(e.DeadEnds) > 0 {
		fmt.Fprintf(&b, "\n  %s\n", p.yellow(L["dead"]))
		for i, x := range e.DeadEnds {
			if zh := e.DeadEndZh(i); o.Lang == "zh" && zh != "" {
				fmt.Fprintf(&b, "    ✗ %s %s\n", zh, p.dim("("+fmt.Sprintf(L["fails"], pct(x.FailRate))+")"))
			} else {
				fmt.Fprintf(&b, "    ✗ %s %s\n", x.Action, p.dim("("+fmt.Sprintf(L["fails"], pct(x.FailRate))+")"))
				fmt.Fprintf(&b, "%s\n", indent(L["why"]+": "+x.WhyFails, "      "))
			}
			for _, s := range x.Sources {
				fmt.Fprintf(&b, "      %s\n", p.dim(L["src"]+": "+s))
			}
		}
	}
	if len(e.Workarounds) > 0 {
		fmt.Fprintf(&b, "\n  %s\n", p.green(L["do"]))
		for i, x := range e.Workarounds {
			text := x.Action
			if zh := e.WorkaroundZh(i); o.Lang == "zh" && zh != "" {
				text = zh
			}
			fmt.Fprintf(&b, "    %d. %s %s\n", i+1, text, p.dim("("+fmt.Sprintf(L["works"], pct(x.SuccessRate))+")"))
			if x.How != "" {
				fmt.Fprintf(&b, "%s\n", indent(x.How, "       │ "))
			}
			if x.Condition != "" {
				fmt.Fprintf(&b, "       %s: %s\n", L["when"], x.Condition)
			}
			for _, s := range x.Sources {
				fmt.Fprintf(&b, "       %s\n", p.dim(L["src"]+": "+s))
			}
		}
	}
	if g := e.TransitionGraph; len(g.LeadsTo)+len(g.PrecededBy)+len(g.FrequentlyConfusedWith) > 0 {
		b.WriteString("\n")
		if len(g.LeadsTo) > 0 {
			fmt.Fprintf(&b, "  leads to: %s\n", strings.Join(g.LeadsTo, ", "))
		}
		if len(g.PrecededBy) > 0 {
			fmt.Fprintf(&b, "  preceded by: %s\n", strings.Join(g.PrecededBy, ", "))
		}
		for _, c := range g.FrequentlyConfusedWith {
			fmt.Fprintf(&b, "  not to confuse with %s: %s\n", c.ErrorID, c.Distinction)
		}
	}
	if len(e.Versions) > 0 {
		var vs []string
		for _, v := range e.Versions {
			vs = append(vs, v.Version+" ("+v.Status+")")
		}
		fmt.Fprintf(&b, "\n  versions: %s\n", strings.Join(vs, ", "))
	}
	fmt.Fprintf(&b, "\n  regex: %s\n", e.Regex)
	tail := fmt.Sprintf(L["tier"], e.VerificationTier, e.Confidence)
	if e.OfficialDocURL != "" {
		tail += " · " + L["doc"] + ": " + e.OfficialDocURL
	}
	fmt.Fprintf(&b, "  %s\n  %s\n", p.dim(tail), p.dim("from "+e.Origin))
	_, err := io.WriteString(w, b.String())
	return err
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
