// Command mem benchmarks `gpudx mem` on a large PyTorch memory snapshot
// against Python's own pickle.load of the same file.
//
// It generates (or reuses, with -keep) a snapshot of at least -size bytes in
// the newest layout with a long allocator trace, using gensnap.py next to this
// file; builds gpudx; then times, best of -runs each, `gpudx mem --format json
// FILE`, `gpudx mem --format html FILE` (the one-file page, whose size it
// reports) and `python3 -c "import pickle,sys;
// pickle.load(open(sys.argv[1],'rb'))" FILE`, with each child's peak RSS
// (rusage Maxrss). It prints the file size, both times, their ratio,
// gpudx's peak RSS against the file size, and the goals (at least 5x faster
// than pickle.load, peak RSS no larger than the file) with pass/FAIL. It also
// checks, untimed, that gpudx's figures match the generator's
// FILE.expected.json.
//
// Run it from the repository root:
//
//	go run ./bench/mem [-size 1GB] [-keep DIR] [-runs 3]
//
// A 50 MB run (-size 50MB) takes well under a minute; 1 GB takes several
// minutes, most of it generating the file and Python's pickle.load.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpudx/gpudx/internal/benchutil"
)

func main() {
	size := flag.String("size", "1GB", "smallest snapshot size (e.g. 50MB, 1GB, 2GiB)")
	keep := flag.String("keep", "", "directory to keep (and reuse) the generated snapshot in; default: a temporary one, removed afterwards")
	runs := flag.Int("runs", 3, "timed runs of each program; the best is reported")
	python := flag.String("python", "python3", "Python interpreter")
	gen := flag.String("gen", "bench/mem/gensnap.py", "the snapshot generator")
	cpp := flag.Bool("cpp", false, `generate stacks="all" snapshots (C++ frames: fewer, longer stacks)`)
	check := flag.Bool("check", true, "compare gpudx's figures with the generator's expected JSON (untimed)")
	flag.Parse()
	if err := run(*size, *keep, *runs, *python, *gen, *cpp, *check); err != nil {
		fmt.Fprintln(os.Stderr, "bench/mem:", err)
		os.Exit(1)
	}
}

func run(sizeArg, keep string, runs int, python, gen string, cpp, check bool) error {
	want, err := benchutil.ParseSize(sizeArg)
	if err != nil {
		return err
	}
	if runs < 1 {
		runs = 1
	}
	if _, err := os.Stat(gen); err != nil {
		return fmt.Errorf("%s not found: run from the repository root (or pass -gen)", gen)
	}
	tmp, dir, cleanup, err := benchutil.Dirs("mem", keep)
	if err != nil {
		return err
	}
	defer cleanup()
	kind := "py"
	if cpp {
		kind = "cpp"
	}
	file := filepath.Join(dir, fmt.Sprintf("bench-%d-%s.pickle", want, kind))

	if st, err := os.Stat(file); err == nil && st.Size() >= want && (!check || exists(file+".expected.json")) {
		fmt.Printf("reusing %s\n", file)
	} else {
		args := []string{gen, "--out", file, "--target-bytes", strconv.FormatInt(want, 10),
			"--layout", "2.10", "--model", "small", "--vary", "--hook", "--verify", "no", "--quiet"}
		if cpp {
			args = append(args, "--cpp-frames")
		}
		if !check {
			args = append(args, "--no-expected")
		}
		fmt.Printf("generating %s (%s) ...\n", file, sizeArg)
		t0 := time.Now()
		cmd := exec.Command(python, args...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("gensnap.py: %w", err)
		}
		fmt.Printf("generated in %.1fs\n", time.Since(t0).Seconds())
	}
	st, err := os.Stat(file)
	if err != nil {
		return err
	}
	if st.Size() < want {
		return fmt.Errorf("%s is %d bytes, smaller than %d", file, st.Size(), want)
	}

	gpudx := filepath.Join(tmp, "gpudx")
	build := exec.Command("go", "build", "-o", gpudx, "./cmd/gpudx")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}

	if check {
		if err := checkFigures(gpudx, file); err != nil {
			return err
		}
	}

	fmt.Printf("timing, best of %d ...\n", runs)
	g, err := measure(runs, gpudx, "mem", "--format", "json", file)
	if err != nil {
		return fmt.Errorf("gpudx mem: %w", err)
	}
	h, err := measure(runs, gpudx, "mem", "--format", "html", file)
	if err != nil {
		return fmt.Errorf("gpudx mem --format html: %w", err)
	}
	p, err := measure(runs, python, "-c", "import pickle,sys; pickle.load(open(sys.argv[1],'rb'))", file)
	if err != nil {
		return fmt.Errorf("python pickle.load: %w", err)
	}

	ratio := p.best.Seconds() / g.best.Seconds()
	rssRatio := float64(g.rss) / float64(st.Size())
	fmt.Println()
	fmt.Printf("snapshot           %s (%d bytes)\n", human(st.Size()), st.Size())
	fmt.Printf("gpudx mem          %8.2fs  peak RSS %s  (--format json, %s written)\n", g.best.Seconds(), human(g.rss), human(g.out))
	fmt.Printf("gpudx mem --html   %8.2fs  peak RSS %s  (one-file page, %s; %.2fx the JSON's time)\n", h.best.Seconds(), human(h.rss), human(h.out), h.best.Seconds()/g.best.Seconds())
	fmt.Printf("python pickle.load %8.2fs  peak RSS %s\n", p.best.Seconds(), human(p.rss))
	fmt.Printf("python / gpudx     %8.1fx\n", ratio)
	fmt.Printf("gpudx RSS / file   %8.2f\n", rssRatio)
	fmt.Printf("goal: >= 5x faster than pickle.load   %s (%.1fx)\n", passFail(ratio >= 5), ratio)
	fmt.Printf("goal: peak RSS <= file size            %s (%s vs %s)\n", passFail(g.rss <= st.Size()), human(g.rss), human(st.Size()))
	return nil
}

type result struct {
	best time.Duration
	rss  int64 // the largest peak RSS over the runs, bytes
	out  int64 // bytes the program wrote to its standard output (last run)
}

// counter counts what is written to it.
type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// measure runs a program n times with stdout to /dev/null and returns the
// best wall time and the largest peak RSS.
func measure(n int, name string, args ...string) (result, error) {
	var r result
	for i := 0; i < n; i++ {
		cmd := exec.Command(name, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		// Standard output is counted, not kept.
		var out counter
		cmd.Stdout = &out
		t0 := time.Now()
		err := cmd.Run()
		d := time.Since(t0)
		if err != nil {
			return r, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
		}
		if i == 0 || d < r.best {
			r.best = d
		}
		r.out = out.n
		if rss := benchutil.MaxRSS(cmd.ProcessState); rss > r.rss {
			r.rss = rss
		}
		fmt.Printf("  %-8s run %d: %.2fs, peak RSS %s\n", filepath.Base(name), i+1, d.Seconds(), human(benchutil.MaxRSS(cmd.ProcessState)))
	}
	return r, nil
}

// checkFigures runs gpudx once and compares its JSON with the generator's
// expected figures.
func checkFigures(gpudx, file string) error {
	raw, err := os.ReadFile(file + ".expected.json")
	if err != nil {
		return err
	}
	var exp struct {
		Report json.RawMessage `json:"report"`
	}
	if err := json.Unmarshal(raw, &exp); err != nil {
		return err
	}
	out, err := exec.Command(gpudx, "mem", "--format", "json", file).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("gpudx mem: %v: %s", err, ee.Stderr)
		}
		return err
	}
	var mism []string
	n := compareJSON(&mism, "report", decode(exp.Report), decode(out))
	if len(mism) == 0 {
		fmt.Printf("figures: gpudx matches the generator's expected figures (%d values)\n", n)
		return nil
	}
	for _, m := range mism {
		fmt.Println("  MISMATCH", m)
	}
	return fmt.Errorf("%d of %d figures differ from %s.expected.json", len(mism), n, file)
}

func decode(b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return err.Error()
	}
	return v
}

// compareJSON checks that every key of want is in got with an equal value
// and returns how many values it compared.
func compareJSON(out *[]string, path string, want, got any) int {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, path+": not an object")
			return 1
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		n := 0
		for _, k := range keys {
			if _, ok := g[k]; !ok {
				*out = append(*out, path+"."+k+": missing")
				n++
				continue
			}
			n += compareJSON(out, path+"."+k, w[k], g[k])
		}
		return n
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*out = append(*out, fmt.Sprintf("%s: got %d elements, want %d", path, len(g), len(w)))
			return 1
		}
		n := 0
		for i := range w {
			n += compareJSON(out, fmt.Sprintf("%s[%d]", path, i), w[i], g[i])
		}
		return n
	case json.Number:
		g, ok := got.(json.Number)
		if !ok || !sameNumber(w, g) {
			*out = append(*out, fmt.Sprintf("%s: got %v, want %s", path, got, w))
		}
		return 1
	default:
		if want != got {
			*out = append(*out, fmt.Sprintf("%s: got %v, want %v", path, got, want))
		}
		return 1
	}
}

func sameNumber(a, b json.Number) bool {
	x, okx := new(big.Int).SetString(string(a), 10)
	y, oky := new(big.Int).SetString(string(b), 10)
	if okx && oky {
		return x.Cmp(y) == 0
	}
	fx, err1 := a.Float64()
	fy, err2 := b.Float64()
	return err1 == nil && err2 == nil && fx == fy
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%d KiB", n>>10)
	}
}

func passFail(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
