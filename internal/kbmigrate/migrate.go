package kbmigrate

import (
	"fmt"

	"github.com/gpudx/gpudx/kb"
)

// Result says what Migrate changed in one file.
type Result struct {
	ID string
	// Bases counts the rate_basis (and fix_success_rate_basis) fields
	// added.
	Bases int
	// Checks lists the workarounds marked as checks, by index.
	Checks []int
	// CheckActions lists the actions of every workaround that is a check
	// after the migration (those marked before included).
	CheckActions []string
}

// Changed reports whether anything was changed.
func (r Result) Changed() bool { return r.Bases > 0 || len(r.Checks) > 0 }

// Checks names, per entry id, the actions of the workarounds that are
// diagnostic steps, exactly as the entry writes them.
type Checks map[string][]string

// Migrate brings one gpudx-format entry file to the current format:
//   - every rate without a basis gets "estimate", which is what the rates
//     written before bases existed are (fail_rate, success_rate,
//     fix_success_rate);
//   - every workaround whose action checks names becomes a check:
//     "kind": "check" where its success_rate was, and no rate.
//
// Files in another format (deadends.dev canons) come back unchanged, and
// so does a file already migrated.
func Migrate(data []byte, checks Checks) ([]byte, Result, error) {
	d, err := parse(data)
	if err != nil {
		return nil, Result{}, err
	}
	root := d.root
	if root.kind != '{' {
		return nil, Result{}, fmt.Errorf("not a JSON object")
	}
	if root.get("regex") == nil && root.get("error") != nil {
		return data, Result{}, nil // a deadends.dev canon
	}
	res := Result{ID: d.str(root.get("id"))}
	estimate := quote(string(kb.BasisEstimate))
	if root.get("fix_success_rate") != nil && root.get("fix_success_rate_basis") == nil {
		d.insertAfter(root, "fix_success_rate", "fix_success_rate_basis", estimate)
		res.Bases++
	}
	if de := root.get("dead_ends"); de != nil {
		for _, it := range de.elems {
			if it.kind == '{' && it.get("fail_rate") != nil && it.get("rate_basis") == nil {
				d.insertAfter(it, "fail_rate", "rate_basis", estimate)
				res.Bases++
			}
		}
	}
	marked := map[string]bool{}
	for _, a := range checks[res.ID] {
		marked[a] = true
	}
	if ws := root.get("workarounds"); ws != nil {
		for i, it := range ws.elems {
			if it.kind != '{' {
				continue
			}
			kind := d.str(it.get("kind"))
			if kind == kb.KindCheck {
				res.CheckActions = append(res.CheckActions, d.str(it.get("action")))
			}
			if it.get("kind") == nil && marked[d.str(it.get("action"))] {
				if it.get("success_rate") != nil {
					d.replace(it, "success_rate", "kind", quote(kb.KindCheck))
				} else {
					d.insertAfter(it, "action", "kind", quote(kb.KindCheck))
				}
				d.remove(it, "rate_basis")
				d.remove(it, "rate_reports")
				res.Checks = append(res.Checks, i)
				res.CheckActions = append(res.CheckActions, d.str(it.get("action")))
				continue
			}
			if kind != kb.KindCheck && it.get("success_rate") != nil && it.get("rate_basis") == nil {
				d.insertAfter(it, "success_rate", "rate_basis", estimate)
				res.Bases++
			}
		}
	}
	if !res.Changed() {
		return data, res, nil
	}
	return d.bytes(), res, nil
}
