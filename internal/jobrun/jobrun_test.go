package jobrun

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpudx/gpudx/internal/syncbuf"
)

func needSh(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on this system")
	}
}

// TestForwardSignal: a signal given to Run reaches the job (and the
// processes it started), whose trap decides the status.
func TestForwardSignal(t *testing.T) {
	needSh(t)
	var out syncbuf.Buffer
	sigs := make(chan os.Signal, 1)
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), "ready") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		sigs <- syscall.SIGTERM
	}()
	res, err := Run(Options{Args: []string{"sh", "-c", `trap 'echo got TERM; exit 42' TERM; echo ready; while :; do sleep 0.05; done`},
		Stdout: &out, Signals: sigs})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 42 || out.String() != "ready\ngot TERM\n" {
		t.Errorf("status %d, output %q; want 42, \"ready\\ngot TERM\\n\"", res.ExitCode, out.String())
	}
}

// TestLinesWholeAndTail: the merged copy gets whole lines only, a last
// line without '\n' is ended, and the tail starts at a line.
func TestLinesWholeAndTail(t *testing.T) {
	needSh(t)
	var out, errb, lines bytes.Buffer
	res, err := Run(Options{Args: []string{"sh", "-c", `printf 'a1\na2 part'; printf 'b1\n' >&2; printf ' end\na3'`},
		Stdout: &out, Stderr: &errb, Lines: &lines, TailBytes: 8})
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "a1\na2 part end\na3" || errb.String() != "b1\n" {
		t.Errorf("passed through %q, %q", out.String(), errb.String())
	}
	got := strings.Split(strings.TrimSuffix(lines.String(), "\n"), "\n")
	var a []string
	for _, l := range got {
		if l != "b1" {
			a = append(a, l)
		}
	}
	if len(got) != 4 || strings.Join(a, "|") != "a1|a2 part end|a3" {
		t.Errorf("lines = %q", got)
	}
	if res.Stdout != 17 || res.Stderr != 3 {
		t.Errorf("counted %d, %d bytes; want 17, 3", res.Stdout, res.Stderr)
	}
	if want := lines.String()[len(lines.String())-8:]; !strings.HasSuffix(want, string(res.Tail)) || len(res.Tail) == 0 {
		t.Errorf("tail %q, last 8 bytes %q", res.Tail, want)
	}
}

func TestRing(t *testing.T) {
	for _, tt := range []struct {
		writes []string
		n      int
		want   string
	}{
		{[]string{"ab\n", "cd\n"}, 10, "ab\ncd\n"},
		{[]string{"ab\n", "cd\n", "ef\n"}, 7, "cd\nef\n"},     // "\ncd\nef\n" kept, cut to a line start
		{[]string{"0123456789\n"}, 4, "789\n"},                // one line longer than the ring
		{[]string{"ab\n", "cd\n", "ef\n", "gh\n"}, 6, "gh\n"}, // exactly full: "ef\ngh\n" less its first line
		{[]string{"abcdef"}, 3, "def"},                        // no line end at all
	} {
		r := newRing(tt.n)
		for _, w := range tt.writes {
			r.write([]byte(w))
		}
		if got := string(r.bytes()); got != tt.want {
			t.Errorf("%q in %d bytes: tail %q, want %q", tt.writes, tt.n, got, tt.want)
		}
	}
}

func TestStartError(t *testing.T) {
	_, err := Run(Options{Args: []string{"/nonexistent/gpudx-job"}})
	se, ok := err.(*StartError)
	if !ok || se.Code != 127 {
		t.Fatalf("err = %#v, want a StartError with code 127", err)
	}
	f, err := os.CreateTemp(t.TempDir(), "job")
	if err != nil {
		t.Fatal(err)
	}
	f.Close() // not executable
	_, err = Run(Options{Args: []string{f.Name()}})
	if se, ok := err.(*StartError); !ok || se.Code != 126 {
		t.Fatalf("err = %#v, want a StartError with code 126", err)
	}
}

// TestForegroundForwardsTermOnly: a command left in gpudx's process group
// (its input is a terminal) gets the terminal's SIGINT from the terminal
// itself, so Run does not send it again; SIGTERM is forwarded.
func TestForegroundForwardsTermOnly(t *testing.T) {
	needSh(t)
	var out syncbuf.Buffer
	sigs := make(chan os.Signal, 2)
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), "ready") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		sigs <- syscall.SIGINT
		time.Sleep(200 * time.Millisecond)
		sigs <- syscall.SIGTERM
	}()
	res, err := Run(Options{Args: []string{"sh", "-c", `trap 'echo got INT' INT; trap 'echo got TERM; exit 42' TERM; echo ready; while :; do sleep 0.05; done`},
		Stdout: &out, Signals: sigs, Foreground: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 42 || out.String() != "ready\ngot TERM\n" {
		t.Errorf("status %d, output %q; want 42, \"ready\\ngot TERM\\n\"", res.ExitCode, out.String())
	}
}
