package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/internal/view"
	"github.com/gpudx/gpudx/kb"
)

// EntryText writes one knowledge-base entry in full for a terminal.
func EntryText(w io.Writer, e *kb.Entry, o Options) error {
	l := o.lang()
	p := painter{o.Color}
	var b strings.Builder
	sig, rc := view.Pick(l, e.Signature, e.SignatureZh), view.Pick(l, e.RootCause, e.RootCauseZh)
	fmt.Fprintf(&b, "%s  %s\n", p.bold(e.ID), p.dim(strings.Join(nonEmpty(e.Domain, e.Category, e.ErrorCode), " · ")))
	fmt.Fprintf(&b, "  %s\n", p.bold(sig))
	fmt.Fprintf(&b, "\n  %s\n%s\n", p.bold(view.T(l, "what")), indent(rc, "    "))
	dead, work := diagnose.Items(e)
	var dv, wv []view.Item
	for _, x := range dead {
		dv = append(dv, view.DeadEnd(x, l))
	}
	for _, x := range work {
		wv = append(wv, view.Workaround(x, l))
	}
	writeDeadEnds(&b, dv, -1, l, p)
	writeWorkarounds(&b, wv, -1, l, p)
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
	tail := view.T(l, "tier", e.VerificationTier, e.Confidence)
	if e.OfficialDocURL != "" {
		tail += " · " + view.T(l, "doc") + ": " + e.OfficialDocURL
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
