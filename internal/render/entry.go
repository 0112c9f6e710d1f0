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
func EntryText(out io.Writer, e *kb.Entry, o Options) error {
	l := o.lang()
	w := &tw{l: l, p: painter{o.Color}, width: o.Width, all: true, whole: true}
	p := w.p
	rc := view.Pick(l, e.RootCause, e.RootCauseZh)
	fmt.Fprintf(&w.b, "%s  %s\n", p.bold(e.ID), p.dim(strings.Join(nonEmpty(e.Domain, e.Category, e.ErrorCode), " · ")))
	if t := view.Pick(l, e.Title, e.TitleZh); t != "" {
		w.prose(t, "  ", "  ", p.bold)
	}
	w.verbatim("  ", view.Pick(l, e.Signature, e.SignatureZh), plain)
	fmt.Fprintf(&w.b, "\n  %s\n", p.bold(view.T(l, "what")))
	w.prose(rc, "    ", "    ", plain)
	dead, work := diagnose.Items(e)
	var dv, cv, wv []view.Item
	for _, x := range dead {
		dv = append(dv, view.DeadEnd(x, l))
	}
	for _, x := range work {
		if it := view.Workaround(x, l); it.Check {
			cv = append(cv, it)
		} else {
			wv = append(wv, it)
		}
	}
	w.deadEnds(dv, -1)
	w.workarounds(view.T(l, "tofind"), cv, -1)
	w.workarounds(view.T(l, "do"), wv, -1)
	b := &w.b
	if g := e.TransitionGraph; len(g.LeadsTo)+len(g.PrecededBy)+len(g.FrequentlyConfusedWith) > 0 {
		b.WriteString("\n")
		if len(g.LeadsTo) > 0 {
			fmt.Fprintf(b, "  leads to: %s\n", strings.Join(g.LeadsTo, ", "))
		}
		if len(g.PrecededBy) > 0 {
			fmt.Fprintf(b, "  preceded by: %s\n", strings.Join(g.PrecededBy, ", "))
		}
		for _, c := range g.FrequentlyConfusedWith {
			fmt.Fprintf(b, "  not to confuse with %s: %s\n", c.ErrorID, c.Distinction)
		}
	}
	if len(e.Versions) > 0 {
		var vs []string
		for _, v := range e.Versions {
			vs = append(vs, v.Version+" ("+v.Status+")")
		}
		fmt.Fprintf(b, "\n  versions: %s\n", strings.Join(vs, ", "))
	}
	fmt.Fprintf(b, "\n  regex: %s\n", e.Regex)
	if e.RegexNot != "" {
		fmt.Fprintf(b, "  regex_not: %s\n", e.RegexNot)
	}
	tail := view.T(l, "tier", e.VerificationTier, e.Confidence)
	if e.OfficialDocURL != "" {
		tail += " · " + view.T(l, "doc") + ": " + e.OfficialDocURL
	}
	fmt.Fprintf(b, "  %s\n  %s\n", p.dim(tail), p.dim("from "+e.Origin))
	_, err := io.WriteString(out, b.String())
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
