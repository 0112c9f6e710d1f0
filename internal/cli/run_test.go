package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func needSh(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on this system")
	}
}

// TestRunCUDAError: the job's two streams pass through unchanged, its
// status is gpudx's, and the diagnosis of what it printed follows on
// stderr; --log holds the whole output and --report the JSON.
func TestRunCUDAError(t *testing.T) {
	needSh(t)
	dir := t.TempDir()
	log, rep := filepath.Join(dir, "job.log"), filepath.Join(dir, "d.json")

	r := run(t, "", nil, "run", "--width", "0", "--", "sh", "testdata/run/cuda-error.sh")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", r.code, r.err)
	}
	if want := "epoch 1 step 10 loss 2.3041\nepoch 1 step 20 loss 2.1187\n"; r.out != want {
		t.Errorf("stdout = %q, want %q", r.out, want)
	}
	passed, diag, ok := strings.Cut(r.err, "\ngpudx: sh exited with status 1 after ")
	if !ok {
		t.Fatalf("no exit line on stderr:\n%s", r.err)
	}
	if want := "Traceback (most recent call last):\n  File \"train.py\", line 88, in <module>\nRuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"; passed != want {
		t.Errorf("stderr passed through = %q, want %q", passed, want)
	}
	if !strings.Contains(diag, "having printed 318 bytes") || !strings.Contains(diag, "ROOT CAUSE  cuda/illegal-memory-access") {
		t.Errorf("diagnosis on stderr:\n%s", diag)
	}

	r = run(t, "", nil, "run", "--log", log, "--format", "json", "--report", rep, "--", "sh", "testdata/run/cuda-error.sh")
	if r.code != 1 || strings.Contains(r.err, "ROOT CAUSE") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.err)
	}
	var got struct {
		Job       jobRun `json:"job"`
		Diagnoses []struct {
			ID   string `json:"id"`
			Root bool   `json:"root"`
		} `json:"diagnoses"`
		Stats struct{ Lines, Bytes int } `json:"stats"`
	}
	b, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Job.ExitCode != 1 || got.Job.Signal != "" || got.Job.StdoutBytes != 56 || got.Job.StderrBytes != 262 {
		t.Errorf("job = %+v", got.Job)
	}
	if len(got.Diagnoses) == 0 || got.Diagnoses[0].ID != "cuda/illegal-memory-access" || !got.Diagnoses[0].Root {
		t.Errorf("diagnoses = %+v", got.Diagnoses)
	}
	if got.Stats.Lines != 6 || got.Stats.Bytes != 318 {
		t.Errorf("stats = %+v, want 6 lines, 318 bytes", got.Stats)
	}
	lb, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	// Merged line by line: each stream's lines in order, none cut.
	lines := strings.Split(strings.TrimSuffix(string(lb), "\n"), "\n")
	if len(lines) != 6 || got.Job.Tail != string(lb) {
		t.Errorf("log = %q, tail = %q", lb, got.Job.Tail)
	}
	var outs, errs []string
	for _, l := range lines {
		if strings.HasPrefix(l, "epoch") {
			outs = append(outs, l)
		} else {
			errs = append(errs, l)
		}
	}
	if strings.Join(outs, "\n")+"\n" != r.out || strings.Join(errs, "\n")+"\n" != passed {
		t.Errorf("log lines out of order: %q", lines)
	}
}

type jobRun = runJob

// TestRunSignalAndStatus: a job killed by SIGKILL gives 137 (128+9) and
// says so; exit codes pass through; a missing command is 127; bad flags
// are 125; a job that succeeds prints no diagnosis.
func TestRunSignalAndStatus(t *testing.T) {
	needSh(t)
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		out    string
		errHas string
	}{
		{"sigkill", []string{"sh", "-c", "echo before; kill -9 $$"}, 137, "before\n", "sh was killed by signal 9 (killed); status 137 after"},
		{"sigterm", []string{"sh", "-c", "kill -TERM $$"}, 143, "", "killed by signal 15 (terminated); status 143"},
		{"status 3", []string{"sh", "-c", "echo CUDA error: out of memory >&2; exit 3"}, 3, "", "exited with status 3"},
		{"ok", []string{"sh", "-c", "echo fine"}, 0, "fine\n", ""},
		{"not found", []string{"gpudx-no-such-command"}, 127, "", "executable file not found"},
		{"bad flag", []string{"--no-such-flag"}, 125, "", "unknown flag: --no-such-flag"},
		{"no command", nil, 125, "", "no command"},
		{"bad format", []string{"--format", "xml", "true"}, 125, "", "--format: want text or json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", nil, append([]string{"run"}, tt.args...)...)
			if r.code != tt.code || r.out != tt.out {
				t.Errorf("exit %d, stdout %q; want %d, %q", r.code, r.out, tt.code, tt.out)
			}
			if tt.errHas == "" && r.err != "" || !strings.Contains(r.err, tt.errHas) {
				t.Errorf("stderr:\n%s\nwant it to hold %q", r.err, tt.errHas)
			}
		})
	}
}

// countWriter counts what passes through, and checks that it is the
// expected repeated line.
type countWriter struct {
	n atomic.Int64
}

func (c *countWriter) Write(p []byte) (int, error) { c.n.Add(int64(len(p))); return len(p), nil }

// TestRunGigabyte: 1 GiB of output passes through whole while the heap
// stays bounded (the output is diagnosed as it streams; only the tail is
// kept), and the CUDA error printed after it is still found.
func TestRunGigabyte(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 1 GiB through a pipe takes a few seconds")
	}
	needSh(t)
	for _, c := range []string{"yes", "head"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("no %s", c)
		}
	}
	const size = 1 << 30
	var out, errb countWriter
	stop := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var max uint64
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				peak <- max
				return
			case <-tick.C:
				metrics.Read(s)
				if v := s[0].Value.Uint64(); v > max {
					max = v
				}
			}
		}
	}()
	start := time.Now()
	io := &IO{In: strings.NewReader(""), Out: &out, Err: &errb, Getenv: func(string) string { return "" },
		Terminal: func(any) bool { return false }}
	code := Run([]string{"run", "--format", "json", "--report", filepath.Join(t.TempDir(), "r.json"), "--",
		"sh", "-c", "yes 'step 1234 loss 0.5678 lr 3.0e-4 tokens/s 151234' | head -c 1073741824; " +
			"echo 'RuntimeError: CUDA error: an illegal memory access was encountered' >&2; exit 1"}, io)
	took := time.Since(start)
	close(stop)
	max := <-peak
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	if out.n.Load() != size {
		t.Errorf("passed through %d bytes of stdout, want %d", out.n.Load(), size)
	}
	if errb.n.Load() != 67 {
		t.Errorf("passed through %d bytes of stderr, want 67", errb.n.Load())
	}
	t.Logf("1 GiB in %v (%.0f MiB/s); heap objects peaked at %.1f MiB", took.Round(time.Millisecond),
		float64(size)/(1<<20)/took.Seconds(), float64(max)/(1<<20))
	if max > 96<<20 {
		t.Errorf("heap peaked at %d bytes, want under 96 MiB", max)
	}
}
