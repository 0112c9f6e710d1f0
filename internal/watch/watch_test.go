package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpudx/gpudx/internal/syncbuf"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
	"github.com/gpudx/gpudx/scan"
)

const (
	lineOOM     = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 78.00 GiB memory in use. Of the allocated memory 70.81 GiB is allocated by PyTorch, and 1.25 GiB is reserved by PyTorch but unallocated.\n"
	lineIllegal = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
	lineXid79   = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
	lineXid13   = "NVRM: Xid (PCI:0000:86:00): 13, pid=2211, name=python, Graphics Exception: ESR 0x505648=0x102000e 0x505650=0x0 0x505644=0xd3eff2 0x50564c=0x7f\n"
)

var (
	scOnce sync.Once
	sc     *scan.Scanner
)

func scanner(t *testing.T) *scan.Scanner {
	t.Helper()
	scOnce.Do(func() {
		entries, err := kb.LoadFS(knowledge.FS, ".", "knowledge/")
		if err != nil {
			t.Fatal(err)
		}
		sc, _ = scan.New(entries)
	})
	return sc
}

// watcher runs Run on its own goroutine and hands its events over.
type watcher struct {
	t      *testing.T
	events chan Event
	notes  *syncbuf.Buffer
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, cfg Config) *watcher {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	w := &watcher{t: t, events: make(chan Event, 100), notes: &syncbuf.Buffer{}, cancel: cancel, done: make(chan error, 1)}
	cfg.Scanner, cfg.Notes = scanner(t), w.notes
	if cfg.Poll == 0 {
		cfg.Poll = 10 * time.Millisecond
	}
	if cfg.Window == 0 {
		cfg.Window = time.Hour
	}
	cfg.Emit = func(e Event) error { w.events <- e; return nil }
	go func() { w.done <- Run(ctx, cfg) }()
	t.Cleanup(cancel)
	return w
}

// next waits for the next event and checks it.
func (w *watcher) next(event, id string, occurrences, line int) Event {
	w.t.Helper()
	select {
	case e := <-w.events:
		if e.Event != event || e.ID != id || e.Occurrences != occurrences || line > 0 && e.LastLine != line {
			w.t.Fatalf("event %s %s ×%d line %d; want %s %s ×%d line %d", e.Event, e.ID, e.Occurrences, e.LastLine, event, id, occurrences, line)
		}
		return e
	case <-time.After(10 * time.Second):
		w.t.Fatalf("no event; want %s %s (notes: %s)", event, id, w.notes.String())
	}
	return Event{}
}

// nextOf waits for the next event and checks it against one of the
// (occurrences, last line) pairs allowed.
func (w *watcher) nextOf(event, id string, allowed [][2]int) Event {
	w.t.Helper()
	select {
	case e := <-w.events:
		if e.Event != event || e.ID != id || !slices.Contains(allowed, [2]int{e.Occurrences, e.LastLine}) {
			w.t.Fatalf("event %s %s ×%d line %d; want %s %s, (×, line) one of %v", e.Event, e.ID, e.Occurrences, e.LastLine, event, id, allowed)
		}
		return e
	case <-time.After(10 * time.Second):
		w.t.Fatalf("no event; want %s %s (notes: %s)", event, id, w.notes.String())
	}
	return Event{}
}

// quiet checks that no event comes for a while (several polls).
func (w *watcher) quiet() {
	w.t.Helper()
	select {
	case e := <-w.events:
		w.t.Fatalf("unexpected event %s %s ×%d", e.Event, e.ID, e.Occurrences)
	case <-time.After(150 * time.Millisecond):
	}
}

// stop ends the watch and returns the events said at its end.
func (w *watcher) stop() []Event {
	w.t.Helper()
	w.cancel()
	if err := <-w.done; err != nil && err != context.Canceled {
		w.t.Fatalf("Run: %v", err)
	}
	var out []Event
	for {
		select {
		case e := <-w.events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestFileRotateTruncate: a file followed while it is written, rotated
// (renamed, written once more under its old name, then created again) and
// truncated. Each diagnosis is reported once; repeats are counted and said
// at the end.
func TestFileRotateTruncate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "train.log")
	appendFile(t, p, lineOOM) // there before the watch: not reported
	w := start(t, Config{Paths: []string{p}})
	time.Sleep(50 * time.Millisecond)
	w.quiet()

	appendFile(t, p, "step 1\n"+lineIllegal)
	w.next("new", "cuda/illegal-memory-access", 1, 2)
	appendFile(t, p, lineIllegal+lineIllegal)
	w.quiet() // counted, not printed

	// Rotation: the old file gets one more line after its rename; a line
	// written in two pieces to the new file is read whole.
	if err := os.Rename(p, p+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, p+".1", lineXid13)
	w.next("new", "driver/xid-13-graphics-engine-exception", 1, 5)
	appendFile(t, p, lineXid79[:30])
	time.Sleep(50 * time.Millisecond)
	appendFile(t, p, lineXid79[30:])
	e := w.next("new", "driver/xid-79-fallen-off-bus", 1, 1) // line 1 of the new file
	if len(e.GPUs) != 1 || e.GPUs[0] != "0000:3b:00" {
		t.Errorf("gpus = %q", e.GPUs)
	}

	// Truncation: read again from the start.
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	appendFile(t, p, lineOOM)
	w.next("new", "pytorch/cuda-out-of-memory", 1, 1)

	end := w.stop()
	if len(end) != 1 || end[0].Event != "repeated" || end[0].ID != "cuda/illegal-memory-access" || end[0].Occurrences != 2 || end[0].LastLine != 4 {
		for _, e := range end {
			t.Logf("%s %s ×%d line %d", e.Event, e.ID, e.Occurrences, e.LastLine)
		}
		t.Errorf("end events: want one repeated cuda/illegal-memory-access ×2 at line 4")
	}
	notes := w.notes.String()
	if !strings.Contains(notes, "rotated: following the new file") || !strings.Contains(notes, "truncated: reading it again from its start") {
		t.Errorf("notes:\n%s", notes)
	}
}

// TestKmsg: a kmsg-format stream (the kernel's /dev/kmsg records) as a
// file that grows and as a FIFO: records are read as dmesg prints them,
// continuation lines dropped, and the GPU named.
func TestKmsg(t *testing.T) {
	rec, err := os.ReadFile("testdata/kmsg.txt")
	if err != nil {
		t.Fatal(err)
	}
	// check reads the two events. A file appended at once is one batch, so
	// the first event counts both Xid 79 records; through a FIFO the
	// reader may see the first record alone (×1 at line 2), and the second
	// is then a repeat within the window, counted without an event.
	check := func(t *testing.T, w *watcher, batched bool) {
		var e Event
		if batched {
			e = w.next("new", "driver/xid-79-fallen-off-bus", 2, 3)
		} else {
			e = w.nextOf("new", "driver/xid-79-fallen-off-bus", [][2]int{{2, 3}, {1, 2}})
		}
		if len(e.GPUs) != 1 || e.GPUs[0] != "0000:3b:00" {
			t.Errorf("gpus = %q", e.GPUs)
		}
		if got := e.Evidence[0].Text; got != "[    7.123456] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus." {
			t.Errorf("evidence %q", got)
		}
		e = w.next("new", "driver/xid-13-graphics-engine-exception", 1, 4)
		if len(e.GPUs) != 1 || e.GPUs[0] != "0000:86:00" || e.Operator == nil || e.Operator.Drain != "if_repeats" {
			t.Errorf("gpus = %q, operator %+v", e.GPUs, e.Operator)
		}
	}
	t.Run("file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "kmsg")
		appendFile(t, p, "")
		w := start(t, Config{Kernel: p})
		time.Sleep(50 * time.Millisecond)
		appendFile(t, p, string(rec))
		check(t, w, true)
		if end := w.stop(); len(end) != 0 {
			t.Errorf("%d events at the end, want none", len(end))
		}
	})
	t.Run("fifo", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "kmsg")
		if err := mkfifo(p); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		w := start(t, Config{Kernel: p})
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.SplitAfter(string(rec), "\n") {
			f.WriteString(l) // record by record, as the kernel writes them
		}
		f.Close()
		check(t, w, false)
		w.stop()
	})
}

// TestDir: files in a directory at the start are followed from their
// end, files created later from their start; a file rotated to a new
// name in the directory is not read twice.
func TestDir(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "rank0.log")
	appendFile(t, old, lineOOM)
	w := start(t, Config{Paths: []string{dir}})
	time.Sleep(50 * time.Millisecond)
	appendFile(t, filepath.Join(dir, ".hidden"), lineXid13)
	w.quiet()
	appendFile(t, filepath.Join(dir, "rank1.log"), "step 1\n"+lineIllegal)
	w.next("new", "cuda/illegal-memory-access", 1, 2)
	appendFile(t, old, lineXid79)
	w.next("new", "driver/xid-79-fallen-off-bus", 1, 1)
	if err := os.Rename(old, old+".1"); err != nil {
		t.Fatal(err)
	}
	w.quiet() // rank0.log.1 is the file already read
	if end := w.stop(); len(end) != 0 {
		t.Errorf("%d events at the end, want none", len(end))
	}
}

// TestWindow: repeats within the window are counted; a repeat past it
// gives one "repeated" event with the count; a quiet window closes the
// incident and the next occurrence is new again.
func TestWindow(t *testing.T) {
	d := NewDetector(scanner(t), time.Minute)
	t0 := time.Date(2026, 11, 27, 13, 0, 0, 0, time.UTC)
	say := func(evs []Event) string {
		var s []string
		for _, e := range evs {
			s = append(s, fmt.Sprintf("%s %s ×%d", e.Event, e.ID, e.Occurrences))
		}
		return strings.Join(s, "; ")
	}
	steps := []struct {
		at    time.Duration
		lines string
		tick  bool
		want  string
	}{
		{0, lineXid79 + lineXid79, false, "new driver/xid-79-fallen-off-bus ×2"},
		{10 * time.Second, lineXid79, false, ""},
		{50 * time.Second, lineXid79, false, ""},
		{61 * time.Second, lineXid79, false, "repeated driver/xid-79-fallen-off-bus ×3"},
		{100 * time.Second, "", true, ""},
		{119 * time.Second, lineXid79, false, ""},
		{179 * time.Second, "", true, "repeated driver/xid-79-fallen-off-bus ×1"}, // quiet for a minute: closed
		{180 * time.Second, lineXid79, false, "new driver/xid-79-fallen-off-bus ×1"},
	}
	for _, s := range steps {
		var evs []Event
		if s.tick {
			evs = d.Tick(t0.Add(s.at))
		} else {
			evs = d.Feed("kern.log", []byte(s.lines), t0.Add(s.at))
		}
		if got := say(evs); got != s.want {
			t.Errorf("at %v: %q, want %q", s.at, got, s.want)
		}
	}
}

func TestGPUOf(t *testing.T) {
	for _, tt := range []struct {
		text string
		caps map[string]string
		want string
	}{
		{"NVRM: Xid (PCI:0000:3B:00): 79", map[string]string{"pci_bus_id": "0000:3B:00"}, "0000:3b:00"},
		{"x", map[string]string{"pci_bus_id": "00000000:86:00.0"}, "0000:86:00"},
		{"GPU 00000000:3B:00.0: Detected Critical Xid Error", nil, "0000:3b:00"},
		{"torch.OutOfMemoryError: ... GPU 2 has a total capacity", nil, "2"},
		{"at 13:09:51 the job died", nil, ""},
		{"GPU 123456 has", nil, ""},
	} {
		if got := gpuOf(scan.Hit{Text: tt.text, Captures: tt.caps}); got != tt.want {
			t.Errorf("gpuOf(%q, %v) = %q, want %q", tt.text, tt.caps, got, tt.want)
		}
	}
}
