package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/gpudx/gpudx/internal/benchutil"
	"github.com/gpudx/gpudx/internal/loggen"
	"github.com/gpudx/gpudx/kb"
)

// repeated is one input of the repeated-line part.
type repeated struct {
	name string
	path string
	mb   float64
	goal float64 // least throughput relative to the training log's; 0: none
}

// repeats writes the repeated-line logs (or reuses them under dir) and
// prints gpudx's best throughput on each beside the training log's, and
// -compare's where given. Every run goes through all inputs and binaries
// in turn, so that a slow spell of this shared machine hits them alike.
func repeats(gpudx, dir, quiet string, size int64, entries []*kb.Entry, limit time.Duration, runs int) error {
	var planted []string
	for _, e := range entries {
		planted = append(planted, e.Examples.Match...)
	}
	every := max(size/400/100, 1)
	ins := []repeated{{name: "training log", path: quiet}}
	gens := []struct {
		name, file string
		goal       float64
		write      func(f *os.File) error
	}{
		{"known warning, 1 line in 8", fmt.Sprintf("warning-%d.log", size), 0.7, func(f *os.File) error {
			return loggen.Interleave(f, size, planted, every, 1, 7, loggen.BarrierWarning)
		}},
		{fmt.Sprintf("%d OOM lines, 8 ranks", rep.oom), fmt.Sprintf("oom-%d.log", rep.oom), 0.5, func(f *os.File) error {
			return loggen.Interleave(f, 1<<62, planted, every, 1, 1, func(i int) string {
				if i >= rep.oom {
					return ""
				}
				return loggen.OOMRepeat(i)
			})
		}},
		{fmt.Sprintf("NCCL timeout, %d ranks", rep.ranks), fmt.Sprintf("timeout-%d-%d.log", rep.ranks, size), 0, func(f *os.File) error {
			// A block is 3 lines: one in 8 lines is the timeout's.
			return loggen.Interleave(f, size, planted, every, 1, 21, func(i int) string { return loggen.NCCLTimeout(i, rep.ranks) })
		}},
	}
	for _, g := range gens {
		path := filepath.Join(dir, g.file)
		if _, err := os.Stat(path); err == nil {
			fmt.Printf("reusing %s\n", path)
		} else {
			fmt.Printf("writing %s ...\n", path)
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			err = g.write(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				os.Remove(path)
				return err
			}
		}
		ins = append(ins, repeated{name: g.name, path: path, goal: g.goal})
	}
	for i := range ins {
		st, err := os.Stat(ins[i].path)
		if err != nil {
			return err
		}
		ins[i].mb = float64(st.Size()) / 1e6
	}
	bins := []string{gpudx}
	if rep.compare != "" {
		bins = append(bins, rep.compare)
	}
	type best struct {
		secs    float64
		cpu     float64 // user+system seconds of the fastest run
		rss     int64
		bounded bool
		err     error
	}
	res := make([][]best, len(bins))
	for b := range bins {
		res[b] = make([]best, len(ins))
	}
	for run := 0; run < runs; run++ {
		for i, in := range ins {
			for b, bin := range bins {
				r := &res[b][i]
				if r.err != nil || r.bounded {
					continue
				}
				secs, cpu, rss, bounded, err := measure(limit, bin, "diagnose", "-f", "json", in.path)
				switch {
				case err != nil:
					r.err = err
				case bounded:
					*r = best{secs: secs, cpu: cpu, rss: max(r.rss, rss), bounded: true}
				case run == 0 || secs < r.secs:
					r.secs, r.cpu, r.rss = secs, cpu, max(r.rss, rss)
				default:
					r.rss = max(r.rss, rss)
				}
			}
		}
	}
	fmt.Printf("\nrepeated known lines (gpudx diagnose -f json, the fastest of %d runs and its CPU time; peak RSS the largest seen)\n", runs)
	for b, bin := range bins {
		label := "this build"
		if b > 0 {
			label = "-compare " + bin
		}
		fmt.Printf("\n%s\n%-30s %7s %8s %8s %8s %-26s %11s\n", label, "", "MB", "seconds", "CPU s", "MB/s", "× quiet", "peak RSS")
		q := res[b][0]
		for i, in := range ins {
			r := res[b][i]
			if r.err != nil {
				fmt.Printf("%-30s failed: %v\n", in.name, r.err)
				continue
			}
			rate := in.mb / r.secs
			mbs := fmt.Sprintf("%.1f", rate)
			if r.bounded {
				mbs = "<" + mbs
			}
			ratio := ""
			if q.err == nil && !q.bounded && i > 0 {
				ratio = fmt.Sprintf("%.2f", rate/(ins[0].mb/q.secs))
				if in.goal > 0 {
					verdict := "pass"
					if r.bounded || rate/(ins[0].mb/q.secs) < in.goal {
						verdict = "FAIL"
					}
					ratio += fmt.Sprintf(" (goal %.1f: %s)", in.goal, verdict)
				}
			}
			fmt.Printf("%-30s %7.1f %8.2f %8.2f %8s %-26s %7.1f MiB\n", in.name, in.mb, r.secs, r.cpu, mbs, ratio, float64(r.rss)/(1<<20))
		}
	}
	return nil
}

// measure runs a command once: its seconds, CPU seconds (user and
// system) and peak RSS, and whether it passed limit and was stopped.
func measure(limit time.Duration, args ...string) (float64, float64, int64, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = nil, os.Stderr
	t0 := time.Now()
	err := cmd.Run()
	secs := time.Since(t0).Seconds()
	var rss int64
	var cpu float64
	if ps := cmd.ProcessState; ps != nil {
		rss = benchutil.MaxRSS(ps)
		cpu = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	if ctx.Err() != nil {
		return secs, cpu, rss, true, nil
	}
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		err = nil // diagnoses found
	}
	return secs, cpu, rss, false, err
}
