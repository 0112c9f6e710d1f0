// Command eval measures diagnosis accuracy on a labelled set of real logs
// (../shared/eval/dev.jsonl by default): top-1 and top-3 per label and
// overall, which labels the knowledge base covers, and how many diagnoses
// clean logs (label "clean") produce.
//
//	go run ./bench/eval [-set FILE] [-labels FILE] [-v]
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
	ID    string `json:"id"`
	Log   string `json:"log"`
	Label string `json:"label"`
}

func main() {
	set := flag.String("set", "../shared/eval/dev.jsonl", "labelled logs, one JSON object a line")
	labelsPath := flag.String("labels", "bench/eval/labels.json", "label -> entry ids")
	clean := flag.String("clean", "bench/eval/clean", "directory of clean logs (normal output) where nothing must be diagnosed")
	verbose := flag.Bool("v", false, "print every miss")
	flag.Parse()
	if err := run(*set, *labelsPath, *clean, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(2)
	}
}

func run(set, labelsPath, cleanDir string, verbose bool) error {
	var labels map[string][]string
	data, err := os.ReadFile(labelsPath)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &labels); err != nil {
		return fmt.Errorf("%s: %w", labelsPath, err)
	}
	entries, errs := kb.LoadFS(knowledge.FS, ".", "knowledge/")
	if len(errs) > 0 {
		return errs[0]
	}
	s, _ := scan.New(entries)
	f, err := os.Open(set)
	if err != nil {
		return err
	}
	defer f.Close()
	type tally struct{ n, top1, top3 int }
	per := map[string]*tally{}
	var all tally
	cleanLogs, cleanDiag := 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return err
		}
		rep, err := diagnose.Read(s, strings.NewReader(r.Log))
		if err != nil {
			return err
		}
		if r.Label == "clean" {
			cleanLogs++
			cleanDiag += len(rep.Diagnoses)
			continue
		}
		t := per[r.Label]
		if t == nil {
			t = &tally{}
			per[r.Label] = t
		}
		t.n++
		all.n++
		rank := -1
		for i, d := range rep.Diagnoses {
			if slices.Contains(labels[r.Label], d.ID) {
				rank = i
				break
			}
		}
		if rank == 0 {
			t.top1++
			all.top1++
		}
		if rank >= 0 && rank < 3 {
			t.top3++
			all.top3++
		}
		if verbose && rank != 0 {
			var got []string
			for _, d := range rep.Diagnoses {
				got = append(got, d.ID)
			}
			fmt.Printf("miss %-40s %-28s got %v\n", r.ID, r.Label, got)
		}
	}
	if err := sc.Err(); err != nil {
		return err
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
		}
	}
	fmt.Printf("clean logs: %d, diagnoses on them: %d\n", cleanLogs, cleanDiag)
	return nil
}
