package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/snapshot"
)

// genDir holds snapshots written by bench/mem/gensnap.py, each with a
// FILE.expected.json holding the figures the generator computed from its own
// allocator simulation (see testdata/gen/README.md).
const genDir = "testdata/gen"

// genExpected is the shape of a FILE.expected.json.
type genExpected struct {
	Generator struct {
		Command  string `json:"command"`
		Scenario string `json:"scenario"`
	} `json:"generator"`
	// Report is a subset of Report's JSON form: every key present must match.
	Report json.RawMessage `json:"report"`
	// CapacityBytes is the --capacity the snapshot was generated with, when
	// gpudx is meant to know it.
	CapacityBytes uint64 `json:"capacity_bytes"`
	Top           int    `json:"top"`
	// Diff, on the second file of a pair, is Compare(DiffBeforeFile, FILE).
	Diff           json.RawMessage `json:"diff"`
	DiffBeforeFile string          `json:"diff_before_file"`
}

func genFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"*.pickle", "*.pickle.gz"} {
		m, err := filepath.Glob(filepath.Join(genDir, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatalf("no generated snapshots in %s", genDir)
	}
	return files
}

// TestGenFixtures reads every generated snapshot and compares each figure of
// the report (and, for a before/after pair, of the diff) with the expected
// JSON, exactly.
func TestGenFixtures(t *testing.T) {
	for _, file := range genFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			exp := readGenExpected(t, file+".expected.json")
			s, err := snapshot.ReadFile(file)
			if err != nil {
				t.Fatalf("ReadFile: %v", err)
			}
			rep := Analyze(s, Options{Capacity: exp.CapacityBytes, Top: exp.Top})
			var mism []string
			compareJSON(&mism, "report", decodeJSON(t, exp.Report), roundTrip(t, rep))
			if len(exp.Diff) > 0 {
				before, err := snapshot.ReadFile(filepath.Join(genDir, exp.DiffBeforeFile))
				if err != nil {
					t.Fatalf("ReadFile %s: %v", exp.DiffBeforeFile, err)
				}
				d := Compare(before, s, exp.Top)
				compareJSON(&mism, "diff", decodeJSON(t, exp.Diff), roundTrip(t, d))
			}
			for _, m := range mism {
				t.Error(m)
			}
			if len(mism) > 0 {
				t.Logf("%d mismatches; the file was made by: %s", len(mism), exp.Generator.Command)
			}
		})
	}
}

// TestGenFixturesListed keeps the README's list and the directory in step.
func TestGenFixturesListed(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(genDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range genFiles(t) {
		name := filepath.Base(file)
		if !bytes.Contains(readme, []byte("`"+name+"`")) {
			t.Errorf("%s is not listed in %s/README.md", name, genDir)
		}
		if _, err := os.Stat(file + ".expected.json"); err != nil {
			t.Errorf("%s has no expected figures: %v", name, err)
		}
	}
}

func readGenExpected(t *testing.T, path string) *genExpected {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var e genExpected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &e
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return decodeJSON(t, b)
}

// compareJSON checks that every key of want is in got with an equal value.
// Arrays must have the same length. Numbers compare exactly: integers as
// integers, others as float64.
func compareJSON(out *[]string, path string, want, got any) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: got %s, want an object", path, short(got)))
			return
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				*out = append(*out, fmt.Sprintf("%s.%s: missing, want %s", path, k, short(w[k])))
				continue
			}
			compareJSON(out, path+"."+k, w[k], gv)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: got %s, want an array of %d", path, short(got), len(w)))
			return
		}
		if len(g) != len(w) {
			*out = append(*out, fmt.Sprintf("%s: got %d elements, want %d\n  got:  %s\n  want: %s",
				path, len(g), len(w), short(got), short(want)))
			return
		}
		for i := range w {
			compareJSON(out, fmt.Sprintf("%s[%d]", path, i), w[i], g[i])
		}
	case json.Number:
		g, ok := got.(json.Number)
		if !ok || !numbersEqual(w, g) {
			*out = append(*out, fmt.Sprintf("%s: got %s, want %s", path, short(got), w))
		}
	default:
		if want != got {
			*out = append(*out, fmt.Sprintf("%s: got %s, want %s", path, short(got), short(want)))
		}
	}
}

func numbersEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, okx := new(big.Int).SetString(string(a), 10)
	y, oky := new(big.Int).SetString(string(b), 10)
	if okx && oky {
		return x.Cmp(y) == 0
	}
	if okx != oky && !strings.ContainsAny(string(a)+string(b), ".eE") {
		return false
	}
	fx, err1 := a.Float64()
	fy, err2 := b.Float64()
	return err1 == nil && err2 == nil && fx == fy
}

func short(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}
