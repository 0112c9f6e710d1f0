package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKBNew: the skeleton is written once, never over a file, and lint
// flags it until it is filled.
func TestKBNew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cuda", "cufft-exec-failed.json")
	r := run(t, "", nil, "kb", "new", "cuda/cufft-exec-failed", "--dir", dir)
	if r.code != 0 || r.out != p+"\n" {
		t.Fatalf("exit %d, out %q, err %q", r.code, r.out, r.err)
	}
	first, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if r := run(t, "", nil, "kb", "new", "cuda/cufft-exec-failed", "--dir", dir); r.code != ExitUsage || !strings.Contains(r.err, "exists; not overwritten") {
		t.Errorf("second run: exit %d, err %q", r.code, r.err)
	}
	if again, _ := os.ReadFile(p); string(again) != string(first) {
		t.Error("the second run changed the file")
	}
	r = run(t, "", nil, "kb", "lint", p)
	if r.code != ExitFound || !strings.Contains(r.out, p+": regex: empty\n") || !strings.Contains(r.out, p+": workarounds[1].zh: empty") {
		t.Errorf("lint of the skeleton: exit %d\n%s", r.code, r.out)
	}
	for _, bad := range []string{"cufft-exec-failed", "gpu/x", "cuda/Bad"} {
		if r := run(t, "", nil, "kb", "new", bad, "--dir", dir); r.code != ExitUsage {
			t.Errorf("%s: exit %d %q", bad, r.code, r.err)
		}
	}
}

// TestKBMigrate: an entry written before rate bases and checks comes out
// as the built-in one is, and a second run changes nothing.
func TestKBMigrate(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/premigration/nccl/unhandled-cuda-error.json")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "nccl", "unhandled-cuda-error.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, src, 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", nil, "kb", "migrate", "--dry-run", dir)
	if after, _ := os.ReadFile(p); r.code != 0 || string(after) != string(src) {
		t.Fatalf("--dry-run: exit %d, changed %v", r.code, string(after) != string(src))
	}
	r = run(t, "", nil, "kb", "migrate", dir)
	wantOut := p + ": workarounds[0]: now a check\n" + p + ": workarounds[2]: now a check\n" + p + ": workarounds[3]: now a check\n"
	if r.code != 0 || r.out != wantOut || !strings.HasSuffix(r.err, "1 file(s) read; changed: 4 rate basis(es) added, 3 workaround(s) made checks\n") {
		t.Fatalf("exit %d\n%s%s", r.code, r.out, r.err)
	}
	got, _ := os.ReadFile(p)
	want, err := os.ReadFile("../../knowledge/nccl/unhandled-cuda-error.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("migrated file differs from knowledge/nccl/unhandled-cuda-error.json:\n%s", got)
	}
	r = run(t, "", nil, "kb", "migrate", dir)
	if r.code != 0 || r.out != "" || !strings.HasSuffix(r.err, "changed: 0 rate basis(es) added, 0 workaround(s) made checks\n") {
		t.Errorf("second run: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if r := run(t, "", nil, "kb", "migrate", filepath.Join(dir, "nope")); r.code != ExitUsage {
		t.Errorf("missing dir: exit %d", r.code)
	}
}

// TestKBStatsChecked: kb stats says how many entries a second reader has
// checked, by family, and what the rates rest on, in text and JSON.
func TestKBStatsChecked(t *testing.T) {
	r := run(t, "", nil, "kb", "stats", "--format", "json")
	var s struct {
		Entries         int            `json:"entries"`
		ByFamily        map[string]int `json:"by_family"`
		Checked         struct{ Count int }
		CheckedByFamily map[string]int `json:"checked_by_family"`
		RateBases       map[string]int `json:"rate_bases"`
		Checks          int            `json:"checks"`
		DeadEnds        int            `json:"dead_ends"`
		Workarounds     int            `json:"workarounds"`
	}
	if r.code != 0 {
		t.Fatalf("exit %d %s", r.code, r.err)
	}
	if err := json.Unmarshal([]byte(r.out), &s); err != nil {
		t.Fatal(err)
	}
	sum := 0
	for f := range s.ByFamily {
		n, ok := s.CheckedByFamily[f]
		if !ok || n > s.ByFamily[f] {
			t.Errorf("family %s: %d checked (present %v) of %d", f, n, ok, s.ByFamily[f])
		}
		sum += n
	}
	// Every rate rests on something, and a check has none.
	bases := 0
	for b, n := range s.RateBases {
		if b == "" {
			t.Errorf("%d rates without a basis", n)
		}
		bases += n
	}
	if sum != s.Checked.Count || len(s.CheckedByFamily) != len(s.ByFamily) || s.Checks == 0 ||
		bases != s.DeadEnds+s.Workarounds-s.Checks+s.Entries {
		t.Errorf("checked %d (by family %v), bases %v, checks %d", s.Checked.Count, s.CheckedByFamily, s.RateBases, s.Checks)
	}
	r = run(t, "", nil, "kb", "stats")
	if r.code != 0 || !strings.Contains(r.out, "\nchecked by a second reader ") || !strings.Contains(r.out, "\nrates by basis") || !strings.Contains(r.out, "  checks (no rate) ") {
		t.Errorf("text:\n%s", r.out)
	}
}
