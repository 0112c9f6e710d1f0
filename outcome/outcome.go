// Package outcome records whether a knowledge-base entry's workarounds and
// dead ends held for the people who tried them, and blends those reports
// with the curated rates. A Store keeps the reports (SQLite by default,
// PostgreSQL when several servers share one: packages outcome/sqlite and
// outcome/postgres); Blend turns a curated rate
// and a Tally into the rate gpudx shows.
package outcome

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrConflict is returned by Record when a report with the same RequestID
// is already stored but says something else (another entry, item or
// result): the client reused an id, and neither report is right to keep
// silently.
var ErrConflict = errors.New("request id already used for a different report")

// Kind says which list of an entry a report is about.
type Kind string

// Kinds of item a report can be about.
const (
	Workaround Kind = "workaround"
	DeadEnd    Kind = "dead_end"
)

// Report is one person's account of trying one item of an entry.
//
// Index is the item's position in the entry's list, counted from 0 as in
// the diagnosis JSON (the text output and `gpudx report` count from 1).
// Worked says the action fixed the error: for a workaround that is a
// success, for a dead end it is evidence against calling it one.
// RequestID, when set, makes the report idempotent: a second report with
// the same RequestID is acknowledged and not counted again.
type Report struct {
	RequestID string    `json:"request_id,omitempty"`
	EntryID   string    `json:"entry_id"`
	Kind      Kind      `json:"kind"`
	Index     int       `json:"index"`
	Worked    bool      `json:"worked"`
	Note      string    `json:"note,omitempty"`
	Time      time.Time `json:"time,omitzero"`
}

// Limits on what a report may carry.
const (
	MaxRequestID = 128
	MaxEntryID   = 256
	MaxNote      = 2000
	MaxIndex     = 1000
)

// Validate checks a report's shape (not whether the entry exists).
func (r Report) Validate() error {
	switch {
	case strings.TrimSpace(r.EntryID) == "":
		return errors.New("entry_id is empty")
	case len(r.EntryID) > MaxEntryID:
		return fmt.Errorf("entry_id is longer than %d bytes", MaxEntryID)
	case r.Kind != Workaround && r.Kind != DeadEnd:
		return fmt.Errorf("kind is %q; want %q or %q", r.Kind, Workaround, DeadEnd)
	case r.Index < 0 || r.Index > MaxIndex:
		return fmt.Errorf("index %d is out of range", r.Index)
	case len(r.RequestID) > MaxRequestID:
		return fmt.Errorf("request_id is longer than %d bytes", MaxRequestID)
	case len(r.Note) > MaxNote:
		return fmt.Errorf("note is longer than %d bytes", MaxNote)
	}
	return nil
}

// Key names one item of one entry.
type Key struct {
	EntryID string
	Kind    Kind
	Index   int
}

// Tally counts the reports about one item.
type Tally struct {
	Worked int `json:"worked"`
	Failed int `json:"failed"`
}

// N is the number of reports.
func (t Tally) N() int { return t.Worked + t.Failed }

// Store keeps reports. Implementations are safe for concurrent use. Record
// returns only after the report is durable; duplicate is true when a
// report with the same RequestID was already stored (nothing is counted
// twice).
type Store interface {
	Record(ctx context.Context, r Report) (duplicate bool, err error)
	// Tallies returns the counts for every reported item of an entry.
	Tallies(ctx context.Context, entryID string) (map[Key]Tally, error)
	Close() error
}

// PriorWeight is how many reports the curated rate counts as. With 10, a
// curated 80% and 10 observed reports of which 2 worked blend to 50%.
const PriorWeight = 10

// Rate is a curated rate blended with observed reports.
//
// For a workaround the rates are success rates and Worked counts for it;
// for a dead end they are fail rates and Failed counts for it.
type Rate struct {
	Curated     float64 `json:"curated"`
	Blended     float64 `json:"blended"`
	Reports     int     `json:"reports"`
	Worked      int     `json:"worked"`
	Failed      int     `json:"failed"`
	PriorWeight int     `json:"prior_weight"`
}

// Blend treats the curated rate as PriorWeight reports and adds the
// observed ones: (curated·w + favourable) / (w + n), where favourable is
// Worked for a workaround and Failed for a dead end.
func Blend(kind Kind, curated float64, t Tally) Rate {
	fav := t.Worked
	if kind == DeadEnd {
		fav = t.Failed
	}
	w := float64(PriorWeight)
	return Rate{
		Curated:     curated,
		Blended:     (curated*w + float64(fav)) / (w + float64(t.N())),
		Reports:     t.N(),
		Worked:      t.Worked,
		Failed:      t.Failed,
		PriorWeight: PriorWeight,
	}
}
