package diagnose

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// edge is why one diagnosis is placed after another: the transition graph
// says so, from one side or the other.
type edge struct {
	from *Diagnosis
	rule string
}

// order sorts diagnoses root first. A diagnosis the transition graph says
// is caused by another present one comes after it. Among the diagnoses
// whose causes are placed, the next is chosen by these rules, in turn:
//  1. errors before warnings (lines healthy runs print too);
//  2. a diagnosis whose known causes the installed versions rule out
//     after the others;
//  3. the one seen first: by the timestamps of their first lines when the
//     report spans several inputs and every diagnosis's first line carries
//     one of the same kind, else by input order and line;
//  4. the id, so that the order never depends on anything else.
//
// These rules form one total order, so the result does not depend on the
// order diagnoses arrive in. A diagnosis is a root when none of its causes
// was placed before it; a cycle in the graph is broken at the diagnosis the
// rules put first, which becomes a root. Why records, for each diagnosis,
// the rules that put it where it is.
func order(ds []*Diagnosis, idx map[string]*Diagnosis) {
	byStamp := len(ds) > 1
	files := map[int]bool{}
	for _, d := range ds {
		files[d.order.file] = true
		if d.when.kind == 0 || d.when.kind != ds[0].when.kind {
			byStamp = false
		}
	}
	byStamp = byStamp && len(files) > 1
	cmpr := func(a, b *Diagnosis) (int, string) { return rank(a, b, byStamp) }
	slices.SortFunc(ds, func(a, b *Diagnosis) int { c, _ := cmpr(a, b); return c })
	preds := map[*Diagnosis][]edge{}
	link := func(from, to *Diagnosis, rule string) {
		if from == nil || to == nil || from == to || slices.ContainsFunc(preds[to], func(e edge) bool { return e.from == from }) {
			return
		}
		preds[to] = append(preds[to], edge{from, rule})
	}
	for _, d := range ds {
		for _, id := range d.entry.TransitionGraph.LeadsTo {
			link(d, idx[id], "the knowledge base says "+d.ID+" leads to "+id)
		}
		for _, id := range d.entry.TransitionGraph.PrecededBy {
			link(idx[id], d, "the knowledge base says "+d.ID+" is preceded by "+id)
		}
	}
	placed := map[*Diagnosis]bool{}
	out := make([]*Diagnosis, 0, len(ds))
	for len(out) < len(ds) {
		var ready []*Diagnosis
		for _, d := range ds {
			if !placed[d] && !slices.ContainsFunc(preds[d], func(e edge) bool { return !placed[e.from] }) {
				ready = append(ready, d)
			}
		}
		cycle := len(ready) == 0
		if cycle { // a cycle in the graph: break it at the best remaining one
			for _, d := range ds {
				if !placed[d] {
					ready = append(ready, d)
				}
			}
		}
		next := ready[0] // ds is sorted by the rules, so ready is too
		var why []string
		causes := []string{}
		for _, e := range preds[next] {
			if placed[e.from] {
				why = append(why, "after "+e.from.ID+": "+e.rule)
				causes = append(causes, e.from.ID)
			}
		}
		if cycle {
			var in []string
			for _, e := range preds[next] {
				if !placed[e.from] {
					in = append(in, e.from.ID)
				}
			}
			why = append(why, "the transition graph has a cycle ("+next.ID+" and "+strings.Join(in, ", ")+
				" lead to each other); it is broken here, at the one the rules below put first")
		}
		if len(ready) > 1 {
			if _, rule := cmpr(next, ready[1]); rule != "" {
				why = append(why, "before "+ready[1].ID+": "+rule)
			}
		}
		slices.Sort(causes)
		next.CausedBy = causes
		if len(causes) == 0 {
			next.CausedBy = nil
		}
		next.Root = len(causes) == 0
		if next.Root {
			why = append([]string{"root: nothing found before it leads to it"}, why...)
		}
		if next.FixedInInstalled {
			why = append(why, "its known causes are ruled out by the installed versions ("+fixedList(next)+")")
		}
		next.Why = append(next.Why, why...)
		placed[next] = true
		out = append(out, next)
	}
	copy(ds, out)
}

// rank compares two diagnoses by the ordering rules and says which rule
// decided, worded for a that comes first (c < 0).
func rank(a, b *Diagnosis, byStamp bool) (int, string) {
	if wa, wb := a.entry.IsWarning(), b.entry.IsWarning(); wa != wb {
		if wb {
			return -1, "an error comes before a warning (" + b.ID + " is printed by healthy runs too)"
		}
		return 1, ""
	}
	if a.FixedInInstalled != b.FixedInInstalled {
		if b.FixedInInstalled {
			return -1, b.ID + "'s known causes are ruled out by the installed versions"
		}
		return 1, ""
	}
	if byStamp && a.when.ns != b.when.ns {
		return cmp.Compare(a.when.ns, b.when.ns), "seen earlier by the timestamps of their first lines (" +
			at(a) + " before " + at(b) + ")"
	}
	if a.order != b.order {
		if a.order.less(b.order) {
			if a.order.file != b.order.file {
				return -1, "seen earlier in the input (" + at(a) + "; " + b.ID + " first at " + at(b) + ", a later input)"
			}
			return -1, "seen first (" + at(a) + "; " + b.ID + " at " + at(b) + ")"
		}
		return 1, ""
	}
	return cmp.Compare(a.ID, b.ID), "same line; ordered by id"
}
func at(d *Diagnosis) string {
	s := "line " + strconv.Itoa(d.FirstLine)
	if d.File != "" {
		s = d.File + ":" + strconv.Itoa(d.FirstLine)
	}
	return s
}

func fixedList(d *Diagnosis) string {
	var parts []string
	for _, n := range d.VersionNotes {
		switch n.Status {
		case FixedInstalled:
			parts = append(parts, fmt.Sprintf("%s %s ≥ %s, the fix", n.Component, n.Installed, n.FixedIn))
		case NotAffected:
			parts = append(parts, fmt.Sprintf("%s %s predates the %s problem", n.Component, n.Installed, n.Affected))
		}
	}
	return strings.Join(parts, "; ")
}
