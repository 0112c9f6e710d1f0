package outcome

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sqliteDSN(t *testing.T) string { return filepath.Join(t.TempDir(), "outcomes.db") }

func TestSQLiteContract(t *testing.T) { testContract(t, sqliteDSN) }

// TestSQLiteFile checks what Open leaves on disk: the folder made for it
// (private), the file (private), WAL and full syncs on the connections.
func TestSQLiteFile(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"XDG_DATA_HOME": dir}
	st, err := Open(context.Background(), "", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	path := filepath.Join(dir, "gpudx", "outcomes.db")
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
	st, err := Open(context.Background(), newer, nil)
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
			st, err := Open(context.Background(), tt.dsn, nil)
			if err == nil {
				st.Close()
				t.Fatal("opened")
			}
			if err.Error() != tt.want {
				t.Errorf("error %q\nwant       %q", err, tt.want)
			}
		})
	}
	if _, err := Open(context.Background(), "", func(string) string { return "" }); err == nil || err.Error() != "no data directory for the outcome database: neither XDG_DATA_HOME nor HOME is set (give --db)" {
		t.Errorf("no data directory: %v", err)
	}
}

// TestOpenExisting checks that a reader never creates the database.
func TestOpenExisting(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "outcomes.db")
	_, err := OpenExisting(context.Background(), path, nil)
	if !errors.Is(err, ErrNoDatabase) || !errors.Is(err, fs.ErrNotExist) || err.Error() != "outcome database "+path+": no outcome database: file does not exist" {
		t.Errorf("OpenExisting on nothing: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenExisting created %s (%v)", filepath.Dir(path), err)
	}
	st, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Record(context.Background(), Report{EntryID: oom, Kind: Workaround, Index: 1, Worked: true}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = OpenExisting(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	wantTallies(t, st, oom, map[Key]Tally{{oom, Workaround, 1}: {Worked: 1}})
}

// TestSQLiteKill kills a writer mid-stream: every report it acknowledged
// must be there once, and the file must be sound.
func TestSQLiteKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a writer process")
	}
	dsn := sqliteDSN(t)
	acked := killWriter(t, dsn)
	st := checkAcked(t, dsn, acked)
	var ok string
	if err := st.(*sqliteStore).db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity_check: %q, %v", ok, err)
	}
}
