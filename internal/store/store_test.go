package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultPath(t *testing.T) {
	for _, tt := range []struct {
		name      string
		env       map[string]string
		want, err string
	}{
		{"XDG_DATA_HOME", map[string]string{"XDG_DATA_HOME": "/data/u", "HOME": "/home/u"}, "/data/u/gpudx/outcomes.db", ""},
		{"HOME", map[string]string{"HOME": "/home/u"}, "/home/u/.local/share/gpudx/outcomes.db", ""},
		// The XDG specification: a relative path is invalid and ignored.
		{"relative XDG_DATA_HOME", map[string]string{"XDG_DATA_HOME": "data", "HOME": "/home/u"}, "/home/u/.local/share/gpudx/outcomes.db", ""},
		{"neither", nil, "", "no data directory for the outcome database: neither XDG_DATA_HOME nor HOME is set (give --db)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DefaultPath(func(k string) string { return tt.env[k] })
			if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) {
				t.Errorf("DefaultPath = %q, %v; want %q, %q", got, err, tt.want, tt.err)
			}
		})
	}
}

func TestIsPostgres(t *testing.T) {
	for dsn, want := range map[string]bool{
		"postgres://h/db": true, "postgresql://h/db": true, "POSTGRES://h/db": true,
		"/tmp/outcomes.db": false, "postgres.db": false, "": false, "sqlite://x": false,
	} {
		if IsPostgres(dsn) != want {
			t.Errorf("IsPostgres(%q) = %v", dsn, !want)
		}
	}
}

// TestOpen checks which store a dsn opens: "" the default SQLite file
// (created with its folder), a path that file, a postgres:// URL
// PostgreSQL (its errors name it without the password).
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"XDG_DATA_HOME": dir}
	getenv := func(k string) string { return env[k] }
	path := filepath.Join(dir, "gpudx", "outcomes.db")
	if _, err := OpenExisting(context.Background(), "", getenv); err == nil || err.Error() != "outcome database "+path+": no outcome database: file does not exist" {
		t.Errorf("OpenExisting before any report: %v", err)
	}
	st, err := Open(context.Background(), "", getenv)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(st); got != path {
		t.Errorf("opened %s, want %s", got, path)
	}
	st.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode() != 0o600 {
		t.Errorf("%s: %v", path, err)
	}
	st, err = OpenExisting(context.Background(), "", getenv)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := Open(context.Background(), "", func(string) string { return "" }); err == nil || err.Error() != "no data directory for the outcome database: neither XDG_DATA_HOME nor HOME is set (give --db)" {
		t.Errorf("no data directory: %v", err)
	}
	_, err = Open(context.Background(), "postgres://postgres:hunter2@127.0.0.1:notaport/db", getenv)
	if want := "outcome database postgres://postgres@127.0.0.1:notaport/db: parsing the URL: cannot parse"; err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a bad PostgreSQL URL: %v; want it to start %q", err, want)
	}
}
