package kbmigrate

import (
	"io/fs"
	"path"
	"slices"
	"testing"

	"github.com/gpudx/gpudx/knowledge"
)

// TestKnowledgeMigrated: the built-in entries are in the current format
// (after merging entries written before it, run `gpudx kb migrate`), and
// every listed diagnostic step is still found and marked.
func TestKnowledgeMigrated(t *testing.T) {
	seen := map[string][]string{}
	err := fs.WalkDir(knowledge.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "_registry" {
				return fs.SkipDir
			}
			return nil
		}
		if path.Ext(p) != ".json" {
			return nil
		}
		data, err := fs.ReadFile(knowledge.FS, p)
		if err != nil {
			return err
		}
		_, res, err := Migrate(data, DiagnosticSteps)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			return nil
		}
		if res.Changed() {
			t.Errorf("%s: not migrated (%d bases to add, checks to mark %v): run gpudx kb migrate", p, res.Bases, res.Checks)
		}
		seen[res.ID] = res.CheckActions
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for id, actions := range DiagnosticSteps {
		for _, a := range actions {
			if !slices.Contains(seen[id], a) {
				t.Errorf("%s: diagnostic step %q not found as a check (entry reworded? update checks.go)", id, a)
			}
		}
	}
}
