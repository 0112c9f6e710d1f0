package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
)

var (
	embeddedOnce sync.Once
	embedded     []*kb.Entry
	embeddedErr  error
)

// loadEmbedded returns a fresh Base holding the built-in entries. A broken
// built-in entry is a bug in this build, reported as an internal error.
func loadEmbedded() (*kb.Base, error) {
	embeddedOnce.Do(func() {
		var err error
		embedded, err = kb.LoadFS(knowledge.FS, ".", "knowledge/")
		var list kb.ErrorList
		if errors.As(err, &list) {
			embeddedErr = &exitError{ExitInternal, fmt.Errorf("built-in knowledge base: %w", errors.Join(list...))}
		}
	})
	if embeddedErr != nil {
		return nil, embeddedErr
	}
	b := kb.NewBase()
	for _, e := range embedded {
		b.Add(e)
	}
	return b, nil
}

// loadRegistry reads the built-in registry of names (knowledge/_registry).
func loadRegistry() (*kb.Registry, error) {
	reg, err := kb.ReadRegistryFS(knowledge.FS, ".", "knowledge/")
	if err != nil {
		return nil, &exitError{ExitInternal, fmt.Errorf("built-in registry: %w", err)}
	}
	return reg, nil
}

// kbPaths returns the --kb paths followed by those in GPUDX_KB (a list
// separated like PATH).
func kbPaths(flag []string, env *IO) []string {
	paths := append([]string{}, flag...)
	if v := env.Getenv("GPUDX_KB"); v != "" {
		for _, p := range filepath.SplitList(v) {
			if p = strings.TrimSpace(p); p != "" {
				paths = append(paths, p)
			}
		}
	}
	return paths
}

// loadBase loads the built-in entries, then each extra path in order. An
// entry whose id is already loaded replaces it, and that is said on
// stderr. A path that cannot be read at all is a usage error; a file in it
// that is not an entry is reported and skipped.
func loadBase(extra []string, env *IO) (*kb.Base, error) {
	base, err := loadEmbedded()
	if err != nil {
		return nil, err
	}
	for _, p := range extra {
		if _, err := os.Stat(p); err != nil {
			return nil, usageErr("--kb %s: %v", p, errors.Unwrap(err))
		}
		entries, err := kb.LoadPath(p)
		var list kb.ErrorList
		errors.As(err, &list)
		for _, err := range list {
			fmt.Fprintf(env.Err, "gpudx: warning: skipped %v\n", err)
		}
		for _, e := range entries {
			if old := base.Add(e); old != nil {
				fmt.Fprintf(env.Err, "gpudx: %s from %s overrides the one from %s\n", e.ID, e.Origin, old.Origin)
			}
		}
	}
	return base, nil
}
