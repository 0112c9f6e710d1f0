package render

import (
	"fmt"
	"io"
	"slices"
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

// tw writes one report for a terminal of a given width.
type tw struct {
	b     strings.Builder
	l     string
	p     painter
	width int // 0: no wrapping, no cutting
	all   bool
	whole bool // never cut log lines, commands and sources (an entry shown in full)
}

// prose writes s wrapped, the first line after first, the others after
// rest; style colours each line.
func (w *tw) prose(s, first, rest string, style func(string) string) {
	for _, line := range strings.Split(wrap(s, w.width, first, rest), "\n") {
		lead := len(line) - len(strings.TrimLeft(line, " "))
		w.b.WriteString(line[:lead] + style(line[lead:]) + "\n")
	}
}

// verbatim writes a log line or a command: never wrapped, cut to the width.
func (w *tw) verbatim(pre, s string, style func(string) string) {
	width := w.width
	if w.whole {
		width = 0
	}
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		w.b.WriteString(style(cutTo(pre+line, width)) + "\n")
	}
}

func plain(s string) string { return s }

// Text writes the report for a terminal: each root failure in full (what
// went wrong, what not to try, what to do), then the errors that follow from
// it or stand beside it, briefly.
func Text(out io.Writer, r *diagnose.Report, o Options) error {
	v := view.Build(r, o.lang())
	w := &tw{l: v.Lang, p: painter{o.Color}, width: o.Width, all: o.All}
	l, p := w.l, w.p
	switch {
	case v.None && v.Empty:
		w.prose(view.T(l, "empty"), "", "", plain)
	case v.None:
		w.prose(view.T(l, "none")+".", "", "", plain)
	default:
		w.prose(view.T(l, "found", v.Count), "", "", p.bold)
	}
	w.prose(v.Read, "", "", p.dim)
	if v.Env != "" {
		w.prose(v.Env, view.T(l, "env")+": ", "  ", plain)
	}
	if v.Ranks != "" && !v.None {
		w.prose(v.Ranks, view.T(l, "ranks")+": ", "  ", plain)
	}
	if len(v.Groups) > 0 { // each job's files head its part below
		w.prose(view.T(l, "groups", len(v.Groups)), "", "  ", plain)
	}
	for _, u := range v.Unrecognized {
		fmt.Fprintf(&w.b, "\n%s  %s\n", p.yellow("? "+view.T(l, "unrecognized")), p.dim(u.At))
		w.prose(view.T(l, "unrec_note"), "  ", "  ", plain)
		w.verbatim("    ", u.Text, plain)
		if len(u.Nearest) > 0 {
			w.prose(strings.Join(u.Nearest, ", ")+" ("+u.Sure+")", "  "+view.T(l, "nearest")+": ", "    ", plain)
		}
	}
	// Inputs of unrelated jobs: each job's diagnoses under its own
	// heading, as separate reports under the summary above.
	groups := []int{-1}
	if len(v.Groups) > 0 {
		groups = groups[:0]
		for g := range v.Groups {
			groups = append(groups, g)
		}
	}
	for _, g := range groups {
		if g >= 0 {
			var own, also []string
			for _, d := range v.Diagnoses {
				switch {
				case d.Group == g:
					own = append(own, d.ID)
				case slices.Contains(d.InGroups, g):
					at := ""
					if len(d.Elsewhere[g]) > 0 {
						at = " " + strings.Join(d.Elsewhere[g], ", ")
					}
					also = append(also, fmt.Sprintf("%s%s (%s)", d.ID, at, view.T(l, "jobn", d.Group+1)))
				}
			}
			w.b.WriteString("\n")
			w.prose(view.T(l, "jobhead", g+1)+": "+v.Groups[g], "── ", "   ", p.bold)
			if len(also) > 0 {
				w.prose(strings.Join(also, ", "), "   "+view.T(l, "jobalso")+": ", "     ", plain)
			}
			if len(own)+len(also) == 0 {
				w.prose(view.T(l, "jobnone"), "   ", "   ", plain)
			}
		}
		for i := range v.Diagnoses {
			d := &v.Diagnoses[i]
			if g >= 0 && d.Group != g {
				continue
			}
			w.b.WriteString("\n")
			if d.Kind == "root" {
				w.full(d)
			} else {
				w.brief(d)
			}
			if o.Explain && len(d.Why) > 0 {
				fmt.Fprintf(&w.b, "  %s:\n", p.bold(view.T(l, "whyhere")))
				for _, y := range d.Why {
					w.prose(y, "    - ", "      ", plain)
				}
			}
		}
	}
	_, err := io.WriteString(out, w.b.String())
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

// head writes a diagnosis's heading, its title and the user's own lines
// with the figures read from them.
func (w *tw) head(d *view.Diagnosis, mark string, style func(string) string, lines int) {
	l, p := w.l, w.p
	where := d.Where(l, "  ")
	markW, idW, whereW := strWidth(mark), strWidth(d.ID), strWidth(where)
	switch {
	case w.width == 0 || markW+idW+whereW+4 <= w.width:
		fmt.Fprintf(&w.b, "%s  %s  %s\n", style(mark), p.bold(d.ID), p.dim(where))
	case markW+idW+2 <= w.width: // too wide for one line: where goes under the id
		fmt.Fprintf(&w.b, "%s  %s\n  %s\n", style(mark), p.bold(d.ID), p.dim(where))
	default: // a long "follows from" list, wrapped; the id and where on a line of their own
		for _, line := range strings.Split(wrap(mark, w.width, "", "  "), "\n") {
			w.b.WriteString(style(line) + "\n")
		}
		fmt.Fprintf(&w.b, "  %s  %s\n", p.bold(d.ID), p.dim(where))
	}
	w.prose(d.Title, "  ", "  ", p.bold)
	for i, e := range d.Evidence {
		if i == lines {
			break
		}
		n := fmt.Sprintf("%d: ", e.Line)
		if e.File != "" && e.File != d.File {
			n = e.File + ":" + n
		}
		w.verbatim("    "+n, e.Text, plain)
	}
	if len(d.Facts) > 0 {
		w.prose(factLine(d.Facts), "    "+view.T(l, "factsread")+": ", "      ", p.dim)
	}
}

func (w *tw) full(d *view.Diagnosis) {
	l, p := w.l, w.p
	w.head(d, "● "+view.T(l, "root"), p.red, len(d.Evidence))
	fmt.Fprintf(&w.b, "\n  %s\n", p.bold(view.T(l, "what")))
	w.prose(d.RootCause, "    ", "    ", plain)
	if d.Operator != "" {
		fmt.Fprintf(&w.b, "\n")
		w.prose(d.Operator, "  "+p.bold(view.T(l, "operator"))+": ", "    ", plain)
		w.prose(d.OpNext, "    → ", "      ", plain)
	}
	if len(d.SeenIn) > 0 {
		w.prose(strings.Join(d.SeenIn, ", "), "  "+view.T(l, "seenin")+": ", "    ", plain)
	}
	if m := d.Memory; m != nil {
		w.b.WriteString("\n")
		w.prose(fmt.Sprintf("%s: %s — %s", view.T(l, "memory"), m.Verdict, m.Reason), "  ", "  ", p.bold)
		if len(m.Figures) > 0 {
			w.prose(figureLine(m.Figures), "    ", "    ", p.dim)
		}
		if m.Self != "" {
			w.prose(m.Self+".", "    ", "    ", p.dim)
		}
		for _, a := range m.Advice {
			w.prose(a, "    → ", "      ", plain)
		}
	}
	if len(d.Notes) > 0 {
		fmt.Fprintf(&w.b, "\n  %s\n", p.bold(view.T(l, "versions")))
		for _, n := range d.Notes {
			w.prose(n, "    ", "    ", plain)
		}
	}
	w.deadEnds(d.DeadEnds, 0)
	w.workarounds(view.T(l, "tofind"), d.Checks, 1)
	w.workarounds(view.T(l, "do"), d.Work, 1)
	if len(d.LeadsTo) > 0 {
		w.b.WriteString("\n")
		w.prose(strings.Join(d.LeadsTo, ", "), "  "+view.T(l, "leads")+": ", "    ", plain)
	}
	if len(d.Subsumes) > 0 {
		w.prose(strings.Join(d.Subsumes, ", "), "  "+view.T(l, "subsumes")+": ", "    ", plain)
	}
	tail := d.Tier
	if d.DocURL != "" {
		tail += " · " + view.T(l, "doc") + ": " + d.DocURL
	}
	w.prose(tail, "  ", "    ", p.dim)
}

// figureLine writes the memory figures as "name value" pairs.
func figureLine(fs []view.Fact) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.Name + " " + f.Text
	}
	return strings.Join(parts, " · ")
}

func (w *tw) brief(d *view.Diagnosis) {
	l, p := w.l, w.p
	head := view.T(l, "also")
	if d.Kind == "follow" {
		head = view.T(l, "followup", strings.Join(d.CausedBy, ", "))
	}
	w.head(d, "○ "+head, p.yellow, 1)
	if d.Operator != "" {
		w.prose(d.Operator, "  "+view.T(l, "operator")+": ", "    ", plain)
	}
	w.prose(view.T(l, "more", d.ID), "  ", "  ", p.dim)
}

// shown splits items into those the text lists and the count of those it
// leaves out: items whose condition is known not to hold here, unless
// --all.
func (w *tw) shown(items []view.Item) ([]view.Item, int) { return shownItems(items, w.all) }

// itemRef is " [item k]" where the entry's own number of an item (what
// gpudx report takes) differs from the number shown.
func (w *tw) itemRef(x view.Item) string {
	if x.Index+1 == x.N {
		return ""
	}
	return " " + w.p.dim("["+view.T(w.l, "itemref", x.Index+1)+"]")
}

// deadEnds writes the "don't waste time on" block with at most maxSources
// sources per item (-1 for all).
func (w *tw) deadEnds(all []view.Item, maxSources int) {
	l, p := w.l, w.p
	items, hidden := w.shown(all)
	if len(items)+hidden == 0 {
		return
	}
	fmt.Fprintf(&w.b, "\n  %s\n", p.yellow(view.T(l, "dead")))
	for _, x := range items {
		pre := fmt.Sprintf("    ✗ %d. ", x.N)
		w.prose(x.Text+" "+rate(x, l, p)+w.itemRef(x), pre, strings.Repeat(" ", len(pre)-2), plain)
		if x.Why != "" {
			w.prose(x.Why, "         "+view.T(l, "why")+": ", "         ", plain)
		}
		w.itemTail(x, "         ", maxSources)
	}
	w.hiddenNote(hidden)
}

// workarounds writes a block of workarounds in the given order under a
// heading: the fixes ("do now") or the checks ("to find out").
func (w *tw) workarounds(head string, all []view.Item, maxSources int) {
	l, p := w.l, w.p
	items, hidden := w.shown(all)
	if len(items)+hidden == 0 {
		return
	}
	fmt.Fprintf(&w.b, "\n  %s\n", p.green(head))
	for _, x := range items {
		pre := fmt.Sprintf("    %d. ", x.N)
		w.prose(strings.TrimRight(x.Text+" "+rate(x, l, p), " ")+w.itemRef(x), pre, strings.Repeat(" ", len(pre)), plain)
		if x.How != "" {
			w.verbatim("       │ ", x.How, plain)
		}
		w.itemTail(x, "       ", maxSources)
	}
	w.hiddenNote(hidden)
}

func rate(x view.Item, l string, p painter) string {
	var s string
	if x.Rate != "" {
		s = p.dim("(" + x.Rate + ")")
	}
	if !x.Applies {
		s += " " + p.dim("["+view.T(l, "notapply")+"]")
	}
	return strings.TrimLeft(s, " ")
}

// itemTail writes an item's condition and sources.
func (w *tw) itemTail(x view.Item, pre string, maxSources int) {
	if c := condLine(x, w.l); c != "" {
		w.prose(c, pre, pre+"  ", plain)
	}
	for _, s := range firstN(x.Sources, maxSources) {
		w.verbatim(pre, view.T(w.l, "src")+": "+s, w.p.dim)
	}
}

func (w *tw) hiddenNote(n int) {
	if n > 0 {
		w.prose(view.T(w.l, "hidden", n), "    ", "    ", w.p.dim)
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
