package diagnose

import (
	"bufio"
	"bytes"
	"encoding/json"
	"github.com/gpudx/gpudx/internal/sharedtest"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/internal/loggen"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
	"github.com/gpudx/gpudx/scan"
)

// gatedAndFull diagnoses the inputs twice, once showing the collector only
// the lines gate selects and once showing it every line, and returns both
// reports as JSON.
func gatedAndFull(t *testing.T, s *scan.Scanner, inputs map[string][]byte, names []string) (string, string) {
	t.Helper()
	return reportJSON(t, s, Plan(s), inputs, names), reportJSON(t, s, s.Plan(scan.Gate{All: true}), inputs, names)
}

// reportJSON diagnoses the named inputs, in order, through plan p, and
// returns the report as JSON.
func reportJSON(t *testing.T, s *scan.Scanner, p *scan.Plan, inputs map[string][]byte, names []string) string {
	t.Helper()
	c := NewCollector(s.Entries())
	for _, name := range names {
		if len(names) > 1 {
			c.File(name)
		}
		st, err := p.Visit(bytes.NewReader(inputs[name]), c)
		if err != nil {
			t.Fatal(err)
		}
		c.AddStats(st)
	}
	j, err := json.Marshal(c.Report())
	if err != nil {
		t.Fatal(err)
	}
	return string(j)
}

// The collector reaches the same report from the lines gate selects as
// from every line: on every log of the development set, the environment
// files, the rank logs and the command fixtures, alone and with a
// training log around them, with our knowledge base.
func TestGateLosesNothing(t *testing.T) {
	es, err := kb.LoadFS(knowledge.FS, ".", "knowledge/")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := scan.New(es)
	logs := map[string][]byte{}
	for _, glob := range []string{"../env/testdata/*", "testdata/*.log", "testdata/ranks/*", "../internal/cli/testdata/*.txt"} {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			logs[f] = b
		}
	}
	want := 30 // the repository's own logs
	if f, err := os.Open("../../shared/eval/dev.jsonl"); err != nil {
		if sharedtest.Required() {
			sharedtest.Missing(t, "eval/dev.jsonl")
		}
		t.Log("shared/eval/dev.jsonl is not beside the repository: checking the repository's own logs only")
	} else {
		want = 60
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var rec struct{ ID, Log string }
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatal(err)
			}
			logs["eval/"+rec.ID] = []byte(rec.Log)
		}
	}
	// torchrun's table with the rank past the lines where it is looked
	// for: read only if every line under the header is counted.
	logs["late-rank"] = []byte("RuntimeError: CUDA error: an illegal memory access was encountered\n" +
		"Root Cause (first observed failure):\n[0]:\n" + strings.Repeat("  note      : x\n", 9) +
		"  rank      : 1 (local_rank: 1)\n  exitcode  : 1 (pid: 139831)\n")
	// Repeats of every entry's examples with their figures changed, from
	// several ranks (most of its lines with hits reach the collector with
	// HitsLine).
	var examples []string
	for _, e := range es {
		examples = append(examples, e.Examples.Match...)
	}
	logs["repeats"] = repeatsInput(rand.New(rand.NewSource(5)), examples, 2, 100)
	if len(logs) < want {
		t.Fatalf("only %d logs found", len(logs))
	}
	noise := loggen.Bytes(64<<10, nil, 0, 3)
	checked := 0
	for name, b := range logs {
		// Alone, and inside a training log (blocks cut by chatter).
		mixed := append(append(append([]byte(nil), noise[:len(noise)/2]...), b...), noise[len(noise)/2:]...)
		for _, data := range [][]byte{b, mixed} {
			gated, full := gatedAndFull(t, s, map[string][]byte{name: data}, []string{name})
			if gated != full {
				t.Errorf("%s: gated report differs:\n%s\nfull:\n%s", name, diffAt(gated, full), "")
			}
			checked++
		}
	}
	// All the rank logs as one multi-file diagnosis.
	ranks, _ := filepath.Glob("testdata/ranks/*")
	gated, full := gatedAndFull(t, s, logs, ranks)
	if gated != full {
		t.Errorf("rank logs together: %s", diffAt(gated, full))
	}
	if !strings.Contains(full, `"first_failed"`) {
		t.Errorf("the rank logs name no first failed rank: the multi-file check checks little")
	}
	t.Logf("%d logs checked", checked)
}

// diffAt shows where two strings part.
func diffAt(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-200)
	return "gated …" + a[lo:min(len(a), i+200)] + "\n full …" + b[lo:min(len(b), i+200)]
}
