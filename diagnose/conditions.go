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
// them: items that apply first; among those, an item whose condition is
// known to hold here first (the figures point at it), then by rate (most
// likely to waste time, most likely to work).
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

func byApplicability(a, b Applicability, ra, rb float64) int {
	if a.Applies != b.Applies {
		if a.Applies {
			return -1
		}
		return 1
	}
	ha, hb := a.ConditionStatus == string(condition.Holds), b.ConditionStatus == string(condition.Holds)
	if ha != hb {
		if ha {
			return -1
		}
		return 1
	}
	return cmp.Compare(rb, ra)
}
