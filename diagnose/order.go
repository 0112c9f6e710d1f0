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
//  2. a diagnosis whose known cause is fixed in the installed versions
//     after the others;
//  3. the one seen first: by timestamp when the two were first seen in
//     different files and both lines carry one, else by file and line.
//
// Each diagnosis not caused by another present one is a root. Why records,
// for each diagnosis, the rules that put it where it is.
func order(ds []*Diagnosis, idx map[string]*Diagnosis) {
	// Sorted first, so that edges, and the rule quoted for each, do not
	// depend on map order.
	slices.SortFunc(ds, func(a, b *Diagnosis) int { c, _ := rank(a, b); return c })
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
		next := ready[0] // ds is sorted by rank, so ready is too
		var why []string
		if cycle {
			why = append(why, "the transition graph has a cycle here; it was broken at the diagnosis ranked first by the rules below")
		}
		for _, e := range preds[next] {
			why = append(why, "after "+e.from.ID+": "+e.rule)
		}
		if len(ready) > 1 {
			if _, rule := rank(next, ready[1]); rule != "" {
				why = append(why, "before "+ready[1].ID+": "+rule)
			}
		}
		next.Why = append(next.Why, why...)
		placed[next] = true
		out = append(out, next)
	}
	for _, d := range out {
		d.Root = len(preds[d]) == 0
		d.CausedBy = nil
		for _, p := range preds[d] {
			d.CausedBy = append(d.CausedBy, p.from.ID)
		}
		slices.Sort(d.CausedBy)
		if d.Root {
			d.Why = append([]string{"root: nothing else found leads to it"}, d.Why...)
		}
		if d.FixedInInstalled {
			d.Why = append(d.Why, "its known cause is fixed in the installed version ("+fixedList(d)+")")
		}
	}
	copy(ds, out)
}

// rank compares two diagnoses by the ordering rules and says which rule
// decided.
func rank(a, b *Diagnosis) (int, string) {
	if wa, wb := a.entry.IsWarning(), b.entry.IsWarning(); wa != wb {
		if wb {
			return -1, "an error comes before a warning (" + b.ID + " is printed by healthy runs too)"
		}
		return 1, "an error comes before a warning"
	}
	if a.FixedInInstalled != b.FixedInInstalled {
		if b.FixedInInstalled {
			return -1, b.ID + "'s known cause is fixed in the installed version"
		}
		return 1, a.ID + "'s known cause is fixed in the installed version"
	}
	if a.order.file != b.order.file && a.when.comparable(b.when) && a.when.ns != b.when.ns {
		return cmp.Compare(a.when.ns, b.when.ns), "seen first by the timestamps of their first lines (" +
			at(a) + " before " + at(b) + ")"
	}
	if a.order != b.order {
		c := -1
		if b.order.less(a.order) {
			c = 1
		}
		return c, "seen first (" + at(a) + ", " + b.ID + " at " + at(b) + ")"
	}
	return cmp.Compare(a.ID, b.ID), ""
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
		if n.Status == FixedInstalled {
			parts = append(parts, fmt.Sprintf("%s %s ≥ %s", n.Component, n.Installed, n.FixedIn))
		}
	}
	return strings.Join(parts, "; ")
}
