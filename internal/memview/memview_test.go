package memview

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/memory"
	"github.com/gpudx/gpudx/snapshot"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/memview -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the output (go test ./internal/memview -update rewrites it):\n%s", p, got)
	}
}

const (
	KiB = 1 << 10
	MiB = 1 << 20
	t0  = 1_700_000_000_000_000 // µs
)

// Stacks of the hand-built snapshot, innermost first, with the plumbing
// SiteOf hides and the torch frames it skips.
var testStacks = [][]snapshot.Frame{
	{},
	{ // the big activation: user code under torch's functional
		{Name: "c10::cuda::CUDACachingAllocator::malloc", Filename: "c10/cuda/CUDACachingAllocator.cpp", Line: 1200},
		{Name: "linear", Filename: "/usr/lib/python3.11/site-packages/torch/nn/functional.py", Line: 2000},
		{Name: "forward", Filename: "/home/me/train/model.py", Line: 42},
		{Name: "_PyEval_EvalFrameDefault", Filename: "Python/ceval.c", Line: 0},
		{Name: "train_step", Filename: "/home/me/train/train.py", Line: 88},
	},
	{ // the weights
		{Name: "__init__", Filename: "/home/me/train/model.py", Line: 10},
		{Name: "main", Filename: "/home/me/train/train.py", Line: 20},
	},
	{ // small tensors of the data loader
		{Name: "collate", Filename: "/home/me/train/data.py", Line: 7},
	},
	{ // the failing request
		{Name: "attention", Filename: "/home/me/train/model.py", Line: 61},
		{Name: "forward", Filename: "/home/me/train/model.py", Line: 44},
		{Name: "train_step", Filename: "/home/me/train/train.py", Line: 88},
	},
}

// oomSnapshot is two devices; device 0's trace ends with an oom event of
// 5 MiB while 6 MiB are free in pieces (fragmentation).
func oomSnapshot() *snapshot.Snapshot {
	const a = 0x7f00_0000_0000
	segs := []snapshot.Segment{
		{Device: 0, Address: a, TotalSize: 20 * MiB, Stack: 2, Blocks: []snapshot.Block{
			{Address: a, Size: 8 * MiB, RequestedSize: 8*MiB - 100, State: snapshot.ActiveAllocated, Stack: 1},
			{Address: a + 8*MiB, Size: 2 * MiB, RequestedSize: 2 * MiB, State: snapshot.Inactive},
			{Address: a + 10*MiB, Size: 6 * MiB, RequestedSize: 6 * MiB, State: snapshot.ActiveAllocated, Stack: 2},
			{Address: a + 16*MiB, Size: 4 * MiB, RequestedSize: 0, State: snapshot.Inactive},
		}},
		{Device: 0, Address: a + 32*MiB, TotalSize: 2 * MiB, Small: true, Blocks: []snapshot.Block{
			{Address: a + 32*MiB, Size: 512 * KiB, RequestedSize: 500 * KiB, State: snapshot.ActiveAllocated, Stack: 3},
			{Address: a + 32*MiB + 512*KiB, Size: 512 * KiB, RequestedSize: 512 * KiB, State: snapshot.ActivePendingFree, Stack: 3},
			{Address: a + 33*MiB, Size: 1 * MiB, State: snapshot.Inactive},
		}},
		{Device: 1, Address: a + 64*MiB, TotalSize: 10 * MiB, Blocks: []snapshot.Block{
			{Address: a + 64*MiB, Size: 10 * MiB, RequestedSize: 10 * MiB, State: snapshot.ActiveAllocated},
		}},
	}
	tr0 := snapshot.TraceOf(
		snapshot.TraceEntry{Action: snapshot.ActionSegmentAlloc, Addr: a, Size: 20 * MiB, TimeUS: t0, Stack: 2, HasStack: true},
		snapshot.TraceEntry{Action: snapshot.ActionAlloc, Addr: a + 10*MiB, Size: 6 * MiB, TimeUS: t0 + 10, Stack: 2, HasStack: true},
		snapshot.TraceEntry{Action: snapshot.ActionAlloc, Addr: a + 8*MiB, Size: 2 * MiB, TimeUS: t0 + 20, Stack: 1, HasStack: true},
		snapshot.TraceEntry{Action: snapshot.ActionAlloc, Addr: a, Size: 8*MiB - 100, TimeUS: t0 + 30, Stack: 1, HasStack: true},
		snapshot.TraceEntry{Action: snapshot.ActionFreeRequested, Addr: a + 8*MiB, Size: 2 * MiB, TimeUS: t0 + 40, Stack: 1, HasStack: true},
		snapshot.TraceEntry{Action: snapshot.ActionFreeCompleted, Addr: a + 8*MiB, Size: 2 * MiB, TimeUS: t0 + 50, Stack: 1, HasStack: true},
		snapshot.TraceEntry{Action: snapshot.ActionOOM, Addr: 1 * MiB, Size: 5 * MiB, TimeUS: t0 + 1_500_000, Stack: 4, HasStack: true},
	)
	return &snapshot.Snapshot{
		Segments: segs,
		Traces:   []snapshot.Trace{tr0},
		Stacks:   testStacks,
		Streams:  []uint64{0},
		Settings: &snapshot.Settings{MaxSplitSize: -1},
		Layout:   snapshot.Layout{Protocol: 4, BlockAddress: true, TimeUS: true, Settings: true},
	}
}

func analyze(s *snapshot.Snapshot) *memory.Report {
	return memory.Analyze(s, memory.Options{RequestDevice: -1})
}

func TestTextGolden(t *testing.T) {
	s := oomSnapshot()
	for _, tt := range []struct {
		name string
		o    Options
	}{
		{"oom.txt", Options{Name: "oom.pickle"}},
		{"oom.zh.txt", Options{Name: "oom.pickle", Lang: "zh"}},
		{"oom.stacks.txt", Options{Name: "oom.pickle", Stacks: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Text(&b, analyze(s), tt.o); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.String())
		})
	}
	// Without a trace: no OOM, no peak; --request asks the question.
	s.Traces = nil
	var b bytes.Buffer
	if err := Text(&b, analyze(s), Options{Name: "notrace.pickle"}); err != nil {
		t.Fatal(err)
	}
	golden(t, "notrace.txt", b.String())
	b.Reset()
	r := memory.Analyze(s, memory.Options{Request: 3 * MiB, RequestDevice: 0, Capacity: 16 << 30})
	if err := Text(&b, r, Options{Name: "notrace.pickle"}); err != nil {
		t.Fatal(err)
	}
	golden(t, "request.txt", b.String())
}

// TestFirstScreen: the first 25 lines at 100 columns say why the OOM
// happened and which code holds the memory.
func TestFirstScreen(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		var b bytes.Buffer
		r := analyze(oomSnapshot())
		if r.OOM == nil || len(r.TopSites) == 0 {
			t.Fatalf("the test snapshot has no OOM or no sites: %+v", r)
		}
		if err := Text(&b, r, Options{Name: "oom.pickle", Lang: lang}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(b.String(), "\n")
		for i, l := range lines {
			if width(l) > 100 {
				t.Errorf("%s: line %d is %d columns wide: %q", lang, i+1, width(l), l)
			}
		}
		screen := strings.Join(lines[:min(25, len(lines))], "\n")
		L := labels[lang]
		for _, want := range []string{
			strings.TrimSpace(strings.Split(L["oom"], "%")[0]), L["verdict"], L["failing"], L["fix"], L["holders"],
			verdictName(r.OOM.Verdict, L), siteName(r.OOM.Site, L), siteName(r.TopSites[0].Site, L), size(r.TopSites[0].Bytes), size(r.OOM.RequestedBytes),
		} {
			if !strings.Contains(screen, strings.TrimSpace(want)) {
				t.Errorf("%s: the first screen lacks %q:\n%s", lang, want, screen)
			}
		}
	}
}

func TestDiffText(t *testing.T) {
	before := oomSnapshot()
	after := oomSnapshot()
	// The data loader's block grows; the weights go away.
	after.Segments[1].Blocks[2].State = snapshot.ActiveAllocated
	after.Segments[1].Blocks[2].Stack = 3
	after.Segments[0].Blocks[2].State = snapshot.Inactive
	d := memory.Compare(before, after, 10)
	for _, tt := range []struct {
		name string
		o    Options
	}{{"diff.txt", Options{}}, {"diff.zh.txt", Options{Lang: "zh", Stacks: true}}} {
		var b bytes.Buffer
		if err := DiffText(&b, d, "before.pickle", "after.pickle", tt.o); err != nil {
			t.Fatal(err)
		}
		golden(t, tt.name, b.String())
	}
	var b bytes.Buffer
	if err := DiffText(&b, memory.Compare(before, before, 10), "a", "a", Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), labels["en"]["nogrowth"]) {
		t.Errorf("no change not said:\n%s", b.String())
	}
}

func TestWrap(t *testing.T) {
	for _, tt := range []struct {
		in   string
		w    int
		want string
	}{
		{"one two three four", 9, "one two\n  three\n  four\n"},
		{"abcdefghijkl", 6, "abcdef\n  ghij\n  kl\n"},
		{"", 10, "\n"},
		{"显存不足，请求 2.00 GiB。", 12, "显存不足，请\n  求\n  2.00 GiB。\n"},
	} {
		if got := wrap(tt.in, "", "  ", tt.w); got != tt.want {
			t.Errorf("wrap(%q, %d) = %q, want %q", tt.in, tt.w, got, tt.want)
		}
		for _, l := range strings.Split(wrap(tt.in, "", "  ", tt.w), "\n") {
			if width(l) > tt.w {
				t.Errorf("wrap(%q, %d): line %q too wide", tt.in, tt.w, l)
			}
		}
	}
}

func TestClip(t *testing.T) {
	s := "forward (/home/someone/a/very/long/path/to/the/model.py:42)"
	got := clip(s, 40)
	if width(got) > 40 || !strings.HasPrefix(got, "forward (…") || !strings.HasSuffix(got, "model.py:42)") {
		t.Errorf("clip = %q", got)
	}
	if clip("short", 40) != "short" {
		t.Error("clip changed a short string")
	}
}

// A frame name with terminal escapes (a shared snapshot can hold anything)
// reaches the text report only as U+FFFD; the HTML footer says whether
// expandable segments were on, from the settings, not from the pointer.
func TestHostileStringsAndSettings(t *testing.T) {
	s := oomSnapshot()
	s.Stacks = append([][]snapshot.Frame(nil), s.Stacks...)
	s.Stacks[1] = []snapshot.Frame{{Name: "evil\x1b]0;PWN\x07\x1b[2J\x9b", Filename: "m\x00odel.py", Line: 3}}
	var b strings.Builder
	if err := Text(&b, analyze(s), Options{Lang: "en"}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, c := range []string{"\x1b", "\x07", "\x00", "\u009b"} {
		if strings.Contains(out, c) {
			t.Errorf("text output holds control character %q", c)
		}
	}
	if !strings.Contains(out, "evil\uFFFD]0;PWN\uFFFD\uFFFD[2J\uFFFD") {
		t.Errorf("sanitised name missing from:\n%s", out)
	}
	for _, on := range []bool{false, true} {
		s.Settings.ExpandableSegments = on
		var h strings.Builder
		if err := HTML(&h, analyze(s), s, Options{Name: "x"}); err != nil {
			t.Fatal(err)
		}
		want, bad := "expandable_segments off", "expandable_segments on"
		if on {
			want, bad = bad, want
		}
		if !strings.Contains(h.String(), want) || strings.Contains(h.String(), bad) {
			t.Errorf("settings expandable=%v: page does not say %q alone", on, want)
		}
	}
}

// A long snapshot path keeps its end (the file name) within the width.
func TestHeaderClipsLongPath(t *testing.T) {
	name := "/very/long/" + strings.Repeat("directory/", 12) + "oom_snapshot_rank3.pickle"
	var b strings.Builder
	if err := Text(&b, analyze(oomSnapshot()), Options{Lang: "en", Name: name}); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(b.String(), "\n")
	if width(first) > 100 || !strings.HasSuffix(first, "directory/oom_snapshot_rank3.pickle") || !strings.HasPrefix(first, "gpudx mem: …") {
		t.Errorf("first line (%d columns): %s", width(first), first)
	}
}

// The placeholder site for blocks without a recorded stack is translated.
func TestNoStackSiteInChinese(t *testing.T) {
	s := oomSnapshot()
	var zh, en strings.Builder
	if err := Text(&zh, analyze(s), Options{Lang: "zh"}); err != nil {
		t.Fatal(err)
	}
	if err := Text(&en, analyze(s), Options{Lang: "en"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(en.String(), memory.NoStack) {
		t.Fatalf("the English report has no %q site: the test checks nothing", memory.NoStack)
	}
	if strings.Contains(zh.String(), memory.NoStack) || !strings.Contains(zh.String(), "<未记录调用栈>") {
		t.Errorf("zh report:\n%s", zh.String())
	}
}

// TestMismatchSaidOnce: a trace that ends with a 4 MiB alloc the segments
// show free is said once, in text and HTML, and the peak is the trace's.
func TestMismatchSaidOnce(t *testing.T) {
	const a = 0x7f00_0000_0000
	s := &snapshot.Snapshot{
		Segments: []snapshot.Segment{{Device: 0, Address: a, TotalSize: 20 * MiB, Blocks: []snapshot.Block{
			{Address: a, Size: 20 * MiB, State: snapshot.Inactive}}}},
		Traces: []snapshot.Trace{snapshot.TraceOf(
			snapshot.TraceEntry{Action: snapshot.ActionAlloc, Addr: a, Size: 4 * MiB, TimeUS: t0},
		)},
		Stacks:  [][]snapshot.Frame{nil},
		Streams: []uint64{0},
	}
	r := analyze(s)
	var b strings.Builder
	if err := Text(&b, r, Options{Name: "m.pickle", Width: 1000}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "disagree"); n != 1 {
		t.Errorf("said %d times:\n%s", n, out)
	}
	if !strings.Contains(out, "Note: The trace and the segments disagree on device 0: the trace ends with 4.00 MiB in 1 allocation it never frees, but the segments show them free (0 B in use by the segments).") ||
		!strings.Contains(out, "Peak in use: 4.00 MiB on cuda:0") {
		t.Errorf("text:\n%s", out)
	}
	p := renderPage(t, r, s)
	if n := strings.Count(p.raw, "disagree"); n != 1 {
		t.Errorf("HTML says it %d times", n)
	}
}

// TestWordsExplained: the allocator's words are explained where they first
// appear (the first device), <no stack recorded> is explained once though
// two tables list it, and nothing allocated prints no median of 0 B.
func TestWordsExplained(t *testing.T) {
	const a = 0x7f00_0000_0000
	s := &snapshot.Snapshot{
		Segments: []snapshot.Segment{
			{Device: 0, Address: a, TotalSize: 20 * MiB, Blocks: []snapshot.Block{
				{Address: a, Size: 4 * MiB, RequestedSize: 4*MiB - 1, State: snapshot.ActiveAllocated},
				{Address: a + 4*MiB, Size: 16 * MiB, State: snapshot.Inactive}}},
			{Device: 1, Address: a + 64*MiB, TotalSize: 2 * MiB, Small: true, Blocks: []snapshot.Block{
				{Address: a + 64*MiB, Size: 2 * MiB, State: snapshot.Inactive}}},
		},
		Traces: []snapshot.Trace{snapshot.TraceOf(
			snapshot.TraceEntry{Action: snapshot.ActionAlloc, Addr: a + 4*MiB, Size: MiB, TimeUS: t0},
			snapshot.TraceEntry{Action: snapshot.ActionFreeCompleted, Addr: a + 4*MiB, Size: MiB, TimeUS: t0 + 1},
		)},
		Stacks:  [][]snapshot.Frame{nil},
		Streams: []uint64{0},
	}
	var b strings.Builder
	if err := Text(&b, analyze(s), Options{Name: "w.pickle"}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, c := range []struct {
		s string
		n int
	}{
		{"<no stack recorded> is memory allocated before torch.cuda.memory._record_memory_history was", 1},
		{"stranded 3.00 MiB (free pieces between live blocks", 0},
		{"releasable 0 B (in segments with no live block: empty_cache()", 1},
		{"mixed (live and free blocks)", 1},
		{"rounding 1 B: the allocator rounds each size up to a multiple of 512 B", 1},
		{"free blocks smaller than the median live block (4.00 MiB): 0", 1},
		{"(0 B): 0", 0},
		{"typical request", 0},
	} {
		if got := strings.Count(out, c.s); got != c.n {
			t.Errorf("%q appears %d times, want %d:\n%s", c.s, got, c.n, out)
		}
	}
}
