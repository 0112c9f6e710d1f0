package outcome

import (
	"context"
	"errors"
)

// Open opens the store named by dsn: a postgres:// or postgresql:// URL
// opens PostgreSQL; anything else is the path of a SQLite file, created
// with its folder when missing; "" is DefaultPath.
func Open(ctx context.Context, dsn string, getenv func(string) string) (Store, error) {
	return nil, errors.New("outcome.Open: not implemented yet")
}

// DefaultPath is the SQLite file used when no --db is given: gpudx/outcomes.db
// under $XDG_DATA_HOME, or ~/.local/share when that is unset.
func DefaultPath(getenv func(string) string) (string, error) {
	return "", errors.New("outcome.DefaultPath: not implemented yet")
}
