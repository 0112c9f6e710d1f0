package kb

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A load that meets bad files goes on: what loads is returned, and err
// is one ErrorList with a *LoadError per bad file, in path order.
func TestLoadErrorList(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("../knowledge/cuda/context-is-destroyed.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"a.json": "{", "b.json": string(good), "c.json": "[]"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	es, err := LoadPath(dir)
	var list ErrorList
	if len(es) != 1 || es[0].ID != "cuda/context-is-destroyed" || !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("LoadPath = %d entries, %v", len(es), err)
	}
	var le *LoadError
	if !errors.As(list[1], &le) || le.Path != dir+"/c.json" {
		t.Errorf("second error %v", list[1])
	}
	if want := list[0].Error() + " (and 1 more errors)"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
	if _, err := LoadPath(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) || err.Error() != dir+"/none: stat "+dir+"/none: no such file or directory" {
		t.Errorf("a missing path: %v", err)
	}
	if err := ErrorList(nil).Err(); err != nil {
		t.Errorf("an empty list is the error %v", err)
	}
	if _, err := LoadPath(filepath.Join(dir, "b.json")); err != nil {
		t.Errorf("one good file: %v", err)
	}
}
