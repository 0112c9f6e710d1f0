// Package sqlutil holds what the SQLite and PostgreSQL stores share: the
// tally query, the check of a repeated request id, and errors that name
// the database without its password.
package sqlutil

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpudx/gpudx/outcome"
)

// Stamp gives a report without a time the current one, in UTC.
func Stamp(r outcome.Report) outcome.Report {
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r.Time = r.Time.UTC()
	return r
}

// Nullable stores an empty request id as NULL, which the unique index
// lets repeat.
func Nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// SameAs checks that a repeated request id reports what the stored report
// does. The note may differ: it is not counted.
func SameAs(old, r outcome.Report) error {
	if old.EntryID == r.EntryID && old.Kind == r.Kind && old.Index == r.Index && old.Worked == r.Worked {
		return nil
	}
	return fmt.Errorf("%w: %q was stored for %s, not %s", outcome.ErrConflict, r.RequestID, describe(old), describe(r))
}

// describe says what a report is about, counting items from 1 as people
// see them.
func describe(r outcome.Report) string {
	res := "failed"
	if r.Worked {
		res = "worked"
	}
	return fmt.Sprintf("%s %s %d %s", r.EntryID, r.Kind, r.Index+1, res)
}

// TallySQL counts one entry's reports per item; ph is the placeholder for
// the entry id.
func TallySQL(ph string) string {
	return `SELECT kind, idx, COUNT(*), COALESCE(SUM(CASE WHEN worked THEN 1 ELSE 0 END), 0)
		FROM outcome_reports WHERE entry_id = ` + ph + ` GROUP BY kind, idx`
}

// Rows is what ScanTallies needs of *sql.Rows and pgx.Rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanTallies reads the rows of TallySQL.
func ScanTallies(rows Rows, entryID string) (map[outcome.Key]outcome.Tally, error) {
	if c, ok := rows.(*sql.Rows); ok {
		defer c.Close()
	}
	t := map[outcome.Key]outcome.Tally{}
	for rows.Next() {
		var kind string
		var idx, n, worked int64
		if err := rows.Scan(&kind, &idx, &n, &worked); err != nil {
			return nil, err
		}
		t[outcome.Key{EntryID: entryID, Kind: outcome.Kind(kind), Index: int(idx)}] = outcome.Tally{Worked: int(worked), Failed: int(n - worked)}
	}
	return t, rows.Err()
}

// storeError says which database failed and why, in words that never
// carry the DSN's password. Unwrap keeps errors.Is working (ErrConflict,
// context errors).
type storeError struct {
	db  string // the SQLite path, or the PostgreSQL URL without its password
	op  string
	err error
	msg string // err's text with any secret masked
}

func (e *storeError) Error() string {
	if e.op == "" {
		return fmt.Sprintf("outcome database %s: %s", e.db, e.msg)
	}
	return fmt.Sprintf("outcome database %s: %s: %s", e.db, e.op, e.msg)
}

func (e *storeError) Unwrap() error { return e.err }

// Wrap says that operation op on database db failed with err (nil stays
// nil), masking secret (a password) in err's text.
func Wrap(db, op string, err error, secret string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if secret != "" && strings.Contains(msg, secret) {
		msg = strings.ReplaceAll(msg, secret, "xxxxx")
		err = errors.New(msg) // nothing may unwrap to the password either
	}
	return &storeError{db: db, op: op, err: err, msg: msg}
}
