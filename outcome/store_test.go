package outcome

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
)

const (
	watchdog = "nccl/watchdog-timeout"
	oom      = "pytorch/cuda-out-of-memory"
)

// testContract runs what every Store must do against stores opened on
// the database newDSN names (a fresh one per call).
func testContract(t *testing.T, newDSN func(t *testing.T) string) {
	open := func(t *testing.T, dsn string) Store {
		t.Helper()
		st, err := Open(context.Background(), dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	t.Run("record, tally, duplicates, conflicts", func(t *testing.T) {
		st := open(t, newDSN(t))
		r1 := Report{RequestID: "r1", EntryID: watchdog, Kind: Workaround, Index: 0, Worked: true}
		with := func(f func(*Report)) Report { r := r1; f(&r); return r }
		for i, s := range []struct {
			r   Report
			dup bool
			err string // "" for none
		}{
			{r1, false, ""},
			{r1, true, ""},
			// The note is not what is counted: the same report again.
			{with(func(r *Report) { r.Note = "again, with words" }), true, ""},
			{with(func(r *Report) { r.Worked = false }), false,
				`request id already used for a different report: "r1" was stored for nccl/watchdog-timeout workaround 1 worked, not nccl/watchdog-timeout workaround 1 failed`},
			{with(func(r *Report) { r.Index = 1 }), false,
				`request id already used for a different report: "r1" was stored for nccl/watchdog-timeout workaround 1 worked, not nccl/watchdog-timeout workaround 2 worked`},
			{with(func(r *Report) { r.Kind = DeadEnd }), false,
				`request id already used for a different report: "r1" was stored for nccl/watchdog-timeout workaround 1 worked, not nccl/watchdog-timeout dead_end 1 worked`},
			{with(func(r *Report) { r.EntryID = oom }), false,
				`request id already used for a different report: "r1" was stored for nccl/watchdog-timeout workaround 1 worked, not pytorch/cuda-out-of-memory workaround 1 worked`},
			// Without a request id every report counts.
			{Report{EntryID: watchdog, Kind: Workaround, Index: 0}, false, ""},
			{Report{EntryID: watchdog, Kind: Workaround, Index: 0}, false, ""},
			{Report{RequestID: "r2", EntryID: watchdog, Kind: DeadEnd, Index: 2}, false, ""},
			{Report{RequestID: "r3", EntryID: watchdog, Kind: DeadEnd, Index: 2, Worked: true, Note: "it did work for me"}, false, ""},
			{Report{RequestID: "r4", EntryID: oom, Kind: Workaround, Index: 0, Worked: true}, false, ""},
			// Invalid reports are refused before they reach the database.
			{Report{RequestID: "r5", EntryID: watchdog, Kind: "fix"}, false, `kind is "fix"; want "workaround" or "dead_end"`},
			{Report{RequestID: "r6", EntryID: watchdog, Kind: DeadEnd, Index: -1}, false, "index -1 is out of range"},
			{Report{RequestID: "r7", Kind: DeadEnd}, false, "entry_id is empty"},
		} {
			dup, err := st.Record(context.Background(), s.r)
			if dup != s.dup || (err == nil) != (s.err == "") || (err != nil && err.Error() != s.err) {
				t.Errorf("step %d: Record(%+v) = %v, %v; want %v, %q", i, s.r, dup, err, s.dup, s.err)
			}
			if s.err != "" && s.r.RequestID == "r1" && !errors.Is(err, ErrConflict) {
				t.Errorf("step %d: %v is not ErrConflict", i, err)
			}
		}
		wantTallies(t, st, watchdog, map[Key]Tally{
			{watchdog, Workaround, 0}: {Worked: 1, Failed: 2},
			{watchdog, DeadEnd, 2}:    {Worked: 1, Failed: 1},
		})
		wantTallies(t, st, oom, map[Key]Tally{{oom, Workaround, 0}: {Worked: 1}})
		wantTallies(t, st, "cuda/no-such-entry", map[Key]Tally{})
	})
	t.Run("reports outlive the store", func(t *testing.T) {
		dsn := newDSN(t)
		st, err := Open(context.Background(), dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Record(context.Background(), Report{RequestID: "kept", EntryID: oom, Kind: DeadEnd, Index: 3}); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		st = open(t, dsn)
		if dup, err := st.Record(context.Background(), Report{RequestID: "kept", EntryID: oom, Kind: DeadEnd, Index: 3}); !dup || err != nil {
			t.Errorf("the same report after reopening: %v, %v; want a duplicate", dup, err)
		}
		wantTallies(t, st, oom, map[Key]Tally{{oom, DeadEnd, 3}: {Failed: 1}})
	})
	t.Run("cancelled", func(t *testing.T) {
		st := open(t, newDSN(t))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := st.Record(ctx, Report{EntryID: oom, Kind: DeadEnd}); !errors.Is(err, context.Canceled) {
			t.Errorf("Record with a cancelled context: %v", err)
		}
		if _, err := st.Tallies(ctx, oom); !errors.Is(err, context.Canceled) {
			t.Errorf("Tallies with a cancelled context: %v", err)
		}
		wantTallies(t, st, oom, map[Key]Tally{})
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
				r := Report{RequestID: "same", EntryID: watchdog, Kind: Workaround, Index: 1, Worked: true}
				if i >= same {
					r = Report{RequestID: fmt.Sprint("distinct-", i), EntryID: watchdog, Kind: Workaround, Index: 2, Worked: i%3 == 0}
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
		wantTallies(t, st, watchdog, map[Key]Tally{
			{watchdog, Workaround, 1}: {Worked: 1},
			{watchdog, Workaround, 2}: {Worked: 8, Failed: 16},
		})
	})
}

func wantTallies(t *testing.T, st Store, id string, want map[Key]Tally) {
	t.Helper()
	got, err := st.Tallies(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Tallies(%s) = %v, want %v", id, got, want)
	}
}
