package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/gpudx/gpudx/internal/service"
	"github.com/gpudx/gpudx/internal/store"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/outcome"
)

// openStore opens the outcome database: db as given to --db (a SQLite
// path or a postgres:// URL), or the default SQLite file when db is "".
func openStore(ctx context.Context, env *IO, db string) (outcome.Store, error) {
	st, err := store.Open(ctx, db, env.Getenv)
	if err != nil {
		return nil, usageErr("--db: %v", err)
	}
	return st, nil
}

// newService loads the knowledge base (built in, plus --kb and GPUDX_KB)
// and returns the engine that serve and mcp share. store may be nil.
func newService(env *IO, kbFlag []string, store outcome.Store) (*service.Service, error) {
	base, err := loadBase(kbPaths(kbFlag, env), env)
	if err != nil {
		return nil, err
	}
	svc, err := service.New(base, store)
	var skipped kb.ErrorList
	errors.As(err, &skipped)
	for _, e := range skipped {
		fmt.Fprintf(env.Err, "gpudx: warning: %v\n", e)
	}
	return svc, nil
}
