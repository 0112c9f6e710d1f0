package diagnose

import (
	"context"
	"fmt"

	"github.com/gpudx/gpudx/outcome"
)

// AddOutcomes sets Observed on every workaround (checks excepted) and
// dead end of the report: its curated rate blended with the outcomes
// people reported to st. Items keep their entry Index, so reordering does not mix up counts.
func AddOutcomes(ctx context.Context, st outcome.Store, rep *Report) error {
	for _, d := range rep.Diagnoses {
		t, err := st.Tallies(ctx, d.ID)
		if err != nil {
			return fmt.Errorf("reading outcomes for %s: %w", d.ID, err)
		}
		for i := range d.Workarounds {
			w := &d.Workarounds[i]
			if w.IsCheck() {
				continue // a check has no rate to blend with
			}
			r := outcome.Blend(outcome.Workaround, w.SuccessRate, t[outcome.Key{EntryID: d.ID, Kind: outcome.Workaround, Index: w.Index}])
			w.Observed = &r
		}
		for i := range d.DeadEnds {
			x := &d.DeadEnds[i]
			r := outcome.Blend(outcome.DeadEnd, x.FailRate, t[outcome.Key{EntryID: d.ID, Kind: outcome.DeadEnd, Index: x.Index}])
			x.Observed = &r
		}
	}
	return nil
}
