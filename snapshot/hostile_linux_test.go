//go:build linux

package snapshot

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// hostileShapes are the probe's files at the probe's sizes.
var hostileShapes = map[string]func() io.Reader{
	"memo-bomb":      func() io.Reader { return memoBomb(100_000) },          // 200 MB
	"memo-bomb-gzip": func() io.Reader { return gzipped(memoBomb(100_000)) }, // 200 MB once decompressed
	"big-strings":    func() io.Reader { return bigStrings(5, 250<<20) },     // 1.25 GiB
	"memo-nest":      func() io.Reader { return memoNest(10_000_000) },       // 90 MB
	"none":           func() io.Reader { return strings.NewReader("") },      // the process alone
}

// Each hostile shape, read in a child process with the default options, is
// refused, and the child's peak resident memory stays bounded. Before the
// budget the same files peaked at 1.1 GB (a quarter of the memo bomb),
// 1.57 GB and 1.46 GB.
func TestHostilePeak(t *testing.T) {
	if name := os.Getenv("GPUDX_HOSTILE"); name != "" {
		hostileChild(name)
		return
	}
	if raceEnabled {
		t.Skip("the race detector's own memory would be measured")
	}
	base := childPeak(t, "none", "the file is empty")
	t.Logf("the test process alone: %d MiB", base>>20)
	for _, tt := range []struct {
		name  string
		want  string
		bound int64 // peak resident bytes above the process alone
	}{
		{"memo-bomb", "more than the memory budget", 320 << 20},
		{"memo-bomb-gzip", "more than the memory budget", 320 << 20},
		{"big-strings", "strings over 1048576 bytes hold", 320 << 20},
		{"memo-nest", "more than the memory budget", 320 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			peak := childPeak(t, tt.name, tt.want)
			t.Logf("peak %d MiB, %d MiB above the process alone", peak>>20, (peak-base)>>20)
			if peak-base > tt.bound {
				t.Errorf("peak %d MiB above the process alone, want at most %d MiB", (peak-base)>>20, tt.bound>>20)
			}
		})
	}
}

// childPeak runs one shape in a child and returns its peak resident bytes.
func childPeak(t *testing.T, name, want string) int64 {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostilePeak$")
	cmd.Env = append(os.Environ(), "GPUDX_HOSTILE="+name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), want) {
		t.Fatalf("child said %q, want %q", out, want)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Skip("no rusage")
	}
	return ru.Maxrss << 10 // KiB on Linux
}

// hostileChild reads one shape and prints the error. Its address space is
// capped at 3 GiB, so that a reader without a budget fails here instead of
// taking the machine's memory.
func hostileChild(name string) {
	lim := &syscall.Rlimit{Cur: 3 << 30, Max: 3 << 30}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, lim); err != nil {
		fmt.Println("setrlimit:", err)
	}
	_, err := Read(hostileShapes[name]())
	fmt.Println("error:", err)
	os.Exit(0)
}
