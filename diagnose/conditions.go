package diagnose

import (
	"cmp"
	"slices"
	"sync"

	"github.com/gpudx/gpudx/condition"
)

// programs caches compiled conditions by their text: a knowledge base
// repeats few distinct conditions, and a server diagnoses many logs.
var programs sync.Map // string -> *condition.Program or error

func compiled(src string) (*condition.Program, error) {
	if v, ok := programs.Load(src); ok {
		if p, ok := v.(*condition.Program); ok {
			return p, nil
		}
		return nil, v.(error)
	}
	p, err := condition.Compile(src)
	if err != nil {
		programs.Store(src, err)
		return nil, err
	}
	programs.Store(src, p)
	return p, nil
}

// evaluate returns an item's applicability; an invalid condition (lint
// refuses them, but a user's --kb may hold one) is "unknown", never a
// silent pass or drop.
func evaluate(src string, fs, ev map[string]any) Applicability {
	if src == "" {
		return Applicability{Applies: true}
	}
	p, err := compiled(src)
	if err != nil {
		return Applicability{Applies: true, ConditionStatus: string(condition.Unknown), Reason: "invalid condition: " + err.Error()}
	}
	r := p.Eval(fs, ev)
	return Applicability{Applies: r.Applies(), ConditionStatus: string(r.Status), Reason: r.Reason}
}

// applyConditions evaluates every dead end and workaround and orders
// them by what this log says: items whose condition holds here first (the
// log's figures point at them), then items without a condition (they
// apply everywhere), then items whose condition cannot be told here (a
// version or GPU the log does not name), and last the items whose
// condition fails (Applies false: text output hides them, JSON keeps
// them). Within each, by rate (most likely to waste time, most likely to
// work), then by the entry's order.
// ev is the environment as condition values (env.Environment.Values).
func applyConditions(d *Diagnosis, ev map[string]any) {
	fs := make(map[string]any, len(d.Facts))
	for k, v := range d.Facts {
		fs[k] = v
	}
	for i := range d.DeadEnds {
		d.DeadEnds[i].Applicability = evaluate(d.DeadEnds[i].Condition, fs, ev)
	}
	for i := range d.Workarounds {
		d.Workarounds[i].Applicability = evaluate(d.Workarounds[i].Condition, fs, ev)
	}
	slices.SortStableFunc(d.DeadEnds, func(a, b DeadEnd) int {
		return byApplicability(a.Applicability, b.Applicability, a.FailRate, b.FailRate)
	})
	slices.SortStableFunc(d.Workarounds, func(a, b Workaround) int {
		return byApplicability(a.Applicability, b.Applicability, a.SuccessRate, b.SuccessRate)
	})
}

// Rank is where an item's applicability puts it: 0 its condition holds,
// 1 it has none, 2 its condition is unknown here, 3 its condition fails.
func (a Applicability) Rank() int {
	switch {
	case !a.Applies || a.ConditionStatus == string(condition.Fails):
		return 3
	case a.ConditionStatus == string(condition.Holds):
		return 0
	case a.ConditionStatus == "":
		return 1
	}
	return 2
}

func byApplicability(a, b Applicability, ra, rb float64) int {
	if c := cmp.Compare(a.Rank(), b.Rank()); c != 0 {
		return c
	}
	return cmp.Compare(rb, ra)
}
