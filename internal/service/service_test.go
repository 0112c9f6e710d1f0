package service

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/gpudx/gpudx/internal/render"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
	"github.com/gpudx/gpudx/memory"
	"github.com/gpudx/gpudx/outcome"
)

var (
	baseOnce sync.Once
	baseErr  error
	entries  []*kb.Entry
)

// newTestService loads the built-in knowledge base, as gpudx does.
func newTestService(t *testing.T, st outcome.Store) *Service {
	t.Helper()
	baseOnce.Do(func() {
		entries, baseErr = kb.LoadFS(knowledge.FS, ".", "knowledge/")
	})
	if baseErr != nil {
		t.Fatal(baseErr)
	}
	b := kb.NewBase()
	for _, e := range entries {
		b.Add(e)
	}
	s, err := New(b, st)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// memStore is an outcome.Store in memory, for the service's own logic.
type memStore struct {
	mu   sync.Mutex
	seen map[string]bool
	t    map[outcome.Key]outcome.Tally
}

func newMemStore() *memStore {
	return &memStore{seen: map[string]bool{}, t: map[outcome.Key]outcome.Tally{}}
}

func (m *memStore) Record(_ context.Context, r outcome.Report) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.RequestID != "" {
		if m.seen[r.RequestID] {
			return true, nil
		}
		m.seen[r.RequestID] = true
	}
	k := outcome.Key{EntryID: r.EntryID, Kind: r.Kind, Index: r.Index}
	t := m.t[k]
	if r.Worked {
		t.Worked++
	} else {
		t.Failed++
	}
	m.t[k] = t
	return false, nil
}

func (m *memStore) Tallies(_ context.Context, id string) (map[outcome.Key]outcome.Tally, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[outcome.Key]outcome.Tally{}
	for k, v := range m.t {
		if k.EntryID == id {
			out[k] = v
		}
	}
	return out, nil
}

func (m *memStore) Close() error { return nil }

// The service's diagnosis is the CLI's: its JSON equals the goldens that
// `gpudx diagnose --format json` is tested against.
func TestDiagnoseMatchesCLI(t *testing.T) {
	s := newTestService(t, nil)
	for _, name := range []string{"ddp-oom", "device-assert", "xid79-dmesg", "clean-training"} {
		t.Run(name, func(t *testing.T) {
			log, err := os.ReadFile("../../examples/" + name + ".log")
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile("../cli/testdata/" + name + ".json")
			if err != nil {
				t.Fatal(err)
			}
			rep, err := s.Diagnose(context.Background(), bytes.NewReader(log), "")
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := render.JSON(&got, rep); err != nil {
				t.Fatal(err)
			}
			if got.String() != string(want) {
				t.Errorf("service JSON differs from the CLI golden (%d vs %d bytes)", got.Len(), len(want))
			}
		})
	}
}

// Environment text given with the log fills what the log does not say.
func TestDiagnoseEnvText(t *testing.T) {
	s := newTestService(t, nil)
	log, _ := os.ReadFile("../../examples/ddp-oom.log")
	envText, _ := os.ReadFile("../cli/testdata/collect_env.txt")
	rep, err := s.DiagnoseText(context.Background(), string(log), string(envText))
	if err != nil {
		t.Fatal(err)
	}
	e := rep.Environment
	if e.NCCL != "2.21.5" || e.Torch != "2.5.1+cu124" || e.Driver != "550.54.15" || len(e.GPUs) != 4 {
		t.Errorf("environment: nccl %q torch %q driver %q gpus %d", e.NCCL, e.Torch, e.Driver, len(e.GPUs))
	}
	if _, err := s.DiagnoseText(context.Background(), "x", strings.Repeat("a", MaxEnvText+1)); !isInvalid(err) {
		t.Errorf("env over the limit: %v, want an InvalidError", err)
	}
}

func TestDiagnoseCancelled(t *testing.T) {
	s := newTestService(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.DiagnoseText(ctx, "RuntimeError: CUDA error: out of memory\n", ""); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func isInvalid(err error) bool {
	var ie *InvalidError
	return errors.As(err, &ie)
}

// Record checks the entry and the item before the store sees anything;
// the blended rates then count what was stored.
func TestRecordAndRates(t *testing.T) {
	const id = "pytorch/cuda-out-of-memory"
	st := newMemStore()
	s := newTestService(t, st)
	e := s.Entry(id)
	if e == nil || len(e.Workarounds) < 2 || len(e.DeadEnds) < 1 {
		t.Fatalf("%s: want an entry with 2+ workarounds and a dead end", id)
	}
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		r    outcome.Report
		want string // "" ok; "invalid", "notfound"
		dup  bool
	}{
		{"ok", outcome.Report{RequestID: "a", EntryID: id, Kind: outcome.Workaround, Index: 1, Worked: true}, "", false},
		{"same request id", outcome.Report{RequestID: "a", EntryID: id, Kind: outcome.Workaround, Index: 1, Worked: true}, "", true},
		{"failed", outcome.Report{RequestID: "b", EntryID: id, Kind: outcome.Workaround, Index: 1}, "", false},
		{"dead end held", outcome.Report{EntryID: id, Kind: outcome.DeadEnd, Index: 0}, "", false},
		{"unknown entry", outcome.Report{EntryID: "cuda/no-such-thing", Kind: outcome.Workaround}, "notfound", false},
		{"index past the end", outcome.Report{EntryID: id, Kind: outcome.Workaround, Index: len(e.Workarounds)}, "invalid", false},
		{"negative index", outcome.Report{EntryID: id, Kind: outcome.DeadEnd, Index: -1}, "invalid", false},
		{"bad kind", outcome.Report{EntryID: id, Kind: "fix"}, "invalid", false},
		{"empty entry", outcome.Report{Kind: outcome.Workaround}, "invalid", false},
		{"long note", outcome.Report{EntryID: id, Kind: outcome.Workaround, Note: strings.Repeat("n", outcome.MaxNote+1)}, "invalid", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dup, err := s.Record(ctx, tt.r)
			switch tt.want {
			case "":
				if err != nil || dup != tt.dup {
					t.Errorf("dup %v err %v, want dup %v", dup, err, tt.dup)
				}
			case "invalid":
				if !isInvalid(err) {
					t.Errorf("err %v, want InvalidError", err)
				}
			case "notfound":
				if !errors.Is(err, ErrNotFound) {
					t.Errorf("err %v, want ErrNotFound", err)
				}
			}
		})
	}
	r, err := s.Rates(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	w := r.Workarounds[1]
	cur := e.Workarounds[1].SuccessRate
	if w.Reports != 2 || w.Worked != 1 || w.Failed != 1 || w.Curated != cur || w.Blended != (cur*10+1)/12 {
		t.Errorf("workaround 1: %+v (curated %v)", w, cur)
	}
	d := r.DeadEnds[0]
	if d.Reports != 1 || d.Failed != 1 || d.Blended != (e.DeadEnds[0].FailRate*10+1)/11 {
		t.Errorf("dead end 0: %+v", d)
	}
	if r.Workarounds[0].Reports != 0 || r.Workarounds[0].Blended != e.Workarounds[0].SuccessRate {
		t.Errorf("unreported workaround 0: %+v", r.Workarounds[0])
	}
	if _, err := s.Rates(ctx, "nope/nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Rates of an unknown id: %v", err)
	}

	// A diagnosis carries the same blended rates.
	log, _ := os.ReadFile("../../examples/ddp-oom.log")
	rep, err := s.DiagnoseText(ctx, string(log), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, dg := range rep.Diagnoses {
		if dg.ID != id {
			continue
		}
		for _, x := range dg.Workarounds {
			if x.Observed == nil {
				t.Fatalf("workaround %d has no Observed", x.Index)
			}
			if x.Index == 1 && *x.Observed != w {
				t.Errorf("diagnosis workaround 1: %+v, want %+v", *x.Observed, w)
			}
		}
		return
	}
	t.Errorf("no %s diagnosis in ddp-oom.log", id)
}

func TestRecordWithoutStore(t *testing.T) {
	s := newTestService(t, nil)
	_, err := s.Record(context.Background(), outcome.Report{EntryID: "pytorch/cuda-out-of-memory", Kind: outcome.Workaround})
	if !errors.Is(err, ErrNoStore) {
		t.Errorf("err %v, want ErrNoStore", err)
	}
}

func TestEntriesAndDomains(t *testing.T) {
	s := newTestService(t, nil)
	all := s.Entries(Filter{})
	if len(all) != s.Base().Len() {
		t.Fatalf("Entries() = %d, base has %d", len(all), s.Base().Len())
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].ID >= all[i].ID {
			t.Fatalf("not sorted by id at %d: %s, %s", i, all[i-1].ID, all[i].ID)
		}
	}
	sum := 0
	for _, d := range s.Domains() {
		got := s.Entries(Filter{Domain: d.Name})
		if len(got) != d.Entries {
			t.Errorf("domain %s: Domains says %d, Entries gives %d", d.Name, d.Entries, len(got))
		}
		sum += d.Entries
		for _, c := range d.Categories {
			if len(s.Entries(Filter{Domain: strings.ToUpper(d.Name), Category: c})) == 0 {
				t.Errorf("domain %s category %s selects nothing", d.Name, c)
			}
		}
	}
	if sum != len(all) {
		t.Errorf("domains add up to %d, want %d", sum, len(all))
	}
	q := s.Entries(Filter{Domain: "cuda", Category: "resource_error", Q: "CUBLAS_STATUS_ALLOC_FAILED"})
	if len(q) < 2 || q[0].ID != "cuda/cublas-alloc-failed" || q[1].ID != "cuda/cublas-alloc-failed-cublaslt" {
		ids := []string{}
		for _, e := range q {
			ids = append(ids, e.ID)
		}
		t.Errorf("q=CUBLAS_STATUS_ALLOC_FAILED in cuda/resource_error: %v", ids)
	}
}

func TestSnapshot(t *testing.T) {
	s := newTestService(t, nil)
	ctx := context.Background()
	for _, tt := range []struct {
		file    string
		invalid string // part of the message, "" when it reads
	}{
		{"hand-p4.pickle", ""},
		{"hand-p4.pickle.gz", ""},
		{"not-a-snapshot.pickle", "snapshot"},
		{"../../examples/ddp-oom.log", "not a PyTorch memory snapshot"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			path := "../../snapshot/testdata/" + tt.file
			if strings.HasPrefix(tt.file, "..") {
				path = tt.file
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			snap, rep, err := s.Snapshot(ctx, f, memory.Options{})
			if tt.invalid != "" {
				if !isInvalid(err) || !strings.Contains(err.Error(), tt.invalid) {
					t.Errorf("err %v, want an InvalidError about %q", err, tt.invalid)
				}
				return
			}
			if err != nil || snap == nil || rep == nil {
				t.Fatalf("snap %v rep %v err %v", snap != nil, rep != nil, err)
			}
		})
	}
}
