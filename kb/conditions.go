package kb

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gpudx/gpudx/condition"
	"github.com/gpudx/gpudx/facts"
)

// EnvNames are the names a condition may read from env: what package env
// provides (env.Environment.Values).
var EnvNames = []string{
	"torch", "torch_cuda", "cuda", "driver_cuda", "driver", "cudnn", "nccl", "python",
	"jax", "jaxlib", "tensorflow", "triton", "os", "gpu", "gpu_memory", "gpu_capability", "gpus",
}

// MemoryFacts are the figures the out-of-memory arithmetic adds to the
// facts of an out-of-memory entry (package oom, Analysis.Facts), so its
// conditions may read them even where its regex has no such group.
var MemoryFacts = []string{
	"requested", "total_capacity", "free", "allocated", "reserved",
	"reserved_unallocated", "this_process", "other_processes", "gpu",
}

// checkConditions compiles every condition and checks what it reads: a
// fact must be a named group of the regex (or a memory figure on a memory
// entry), an env name one that package env provides.
func checkConditions(e *Entry, re *regexp.Regexp, add func(field, msg string)) {
	groups := []string{}
	if re != nil {
		groups = re.SubexpNames()
	}
	check := func(field, src string) {
		if strings.TrimSpace(src) == "" {
			return
		}
		p, err := condition.Compile(src)
		if err != nil {
			add(field, "not an expression over facts and env: "+err.Error())
			return
		}
		// Evaluate it on the facts of each example: a type mismatch (a
		// version fact compared with a number) shows only at run time.
		if re != nil {
			for _, ex := range e.Examples.Match {
				fs := exampleFacts(re, ex)
				if r := p.Eval(fs, nil); strings.HasPrefix(r.Reason, "cannot evaluate") {
					add(field, fmt.Sprintf("on example %s: %s", quoteShort(ex), r.Reason))
					break
				}
			}
		}
		for _, r := range p.Refs() {
			switch {
			case r.Var == "env" && !slices.Contains(EnvNames, r.Name):
				add(field, fmt.Sprintf("env.%s is not provided (known: %s)", r.Name, strings.Join(EnvNames, ", ")))
			case r.Var == "facts" && !slices.Contains(groups, r.Name) &&
				!(e.IsMemory() && slices.Contains(MemoryFacts, r.Name)):
				add(field, fmt.Sprintf("facts.%s is not a named group of the regex", r.Name))
			}
		}
	}
	for i, d := range e.DeadEnds {
		check(fmt.Sprintf("dead_ends[%d].condition", i), d.Condition)
	}
	for i, w := range e.Workarounds {
		check(fmt.Sprintf("workarounds[%d].condition", i), w.Condition)
	}
}

// exampleFacts returns the typed facts the regex reads from an example, as
// the diagnosis would (the first matching line).
func exampleFacts(re *regexp.Regexp, example string) map[string]any {
	out := map[string]any{}
	for _, line := range strings.Split(example, "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for i, name := range re.SubexpNames() {
			if name != "" && i < len(m) && m[i] != "" {
				out[name] = facts.Parse(name, m[i])
			}
		}
		break
	}
	return out
}
