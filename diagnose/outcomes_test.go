package diagnose

import (
	"context"
	"errors"
	"testing"

	"github.com/gpudx/gpudx/outcome"
)

// tallyStore answers Tallies from a fixed map.
type tallyStore struct {
	t   map[outcome.Key]outcome.Tally
	err error
}

func (s tallyStore) Record(context.Context, outcome.Report) (bool, error) { return false, nil }
func (s tallyStore) Tallies(_ context.Context, id string) (map[outcome.Key]outcome.Tally, error) {
	return s.t, s.err
}
func (s tallyStore) Close() error { return nil }

// TestAddOutcomes checks that counts follow each item's entry Index, not
// its place in the reordered list.
func TestAddOutcomes(t *testing.T) {
	const id = "pytorch/cuda-out-of-memory"
	st := tallyStore{t: map[outcome.Key]outcome.Tally{
		{EntryID: id, Kind: outcome.Workaround, Index: 2}: {Worked: 2},
		{EntryID: id, Kind: outcome.DeadEnd, Index: 0}:    {Worked: 1, Failed: 4},
	}}
	rep := &Report{Diagnoses: []*Diagnosis{{ID: id,
		Workarounds: []Workaround{{Index: 2, SuccessRate: 0.75}, {Index: 0, SuccessRate: 0.6}},
		DeadEnds:    []DeadEnd{{Index: 3, FailRate: 0.9}, {Index: 0, FailRate: 0.85}},
	}}}
	if err := AddOutcomes(context.Background(), st, rep); err != nil {
		t.Fatal(err)
	}
	d := rep.Diagnoses[0]
	for _, c := range []struct {
		name    string
		got     *outcome.Rate
		reports int
		blended float64
	}{
		{"workaround 3", d.Workarounds[0].Observed, 2, 9.5 / 12},
		{"workaround 1", d.Workarounds[1].Observed, 0, 0.6},
		{"dead end 4", d.DeadEnds[0].Observed, 0, 0.9},
		{"dead end 1", d.DeadEnds[1].Observed, 5, 12.5 / 15},
	} {
		if c.got == nil || c.got.Reports != c.reports || c.got.Blended != c.blended {
			t.Errorf("%s: %+v, want %d reports blending to %v", c.name, c.got, c.reports, c.blended)
		}
	}
	st.err = errors.New("disk on fire")
	if err := AddOutcomes(context.Background(), st, rep); err == nil || err.Error() != "reading outcomes for pytorch/cuda-out-of-memory: disk on fire" {
		t.Errorf("store error: %v", err)
	}
}
