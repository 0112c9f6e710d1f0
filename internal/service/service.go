// Package service is the engine behind `gpudx serve` and `gpudx mcp`: one
// loaded knowledge base, its compiled scanner and an optional outcome
// store, with the operations the HTTP API, the web page and the MCP tools
// share. It holds no transport code; each front end only decodes a
// request, calls one method and encodes the answer.
package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/env"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/memory"
	"github.com/gpudx/gpudx/outcome"
	"github.com/gpudx/gpudx/scan"
	"github.com/gpudx/gpudx/snapshot"
)

// Service answers questions about logs, entries and snapshots. It is safe
// for concurrent use.
type Service struct {
	base  *kb.Base
	sc    *scan.Scanner
	store outcome.Store // nil: no outcome feedback
	// snapMem caps the memory one snapshot read may hold (0: the
	// snapshot package's default).
	snapMem int64
}

// New compiles base for scanning. store may be nil; then no outcomes are
// recorded and rates are the curated ones. Entries whose regex does not
// compile are left out and reported in err (a kb.ErrorList), as warnings:
// the Service is usable either way.
func New(base *kb.Base, store outcome.Store) (s *Service, err error) {
	sc, err := scan.New(base.Entries())
	return &Service{base: base, sc: sc, store: store}, err
}

// SetSnapshotMemory caps the memory that reading one snapshot may hold
// (0: snapshot.DefaultMaxMemory); a file that needs more is refused. Set
// it before the service answers requests.
func (s *Service) SetSnapshotMemory(n int64) { s.snapMem = n }

// Base is the knowledge base the service answers from.
func (s *Service) Base() *kb.Base { return s.base }

// HasStore reports whether outcomes can be recorded.
func (s *Service) HasStore() bool { return s.store != nil }

// ErrNotFound is returned for an entry id the knowledge base lacks.
var ErrNotFound = errors.New("no such entry")

// InvalidError is a request the caller must change (a 400, not a 500).
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

func invalid(format string, a ...any) error { return &InvalidError{fmt.Sprintf(format, a...)} }

// MaxEnvText bounds the environment text a request may carry
// (collect_env, nvidia-smi and pip list together are a few KiB).
const MaxEnvText = 1 << 20

// Diagnose reads one log and returns its diagnosis, as `gpudx diagnose
// --format json` would, with envText (captured collect_env, nvidia-smi,
// pip list output; may be empty) as the stated environment. Rates carry
// the observed outcomes when a store is set. ctx stops the read.
func (s *Service) Diagnose(ctx context.Context, log io.Reader, envText string) (*diagnose.Report, error) {
	if len(envText) > MaxEnvText {
		return nil, invalid("env is longer than %d bytes", MaxEnvText)
	}
	var given env.Environment
	if envText != "" {
		e, err := env.Parse(strings.NewReader(envText), "env")
		if err != nil {
			return nil, err
		}
		given = e
	}
	in := scan.Input{Open: func() (io.ReadCloser, error) { return io.NopCloser(ctxReader{ctx, log}), nil }}
	rep, err := diagnose.ReadAll(s.sc, []scan.Input{in}, diagnose.Options{Env: given})
	if err != nil {
		return nil, err
	}
	if err := s.Annotate(ctx, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// DiagnoseText is Diagnose on a log held in memory.
func (s *Service) DiagnoseText(ctx context.Context, log, envText string) (*diagnose.Report, error) {
	return s.Diagnose(ctx, strings.NewReader(log), envText)
}

// ctxReader ends a read when its context is done, so a cancelled request
// stops scanning at the next chunk.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Annotate adds the observed outcomes to every workaround and dead end of
// a report. Without a store it does nothing.
func (s *Service) Annotate(ctx context.Context, rep *diagnose.Report) error {
	if s.store == nil {
		return nil
	}
	return diagnose.AddOutcomes(ctx, s.store, rep)
}

// Rates are an entry's items with their blended rates, in entry order.
type Rates struct {
	DeadEnds    []outcome.Rate `json:"dead_ends"`
	Workarounds []outcome.Rate `json:"workarounds"`
}

// Rates returns the blended rates of every item of an entry (the curated
// ones with no reports when there is no store).
func (s *Service) Rates(ctx context.Context, id string) (*Rates, error) {
	e := s.base.Get(id)
	if e == nil {
		return nil, ErrNotFound
	}
	t := map[outcome.Key]outcome.Tally{}
	if s.store != nil {
		var err error
		if t, err = s.store.Tallies(ctx, e.ID); err != nil {
			return nil, fmt.Errorf("reading outcomes: %w", err)
		}
	}
	r := &Rates{DeadEnds: []outcome.Rate{}, Workarounds: []outcome.Rate{}}
	for i, x := range e.DeadEnds {
		r.DeadEnds = append(r.DeadEnds, outcome.Blend(outcome.DeadEnd, x.FailRate, t[outcome.Key{EntryID: e.ID, Kind: outcome.DeadEnd, Index: i}]))
	}
	for i, x := range e.Workarounds {
		r.Workarounds = append(r.Workarounds, outcome.Blend(outcome.Workaround, x.SuccessRate, t[outcome.Key{EntryID: e.ID, Kind: outcome.Workaround, Index: i}]))
	}
	return r, nil
}

// ErrNoStore is returned by Record when the service has no outcome store.
var ErrNoStore = errors.New("outcome reporting is off: no database")

// Record stores one outcome report after checking that its entry and item
// exist. duplicate is true when the request id was seen before.
func (s *Service) Record(ctx context.Context, r outcome.Report) (duplicate bool, err error) {
	if err := r.Validate(); err != nil {
		return false, invalid("%v", err)
	}
	e := s.base.Get(r.EntryID)
	if e == nil {
		return false, ErrNotFound
	}
	n := len(e.Workarounds)
	if r.Kind == outcome.DeadEnd {
		n = len(e.DeadEnds)
	}
	if r.Index >= n {
		return false, invalid("%s has %d %s(s); index %d is out of range (indexes count from 0)", e.ID, n, r.Kind, r.Index)
	}
	if s.store == nil {
		return false, ErrNoStore
	}
	return s.store.Record(ctx, r)
}

// Entry returns the entry with id ("domain/slug"), or nil.
func (s *Service) Entry(id string) *kb.Entry { return s.base.Get(id) }

// Filter selects entries. Empty fields select everything; Q is a search
// query as for Search.
type Filter struct {
	Domain   string
	Category string
	Q        string
}

// Entries returns the entries that pass f: by id, or in search rank when
// f.Q is set.
func (s *Service) Entries(f Filter) []*kb.Entry {
	keep := func(e *kb.Entry) bool {
		return (f.Domain == "" || strings.EqualFold(e.Domain, f.Domain)) &&
			(f.Category == "" || strings.EqualFold(e.Category, f.Category))
	}
	var out []*kb.Entry
	if strings.TrimSpace(f.Q) != "" {
		for _, r := range kb.Search(s.base, f.Q, 0) {
			if keep(r.Entry) {
				out = append(out, r.Entry)
			}
		}
		return out
	}
	for _, e := range s.base.Entries() {
		if keep(e) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Search ranks entries for a query: an error name, an id, a few words or
// a pasted message line (see kb.Search). At most limit results.
func (s *Service) Search(q string, limit int) []kb.Result { return kb.Search(s.base, q, limit) }

// Domain is one domain of the knowledge base and what it holds.
type Domain struct {
	Name       string   `json:"name"`
	Entries    int      `json:"entries"`
	Categories []string `json:"categories"`
}

// Domains lists the knowledge base's domains by name.
func (s *Service) Domains() []Domain {
	by := map[string]*Domain{}
	cats := map[string]map[string]bool{}
	for _, e := range s.base.Entries() {
		d := by[e.Domain]
		if d == nil {
			d = &Domain{Name: e.Domain}
			by[e.Domain] = d
			cats[e.Domain] = map[string]bool{}
		}
		d.Entries++
		cats[e.Domain][e.Category] = true
	}
	out := make([]Domain, 0, len(by))
	for name, d := range by {
		d.Categories = make([]string, 0, len(cats[name]))
		for c := range cats[name] {
			d.Categories = append(d.Categories, c)
		}
		sort.Strings(d.Categories)
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Snapshot reads a PyTorch memory snapshot (pickle, or gzip of one) and
// analyzes it, as `gpudx mem` does. A snapshot that cannot be read is an
// *InvalidError naming why; a read error of r (a body over its size limit,
// say) ends up in that message too, so a caller that limits r should
// remember that it did.
func (s *Service) Snapshot(ctx context.Context, r io.Reader, opt memory.Options) (snap *snapshot.Snapshot, rep *memory.Report, err error) {
	defer func() {
		// The reader is written for hostile input, but a request must never
		// take the server down with it.
		if p := recover(); p != nil {
			snap, rep, err = nil, nil, fmt.Errorf("internal error reading snapshot: %v", p)
		}
	}()
	snap, err = snapshot.ReadWith(ctxReader{ctx, r}, snapshot.Options{MaxMemory: s.snapMem})
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, invalid("%s", strings.TrimPrefix(err.Error(), "snapshot: "))
	}
	return snap, memory.Analyze(snap, opt), nil
}

// LooksBinary reports whether data (the head of an input) has NUL bytes,
// which no log has.
func LooksBinary(head []byte) bool { return bytes.IndexByte(head, 0) >= 0 }
