package outcome

import (
	"database/sql"
	"fmt"
	"time"
)

// stamp gives a report without a time the current one, in UTC.
func stamp(r Report) Report {
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r.Time = r.Time.UTC()
	return r
}

// nullable stores an empty request id as NULL, which the unique index
// lets repeat.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// sameAs checks that a repeated request id reports what the stored report
// does. The note may differ: it is not counted.
func sameAs(old, r Report) error {
	if old.EntryID == r.EntryID && old.Kind == r.Kind && old.Index == r.Index && old.Worked == r.Worked {
		return nil
	}
	return fmt.Errorf("%w: %q was stored for %s, not %s", ErrConflict, r.RequestID, describe(old), describe(r))
}

// describe says what a report is about, counting items from 1 as people
// see them.
func describe(r Report) string {
	res := "failed"
	if r.Worked {
		res = "worked"
	}
	return fmt.Sprintf("%s %s %d %s", r.EntryID, r.Kind, r.Index+1, res)
}

// tallySQL counts one entry's reports per item; ph is the placeholder for
// the entry id.
func tallySQL(ph string) string {
	return `SELECT kind, idx, COUNT(*), COALESCE(SUM(CASE WHEN worked THEN 1 ELSE 0 END), 0)
		FROM outcome_reports WHERE entry_id = ` + ph + ` GROUP BY kind, idx`
}

// rowScanner is what scanTallies needs of *sql.Rows and pgx.Rows.
type rowScanner interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

func scanTallies(rows rowScanner, entryID string) (map[Key]Tally, error) {
	if c, ok := rows.(*sql.Rows); ok {
		defer c.Close()
	}
	t := map[Key]Tally{}
	for rows.Next() {
		var kind string
		var idx, n, worked int64
		if err := rows.Scan(&kind, &idx, &n, &worked); err != nil {
			return nil, err
		}
		t[Key{EntryID: entryID, Kind: Kind(kind), Index: int(idx)}] = Tally{Worked: int(worked), Failed: int(n - worked)}
	}
	return t, rows.Err()
}
