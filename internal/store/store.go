// Package store opens the outcome database a face was given: a
// postgres:// URL opens PostgreSQL, anything else a SQLite file. The
// engine (package diagnose) needs only the outcome.Store interface, so
// only the programs that open a database link its drivers.
package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/gpudx/gpudx/outcome"
	"github.com/gpudx/gpudx/outcome/postgres"
	"github.com/gpudx/gpudx/outcome/sqlite"
)

// Open opens the store named by dsn: a postgres:// or postgresql:// URL
// opens PostgreSQL; anything else is the path of a SQLite file, created
// with its folder when missing; "" is DefaultPath. The schema is created
// or brought up to date.
func Open(ctx context.Context, dsn string, getenv func(string) string) (outcome.Store, error) {
	return open(ctx, dsn, getenv, true)
}

// OpenExisting is Open without creating anything: a SQLite file that does
// not exist yet is sqlite.ErrNoDatabase. Readers (diagnose) use it so that
// only a report creates the database.
func OpenExisting(ctx context.Context, dsn string, getenv func(string) string) (outcome.Store, error) {
	return open(ctx, dsn, getenv, false)
}

func open(ctx context.Context, dsn string, getenv func(string) string, create bool) (outcome.Store, error) {
	if IsPostgres(dsn) {
		return postgres.Open(ctx, dsn)
	}
	path := dsn
	if path == "" {
		var err error
		if path, err = DefaultPath(getenv); err != nil {
			return nil, err
		}
	}
	if create {
		return sqlite.Open(ctx, path)
	}
	return sqlite.OpenExisting(ctx, path)
}

// IsPostgres reports whether dsn names a PostgreSQL database rather than a
// SQLite file.
func IsPostgres(dsn string) bool {
	l := strings.ToLower(dsn)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// DefaultPath is the SQLite file used when no --db is given: gpudx/outcomes.db
// under $XDG_DATA_HOME, or ~/.local/share when that is unset. As the XDG
// specification says, a relative $XDG_DATA_HOME is ignored.
func DefaultPath(getenv func(string) string) (string, error) {
	if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "gpudx", "outcomes.db"), nil
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "gpudx", "outcomes.db"), nil
	}
	return "", errors.New("no data directory for the outcome database: neither XDG_DATA_HOME nor HOME is set (give --db)")
}
