// Command serve benchmarks `gpudx serve`: N concurrent clients on
// loopback post realistic logs to POST /api/v1/diagnose for a while.
//
// The logs are examples/*.log and the real error logs of the development
// set (../shared/eval/dev.jsonl, see its README), a few hundred bytes to
// a few KiB each, cycled through. As the baseline, the same logs are first
// diagnosed in-process through service.Diagnose (and rendered to JSON, as
// the server does) by the same number of goroutines for the same time.
// Then gpudx is built, started as `gpudx serve --addr 127.0.0.1:0 --no-db
// --max-concurrent N` in a child process, and loaded over HTTP/1.1 with
// keep-alive connections. Each phase starts with an unmeasured warm-up.
//
// It prints, for both, requests/s, latency percentiles, errors (any
// answer but 200 with a whole body, or a failed request; should be 0) and
// log bytes/s; for the server its peak RSS (VmHWM from /proc/PID/status,
// Linux only), and the HTTP/in-process ratios: what the HTTP layer (JSON
// on the wire, loopback TCP, the client in the same machine) costs on top
// of the diagnosis itself. Client and server share the machine's CPUs, so
// the HTTP figures are a floor for a server with a machine of its own.
//
// Run it from the repository root:
//
//	go run ./bench/serve [-clients 8] [-duration 30s]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpudx/gpudx/internal/render"
	"github.com/gpudx/gpudx/internal/service"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
)

func main() {
	clients := flag.Int("clients", 8, "concurrent clients")
	duration := flag.Duration("duration", 30*time.Second, "how long each phase is measured")
	set := flag.String("set", "../shared/eval/dev.jsonl", "labelled real logs, one JSON object a line (its \"log\" field is used); skipped when missing")
	gpudx := flag.String("gpudx", "", "a gpudx binary to run (default: build ./cmd/gpudx)")
	flag.Parse()
	if *clients < 1 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "bench/serve: -clients and -duration must be positive")
		os.Exit(2)
	}
	if err := run(*clients, *duration, *set, *gpudx); err != nil {
		fmt.Fprintln(os.Stderr, "bench/serve:", err)
		os.Exit(1)
	}
}

func run(clients int, duration time.Duration, set, bin string) error {
	logs, note, err := loadLogs(set)
	if err != nil {
		return err
	}
	var total int
	for _, l := range logs {
		total += len(l)
	}
	fmt.Printf("%d logs (%s), %d bytes in all, mean %d bytes; %d clients, %v per phase after a %v warm-up; GOMAXPROCS %d\n",
		len(logs), note, total, total/len(logs), clients, duration, warmup(duration), runtime.GOMAXPROCS(0))

	svc, err := loadService()
	if err != nil {
		return err
	}
	inproc := load(clients, duration, logs, func(log []byte) error {
		rep, err := svc.Diagnose(context.Background(), bytes.NewReader(log), "")
		if err != nil {
			return err
		}
		return render.JSON(io.Discard, rep)
	})
	inproc.print("in-process (service.Diagnose + render.JSON)")
	fmt.Printf("  peak RSS of this process so far: %s\n", mib(vmHWM(os.Getpid())))

	if bin == "" {
		tmp, err := os.MkdirTemp("", "gpudx-bench-serve-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		bin = filepath.Join(tmp, "gpudx")
		build := exec.Command("go", "build", "-o", bin, "./cmd/gpudx")
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build: %w", err)
		}
	}
	srv, err := startServer(bin, clients)
	if err != nil {
		return err
	}
	defer srv.cmd.Process.Kill()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}}
	url := srv.url + "/api/v1/diagnose"
	overHTTP := load(clients, duration, logs, func(log []byte) error {
		resp, err := client.Post(url, "text/plain", bytes.NewReader(log))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || n == 0 {
			return fmt.Errorf("status %d, %d bytes", resp.StatusCode, n)
		}
		return nil
	})
	rss := vmHWM(srv.cmd.Process.Pid)
	overHTTP.print("HTTP (POST /api/v1/diagnose on loopback)")
	fmt.Printf("  server peak RSS (VmHWM): %s\n", mib(rss))
	fmt.Printf("HTTP / in-process: throughput %.2f, p50 latency %.2f, p99 latency %.2f\n",
		overHTTP.rps()/inproc.rps(), ratio(overHTTP.pct(50), inproc.pct(50)), ratio(overHTTP.pct(99), inproc.pct(99)))

	if err := srv.stop(); err != nil {
		return err
	}
	if inproc.errors+overHTTP.errors > 0 {
		return fmt.Errorf("%d errors", inproc.errors+overHTTP.errors)
	}
	return nil
}

func warmup(d time.Duration) time.Duration { return min(d/10, 3*time.Second) }

// loadLogs reads examples/*.log and the "log" fields of the set.
func loadLogs(set string) ([][]byte, string, error) {
	paths, err := filepath.Glob("examples/*.log")
	if err != nil || len(paths) == 0 {
		return nil, "", errors.New("no examples/*.log: run from the repository root")
	}
	var logs [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, "", err
		}
		logs = append(logs, b)
	}
	note := fmt.Sprintf("%d from examples/", len(paths))
	f, err := os.Open(set)
	if errors.Is(err, os.ErrNotExist) {
		return logs, note + "; " + set + " not found", nil
	}
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	n := 0
	for sc.Scan() {
		var rec struct {
			Log string `json:"log"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, "", fmt.Errorf("%s: %v", set, err)
		}
		if rec.Log != "" {
			logs = append(logs, []byte(rec.Log))
			n++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, "", err
	}
	return logs, fmt.Sprintf("%s, %d from %s", note, n, set), nil
}

// loadService builds the engine gpudx serve runs, on the built-in
// knowledge base.
func loadService() (*service.Service, error) {
	entries, err := kb.LoadFS(knowledge.FS, ".", "knowledge/")
	if err != nil {
		return nil, err
	}
	b := kb.NewBase()
	for _, e := range entries {
		b.Add(e)
	}
	svc, err := service.New(b, nil)
	if err != nil {
		return nil, err
	}
	return svc, nil
}

// result is one phase's measurements.
type result struct {
	elapsed  time.Duration
	lat      []time.Duration // sorted
	errors   int
	firstErr error
	bytes    int64
}

// load runs clients goroutines, each posting logs in turn (client i starts
// at log i), through a warm-up and then for d, and measures the second
// part.
func load(clients int, d time.Duration, logs [][]byte, do func([]byte) error) *result {
	run := func(d time.Duration, measure bool) *result {
		var (
			mu  sync.Mutex
			res = &result{}
			wg  sync.WaitGroup
		)
		start := time.Now()
		end := start.Add(d)
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var lat []time.Duration
				var errs, bytes int
				var first error
				for i := c; time.Now().Before(end); i += clients {
					log := logs[i%len(logs)]
					t0 := time.Now()
					err := do(log)
					lat = append(lat, time.Since(t0))
					bytes += len(log)
					if err != nil {
						errs++
						if first == nil {
							first = err
						}
					}
				}
				mu.Lock()
				res.lat = append(res.lat, lat...)
				res.errors += errs
				res.bytes += int64(bytes)
				if res.firstErr == nil {
					res.firstErr = first
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		res.elapsed = time.Since(start)
		sort.Slice(res.lat, func(i, j int) bool { return res.lat[i] < res.lat[j] })
		return res
	}
	if w := warmup(d); w > 0 {
		run(w, false)
	}
	return run(d, true)
}

func (r *result) rps() float64 { return float64(len(r.lat)) / r.elapsed.Seconds() }

func (r *result) pct(p int) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, len(r.lat)*p/100)]
}

func (r *result) print(name string) {
	fmt.Printf("%s:\n  %d requests in %.1fs: %.0f requests/s, %.2f MB/s of logs\n  latency p50 %v  p90 %v  p99 %v  max %v\n  errors %d",
		name, len(r.lat), r.elapsed.Seconds(), r.rps(), float64(r.bytes)/r.elapsed.Seconds()/1e6,
		round(r.pct(50)), round(r.pct(90)), round(r.pct(99)), round(r.lat[len(r.lat)-1]), r.errors)
	if r.firstErr != nil {
		fmt.Printf(" (first: %v)", r.firstErr)
	}
	fmt.Println()
}

func round(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(10 * time.Microsecond)
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// server is the gpudx serve child.
type server struct {
	cmd    *exec.Cmd
	url    string
	stderr *bytes.Buffer
	done   chan error
}

var listening = regexp.MustCompile(`serving on (http://\S+)`)

func startServer(bin string, clients int) (*server, error) {
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--no-db", "--max-concurrent", fmt.Sprint(clients))
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	br := bufio.NewReader(pipe)
	for s.url == "" {
		line, err := br.ReadString('\n')
		s.stderr.WriteString(line)
		if m := listening.FindStringSubmatch(line); m != nil {
			s.url = m[1]
		}
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("gpudx serve did not start: %s", s.stderr)
		}
	}
	go func() {
		io.Copy(s.stderr, br) // the server's later messages (none expected but the last)
		s.done <- cmd.Wait()
	}()
	return s, nil
}

// stop ends the server as an operator would (SIGTERM) and checks it
// exits 0.
func (s *server) stop() error {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if err := <-s.done; err != nil {
		return fmt.Errorf("gpudx serve: %v\n%s", err, s.stderr)
	}
	if !strings.Contains(s.stderr.String(), "gpudx: stopped") {
		return fmt.Errorf("gpudx serve did not say it stopped:\n%s", s.stderr)
	}
	return nil
}

// vmHWM is a process's peak resident set size from /proc (0 elsewhere).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb)
			return kb << 10
		}
	}
	return 0
}

func mib(n int64) string {
	if n == 0 {
		return "unknown (no /proc)"
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
