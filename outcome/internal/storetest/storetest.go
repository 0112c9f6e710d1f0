// Package storetest checks what every outcome.Store must do, for the
// tests of the SQLite and PostgreSQL stores.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/gpudx/gpudx/outcome"
)

// Entry ids the reports are about.
const (
	Watchdog = "nccl/watchdog-timeout"
	OOM      = "pytorch/cuda-out-of-memory"
)

// Opener opens the store dsn names, creating it when missing.
type Opener func(ctx context.Context, dsn string) (outcome.Store, error)

// Contract runs what every outcome.Store must do against stores that
// openStore opens on the database newDSN names (a fresh one per call).
func Contract(t *testing.T, openStore Opener, newDSN func(t *testing.T) string) {
	open := func(t *testing.T, dsn string) outcome.Store {
		t.Helper()
		st, err := openStore(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	t.Run("record, tally, duplicates, conflicts", func(t *testing.T) {
		st := open(t, newDSN(t))
		r1 := outcome.Report{RequestID: "r1", EntryID: Watchdog, Kind: outcome.Workaround, Index: 0, Worked: true}
		with := func(f func(*outcome.Report)) outcome.Report { r := r1; f(&r); return r }
		for i, s := range []struct {
			r   outcome.Report
			dup bool
			err string // "" for none
		}{
			{r1, false, ""},
			{r1, true, ""},
			// The note is not what is counted: the same report again.
			{with(func(r *outcome.Report) { r.Note = "again, with words" }), true, ""},
			{with(func(r *outcome.Report) { r.Worked = false }), false,
				`request id already used for a different report: "r1" was stored for nccl/watchdog-timeout workaround 1 worked, not nccl/watchdog-timeout workaround 1 failed`},
			{with(func(r *outcome.Report) { r.Index = 1 }), false,
				`request id already used for a different report: "r1" was stored for nccl/watchdog-timeout workaround 1 worked, not nccl/watchdog-timeout workaround 2 worked`},
			{with(func(r *outcome.Report) { r.Kind = outcome.DeadEnd }), false,
				`request id already used for a different report: "r1" was stored for nccl/watchdog-timeout workaround 1 worked, not nccl/watchdog-timeout dead_end 1 worked`},
			{with(func(r *outcome.Report) { r.EntryID = OOM }), false,
				`request id already used for a different report: "r1" was stored for nccl/watchdog-timeout workaround 1 worked, not pytorch/cuda-out-of-memory workaround 1 worked`},
			// Without a request id every report counts.
			{outcome.Report{EntryID: Watchdog, Kind: outcome.Workaround, Index: 0}, false, ""},
			{outcome.Report{EntryID: Watchdog, Kind: outcome.Workaround, Index: 0}, false, ""},
			{outcome.Report{RequestID: "r2", EntryID: Watchdog, Kind: outcome.DeadEnd, Index: 2}, false, ""},
			{outcome.Report{RequestID: "r3", EntryID: Watchdog, Kind: outcome.DeadEnd, Index: 2, Worked: true, Note: "it did work for me"}, false, ""},
			{outcome.Report{RequestID: "r4", EntryID: OOM, Kind: outcome.Workaround, Index: 0, Worked: true}, false, ""},
			// Invalid reports are refused before they reach the database.
			{outcome.Report{RequestID: "r5", EntryID: Watchdog, Kind: "fix"}, false, `kind is "fix"; want "workaround" or "dead_end"`},
			{outcome.Report{RequestID: "r6", EntryID: Watchdog, Kind: outcome.DeadEnd, Index: -1}, false, "index -1 is out of range"},
			{outcome.Report{RequestID: "r7", Kind: outcome.DeadEnd}, false, "entry_id is empty"},
		} {
			dup, err := st.Record(context.Background(), s.r)
			if dup != s.dup || (err == nil) != (s.err == "") || (err != nil && err.Error() != s.err) {
				t.Errorf("step %d: Record(%+v) = %v, %v; want %v, %q", i, s.r, dup, err, s.dup, s.err)
			}
			if s.err != "" && s.r.RequestID == "r1" && !errors.Is(err, outcome.ErrConflict) {
				t.Errorf("step %d: %v is not ErrConflict", i, err)
			}
		}
		WantTallies(t, st, Watchdog, map[outcome.Key]outcome.Tally{
			{EntryID: Watchdog, Kind: outcome.Workaround, Index: 0}: {Worked: 1, Failed: 2},
			{EntryID: Watchdog, Kind: outcome.DeadEnd, Index: 2}:    {Worked: 1, Failed: 1},
		})
		WantTallies(t, st, OOM, map[outcome.Key]outcome.Tally{{EntryID: OOM, Kind: outcome.Workaround, Index: 0}: {Worked: 1}})
		WantTallies(t, st, "cuda/no-such-entry", map[outcome.Key]outcome.Tally{})
	})
	t.Run("reports outlive the store", func(t *testing.T) {
		dsn := newDSN(t)
		st, err := openStore(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Record(context.Background(), outcome.Report{RequestID: "kept", EntryID: OOM, Kind: outcome.DeadEnd, Index: 3}); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		st = open(t, dsn)
		if dup, err := st.Record(context.Background(), outcome.Report{RequestID: "kept", EntryID: OOM, Kind: outcome.DeadEnd, Index: 3}); !dup || err != nil {
			t.Errorf("the same report after reopening: %v, %v; want a duplicate", dup, err)
		}
		WantTallies(t, st, OOM, map[outcome.Key]outcome.Tally{{EntryID: OOM, Kind: outcome.DeadEnd, Index: 3}: {Failed: 1}})
	})
	t.Run("cancelled", func(t *testing.T) {
		st := open(t, newDSN(t))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := st.Record(ctx, outcome.Report{EntryID: OOM, Kind: outcome.DeadEnd}); !errors.Is(err, context.Canceled) {
			t.Errorf("Record with a cancelled context: %v", err)
		}
		if _, err := st.Tallies(ctx, OOM); !errors.Is(err, context.Canceled) {
			t.Errorf("Tallies with a cancelled context: %v", err)
		}
		WantTallies(t, st, OOM, map[outcome.Key]outcome.Tally{})
	})
	t.Run("concurrent", func(t *testing.T) {
		// Clients retrying one report at once count it once; distinct
		// reports at once all count.
		st := open(t, newDSN(t))
		const same, distinct = 12, 24
		var wg sync.WaitGroup
		dups := make(chan bool, same)
		errs := make(chan error, same+distinct)
		for i := range same + distinct {
			wg.Go(func() {
				r := outcome.Report{RequestID: "same", EntryID: Watchdog, Kind: outcome.Workaround, Index: 1, Worked: true}
				if i >= same {
					r = outcome.Report{RequestID: fmt.Sprint("distinct-", i), EntryID: Watchdog, Kind: outcome.Workaround, Index: 2, Worked: i%3 == 0}
				}
				dup, err := st.Record(context.Background(), r)
				errs <- err
				if i < same {
					dups <- dup
				}
			})
		}
		wg.Wait()
		close(errs)
		close(dups)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		first := 0
		for d := range dups {
			if !d {
				first++
			}
		}
		if first != 1 {
			t.Errorf("%d of %d identical reports were stored as new; want 1", first, same)
		}
		WantTallies(t, st, Watchdog, map[outcome.Key]outcome.Tally{
			{EntryID: Watchdog, Kind: outcome.Workaround, Index: 1}: {Worked: 1},
			{EntryID: Watchdog, Kind: outcome.Workaround, Index: 2}: {Worked: 8, Failed: 16},
		})
	})
}

// WantTallies checks st's tallies of entry id.
func WantTallies(t *testing.T, st outcome.Store, id string, want map[outcome.Key]outcome.Tally) {
	t.Helper()
	got, err := st.Tallies(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Tallies(%s) = %v, want %v", id, got, want)
	}
}
