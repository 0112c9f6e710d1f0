package outcome

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// ErrConflict is returned by Record when a report with the same RequestID
// is already stored but says something else (another entry, item or
// result): the client reused an id, and neither report is right to keep
// silently.
var ErrConflict = errors.New("request id already used for a different report")

// ErrNoDatabase is returned by OpenExisting when the SQLite file does not
// exist. It matches fs.ErrNotExist too.
var ErrNoDatabase = fmt.Errorf("no outcome database: %w", fs.ErrNotExist)

// Open opens the store named by dsn: a postgres:// or postgresql:// URL
// opens PostgreSQL; anything else is the path of a SQLite file, created
// with its folder when missing; "" is DefaultPath. The schema is created
// or brought up to date.
func Open(ctx context.Context, dsn string, getenv func(string) string) (Store, error) {
	return open(ctx, dsn, getenv, true)
}

// OpenExisting is Open without creating anything: a SQLite file that does
// not exist yet is ErrNoDatabase. Readers (diagnose) use it so that only a
// report creates the database.
func OpenExisting(ctx context.Context, dsn string, getenv func(string) string) (Store, error) {
	return open(ctx, dsn, getenv, false)
}

func open(ctx context.Context, dsn string, getenv func(string) string, create bool) (Store, error) {
	if IsPostgres(dsn) {
		return openPostgres(ctx, dsn)
	}
	path := dsn
	if path == "" {
		var err error
		if path, err = DefaultPath(getenv); err != nil {
			return nil, err
		}
	}
	return openSQLite(ctx, path, create)
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

// wrapErr builds a storeError, masking secret (a password) in err's text.
func wrapErr(db, op string, err error, secret string) error {
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
