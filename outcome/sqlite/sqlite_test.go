package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/outcome"
	"github.com/gpudx/gpudx/outcome/internal/storetest"
)

const oom = storetest.OOM

func sqliteDSN(t *testing.T) string { return filepath.Join(t.TempDir(), "outcomes.db") }

func TestSQLiteContract(t *testing.T) { storetest.Contract(t, Open, sqliteDSN) }

// TestSQLiteFile checks what Open leaves on disk: the folder made for it
// (private), the file (private), WAL and full syncs on the connections.
func TestSQLiteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gpudx", "outcomes.db")
	st, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := st.(*sqliteStore).path; got != path {
		t.Errorf("opened %s, want %s", got, path)
	}
	for p, mode := range map[string]fs.FileMode{filepath.Dir(path): 0o700 | fs.ModeDir, path: 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode() != mode {
			t.Errorf("%s: %v %v, want mode %v", p, fi.Mode(), err, mode)
		}
	}
	db := st.(*sqliteStore).db
	for pragma, want := range map[string]string{"journal_mode": "wal", "synchronous": "2", "busy_timeout": "10000", "user_version": "1"} {
		var got string
		if err := db.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil || got != want {
			t.Errorf("PRAGMA %s = %q, %v; want %q", pragma, got, err, want)
		}
	}
}

func TestSQLiteOpenErrors(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(dir, "newer.db")
	st, err := Open(context.Background(), newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.(*sqliteStore).db.Exec("PRAGMA user_version = 7"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, tt := range []struct{ name, dsn, want string }{
		{"a directory", dir, "outcome database " + dir + ": is a directory"},
		{"under a file", filepath.Join(notDB, "outcomes.db"), "outcome database " + notDB + "/outcomes.db: stat " + notDB + "/outcomes.db: not a directory"},
		{"not a database", notDB, "outcome database " + notDB + ": opening: file is not a database (26)"},
		{"written by a newer gpudx", newer, "outcome database " + newer + ": schema version 7 is newer than this gpudx knows (1): upgrade gpudx"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := Open(context.Background(), tt.dsn)
			if err == nil {
				st.Close()
				t.Fatal("opened")
			}
			if err.Error() != tt.want {
				t.Errorf("error %q\nwant       %q", err, tt.want)
			}
		})
	}
}

// TestOpenExisting checks that a reader never creates the database.
func TestOpenExisting(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "outcomes.db")
	_, err := OpenExisting(context.Background(), path)
	if !errors.Is(err, ErrNoDatabase) || !errors.Is(err, fs.ErrNotExist) || err.Error() != "outcome database "+path+": no outcome database: file does not exist" {
		t.Errorf("OpenExisting on nothing: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenExisting created %s (%v)", filepath.Dir(path), err)
	}
	st, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Record(context.Background(), outcome.Report{EntryID: oom, Kind: outcome.Workaround, Index: 1, Worked: true}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = OpenExisting(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	storetest.WantTallies(t, st, oom, map[outcome.Key]outcome.Tally{{EntryID: oom, Kind: outcome.Workaround, Index: 1}: {Worked: 1}})
}

// TestSQLiteKill kills a writer mid-stream: every report it acknowledged
// must be there once, and the file must be sound.
func TestSQLiteKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a writer process")
	}
	dsn := sqliteDSN(t)
	acked := storetest.KillWriter(t, dsn)
	st := storetest.CheckAcked(t, Open, storedIDs, dsn, acked)
	var ok string
	if err := st.(*sqliteStore).db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity_check: %q, %v", ok, err)
	}
}

// TestKillChild is the writer the kill test starts in a child process.
func TestKillChild(t *testing.T) { storetest.KillChild(t, Open) }

func storedIDs(st outcome.Store) (map[string]int, error) {
	rows, err := st.(*sqliteStore).db.Query(storetest.StoredIDsQuery)
	if err != nil {
		return nil, err
	}
	return countIDs(rows)
}

func countIDs(rows *sql.Rows) (map[string]int, error) {
	defer rows.Close()
	ids := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		ids[id] = n
	}
	return ids, rows.Err()
}
