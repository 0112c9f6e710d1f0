// Package sqlite keeps outcome reports in one SQLite file (modernc.org/sqlite,
// no cgo): the default store of a single gpudx.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/gpudx/gpudx/outcome"
	"github.com/gpudx/gpudx/outcome/internal/sqlutil"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// ErrNoDatabase is returned by OpenExisting when the file does not exist.
// It matches fs.ErrNotExist too.
var ErrNoDatabase = fmt.Errorf("no outcome database: %w", fs.ErrNotExist)

// sqliteStore keeps reports in one SQLite file. WAL lets readers run while
// a report is written; synchronous=FULL syncs the WAL on every commit, so
// a report Record acknowledged survives a killed process and a power cut.
type sqliteStore struct {
	db   *sql.DB
	path string
}

// sqliteSchema are the migrations, in order; PRAGMA user_version counts
// how many have run. Append to evolve the schema, never edit.
var sqliteSchema = []string{
	`CREATE TABLE outcome_reports (
		id         INTEGER PRIMARY KEY,
		request_id TEXT UNIQUE,
		entry_id   TEXT NOT NULL,
		kind       TEXT NOT NULL CHECK (kind IN ('workaround', 'dead_end')),
		idx        INTEGER NOT NULL CHECK (idx >= 0),
		worked     INTEGER NOT NULL CHECK (worked IN (0, 1)),
		note       TEXT NOT NULL DEFAULT '',
		created_at TEXT NOT NULL
	);
	CREATE INDEX outcome_reports_entry ON outcome_reports (entry_id);`,
}

// busyTimeout is how long a writer waits for another one (another gpudx
// process on the same file) before giving up.
const busyTimeout = 10 * time.Second

// Open opens the SQLite file at path, creating it and its folder when
// missing, and creates or brings up to date its schema.
func Open(ctx context.Context, path string) (outcome.Store, error) {
	return open(ctx, path, true)
}

// OpenExisting is Open without creating anything: a file that does not
// exist yet is ErrNoDatabase.
func OpenExisting(ctx context.Context, path string) (outcome.Store, error) {
	return open(ctx, path, false)
}

func open(ctx context.Context, path string, create bool) (outcome.Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, sqlutil.Wrap(path, "", err, "")
	}
	fail := func(op string, err error) (outcome.Store, error) { return nil, sqlutil.Wrap(abs, op, err, "") }
	fi, err := os.Stat(abs)
	switch {
	case err == nil && fi.IsDir():
		return fail("", errors.New("is a directory"))
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fail("", err)
	case err != nil:
		if !create {
			return nil, sqlutil.Wrap(abs, "", ErrNoDatabase, "")
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			return fail("creating its folder", err)
		}
		// Notes are free text: keep the file (and the -wal and -shm files
		// SQLite gives the same mode) to its owner.
		f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return fail("creating", err)
		}
		f.Close()
	}
	q := url.Values{}
	q.Set("mode", "rw") // never create here: the file exists by now
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	q.Set("_journal_mode", "WAL")
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate") // take the write lock at BEGIN: no upgrade deadlocks
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return fail("opening", err)
	}
	s := &sqliteStore{db: db, path: abs}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// migrate runs the migrations this database lacks, in one transaction, so
// two processes opening a new file at once leave one schema.
func (s *sqliteStore) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.err("opening", err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return s.err("reading the schema version", err)
	}
	if v > len(sqliteSchema) {
		return s.err("", fmt.Errorf("schema version %d is newer than this gpudx knows (%d): upgrade gpudx", v, len(sqliteSchema)))
	}
	for i := v; i < len(sqliteSchema); i++ {
		if _, err := tx.ExecContext(ctx, sqliteSchema[i]); err != nil {
			return s.err(fmt.Sprintf("creating schema version %d", i+1), err)
		}
	}
	if v < len(sqliteSchema) {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(sqliteSchema))); err != nil {
			return s.err("setting the schema version", err)
		}
	}
	return s.err("creating the schema", tx.Commit())
}

func (s *sqliteStore) err(op string, err error) error { return sqlutil.Wrap(s.path, op, err, "") }

func (s *sqliteStore) Record(ctx context.Context, r outcome.Report) (bool, error) {
	if err := r.Validate(); err != nil {
		return false, err
	}
	r = sqlutil.Stamp(r)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, s.err("recording", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO outcome_reports
		(request_id, entry_id, kind, idx, worked, note, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (request_id) DO NOTHING`,
		sqlutil.Nullable(r.RequestID), r.EntryID, string(r.Kind), r.Index, r.Worked, r.Note,
		r.Time.Format(time.RFC3339Nano))
	if err != nil {
		return false, s.err("recording", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, s.err("recording", err)
	}
	if n == 0 {
		var old outcome.Report
		var kind string
		if err := tx.QueryRowContext(ctx, `SELECT entry_id, kind, idx, worked FROM outcome_reports WHERE request_id = ?`,
			r.RequestID).Scan(&old.EntryID, &kind, &old.Index, &old.Worked); err != nil {
			return false, s.err("reading the earlier report", err)
		}
		old.Kind = outcome.Kind(kind)
		if err := sqlutil.SameAs(old, r); err != nil {
			return false, err
		}
		return true, nil
	}
	if err := tx.Commit(); err != nil {
		return false, s.err("recording", err)
	}
	return false, nil
}

func (s *sqliteStore) Tallies(ctx context.Context, entryID string) (map[outcome.Key]outcome.Tally, error) {
	rows, err := s.db.QueryContext(ctx, sqlutil.TallySQL("?"), entryID)
	if err != nil {
		return nil, s.err("reading outcomes", err)
	}
	t, err := sqlutil.ScanTallies(rows, entryID)
	return t, s.err("reading outcomes", err)
}

func (s *sqliteStore) Close() error { return s.err("closing", s.db.Close()) }

// String names the database in messages.
func (s *sqliteStore) String() string { return s.path }
