// Command eval measures diagnosis accuracy on labelled sets of real logs
// (../shared/eval/dev.jsonl and bench/eval/families.jsonl by default):
// top-1 and top-3 per label, per family and overall, which labels the
// knowledge base covers, and how many diagnoses clean logs (label "clean")
// produce.
//
// A record's family is its "family" field or, when it has none, the domain
// of the first entry id its label maps to (pytorch, cuda, nccl, ...).
//
//	go run ./bench/eval [-set FILE[,FILE...]]... [-labels FILE] [-clean DIR] [-v]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
	"github.com/gpudx/gpudx/scan"
)

type record struct {
	ID     string `json:"id"`
	Log    string `json:"log"`
	Label  string `json:"label"`
	Family string `json:"family"`
}

// setList is the -set flag: repeatable, and each value may be a comma
// list. The first explicit value replaces the default.
type setList struct {
	files []string
	set   bool
}

func (s *setList) String() string { return strings.Join(s.files, ",") }

func (s *setList) Set(v string) error {
	if !s.set {
		s.files, s.set = nil, true
	}
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			s.files = append(s.files, f)
		}
	}
	return nil
}

func main() {
	sets := &setList{files: []string{"../shared/eval/dev.jsonl", "bench/eval/families.jsonl"}}
	flag.Var(sets, "set", "labelled logs, one JSON object a line; repeat the flag or give a comma list")
	labelsPath := flag.String("labels", "bench/eval/labels.json", "label -> entry ids")
	clean := flag.String("clean", "bench/eval/clean", "directory of clean logs (normal output) where nothing must be diagnosed")
	verbose := flag.Bool("v", false, "print every miss")
	flag.Parse()
	if err := run(sets.files, *labelsPath, *clean, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(2)
	}
}

type tally struct{ n, top1, top3 int }

func (t *tally) add(rank int) {
	t.n++
	if rank == 0 {
		t.top1++
	}
	if rank >= 0 && rank < 3 {
		t.top3++
	}
}

// family returns a record's family: its own field, or the domain of the
// first entry id its label maps to.
func family(r record, labels map[string][]string) string {
	if r.Family != "" {
		return r.Family
	}
	if ids := labels[r.Label]; len(ids) > 0 {
		if d, _, ok := strings.Cut(ids[0], "/"); ok {
			return d
		}
	}
	return "unmapped"
}

// eachRecord calls fn for each record of a JSON-lines file, skipping
// blank lines.
func eachRecord(path string, fn func(record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func run(sets []string, labelsPath, cleanDir string, verbose bool) error {
	var labels map[string][]string
	data, err := os.ReadFile(labelsPath)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &labels); err != nil {
		return fmt.Errorf("%s: %w", labelsPath, err)
	}
	entries, err := kb.LoadFS(knowledge.FS, ".", "knowledge/")
	if err != nil {
		return err
	}
	s, err := scan.New(entries)
	if err != nil {
		return err
	}
	per := map[string]*tally{}
	perFamily := map[string]*tally{}
	var all tally
	cleanLogs, cleanDiag, cleanUnrec := 0, 0, 0
	count := func(per map[string]*tally, key string, rank int) {
		t := per[key]
		if t == nil {
			t = &tally{}
			per[key] = t
		}
		t.add(rank)
	}
	for _, set := range sets {
		err := eachRecord(set, func(r record) error {
			rep, err := diagnose.Read(s, strings.NewReader(r.Log))
			if err != nil {
				return err
			}
			if r.Label == "clean" {
				cleanLogs++
				cleanDiag += len(rep.Diagnoses)
				cleanUnrec += len(rep.Unrecognized)
				return nil
			}
			rank := -1
			for i, d := range rep.Diagnoses {
				if slices.Contains(labels[r.Label], d.ID) {
					rank = i
					break
				}
			}
			fam := family(r, labels)
			count(per, r.Label, rank)
			count(perFamily, fam, rank)
			all.add(rank)
			if verbose && rank != 0 {
				var got []string
				for _, d := range rep.Diagnoses {
					got = append(got, d.ID)
				}
				fmt.Printf("miss %-10s %-40s %-28s got %v\n", fam, r.ID, r.Label, got)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	names := make([]string, 0, len(per))
	for k := range per {
		names = append(names, k)
	}
	sort.Strings(names)
	covered := 0
	fmt.Printf("%-30s %4s %6s %6s  %s\n", "label", "logs", "top1", "top3", "entries")
	for _, k := range names {
		t := per[k]
		ids := labels[k]
		if len(ids) > 0 {
			covered++
		}
		fmt.Printf("%-30s %4d %6d %6d  %s\n", k, t.n, t.top1, t.top3, strings.Join(ids, ","))
	}
	pct := func(a, b int) float64 { return 100 * float64(a) / float64(max(b, 1)) }
	fmt.Printf("\nlabels covered: %d of %d\n", covered, len(names))
	fams := make([]string, 0, len(perFamily))
	for k := range perFamily {
		fams = append(fams, k)
	}
	sort.Strings(fams)
	fmt.Printf("\n%-12s %4s %12s %12s\n", "family", "logs", "top1", "top3")
	for _, k := range fams {
		t := perFamily[k]
		fmt.Printf("%-12s %4d %5d %5.1f%% %5d %5.1f%%\n", k, t.n, t.top1, pct(t.top1, t.n), t.top3, pct(t.top3, t.n))
	}
	fmt.Println()
	fmt.Printf("overall: %d logs, top-1 %d (%.1f%%), top-3 %d (%.1f%%)\n", all.n, all.top1, pct(all.top1, all.n), all.top3, pct(all.top3, all.n))
	// Clean logs written as files: normal training output, nvidia-smi
	// tables, pip and environment dumps. Every diagnosis on them is a false
	// positive, printed.
	if cleanDir != "" {
		names, err := os.ReadDir(cleanDir)
		if err != nil {
			return err
		}
		for _, d := range names {
			if d.IsDir() {
				continue
			}
			data, err := os.ReadFile(filepath.Join(cleanDir, d.Name()))
			if err != nil {
				return err
			}
			rep, err := diagnose.Read(s, bytes.NewReader(data))
			if err != nil {
				return err
			}
			cleanLogs++
			for _, dg := range rep.Diagnoses {
				cleanDiag++
				fmt.Printf("false positive in %s: %s (line %d)\n", d.Name(), dg.ID, dg.FirstLine)
			}
			for _, u := range rep.Unrecognized {
				cleanUnrec++
				fmt.Printf("unrecognized line in %s: %d: %s\n", d.Name(), u.Line, u.Text)
			}
		}
	}
	fmt.Printf("clean logs: %d, diagnoses on them: %d, unrecognized lines on them: %d\n", cleanLogs, cleanDiag, cleanUnrec)
	return nil
}
