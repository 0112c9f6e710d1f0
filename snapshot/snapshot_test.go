package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"github.com/gpudx/gpudx/internal/sharedtest"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const realDir = "../../shared/fixtures/snapshots"

func realFile(t testing.TB, name string) string {
	p := filepath.Join(realDir, name)
	if _, err := os.Stat(p); err != nil {
		sharedtest.Missing(t, "fixtures/snapshots/"+name)
	}
	return p
}

// Figures of the six real snapshots, computed independently with Python's
// pickle.load. Stacks count distinct contents (name, filename, line with
// "unknown" as 0) of the non-empty frame lists in use.
func TestRealSnapshots(t *testing.T) {
	tests := []struct {
		file                        string
		segments, blocks            int
		reserved                    uint64
		allocated, pending, free    uint64
		stacks                      int
		events                      []int
		devices                     []int
		segmentsOnly, history, time bool
	}{
		{"MAGMA27-assignment2-systems__memory_snapshot.pickle", 216, 455, 14180941824, 1377753600, 0, 12803188224, 54, []int{5163}, []int{0}, false, false, true},
		{"Muduard-LayoutEditing__dump_snapshot.pickle", 673, 6644, 11274289152, 10715782144, 0, 558507008, 51, []int{1, 1}, []int{1}, false, false, true},
		{"Muduard-LayoutEditing__memory_snapshot.pkl", 255, 2140, 3649044480, 3353639424, 0, 295405056, 11, nil, []int{1}, true, false, false},
		{"Yiyi-philosophy-LLM-inference__oom_snapshot.pickle", 176, 463, 11844714496, 11840159744, 0, 4554752, 3, []int{1}, []int{0}, false, true, false},
		{"drisspg-transformer_nuggets__test_data_mini_snapshot.pickle", 14, 14, 421527552, 0, 0, 421527552, 17, []int{50}, []int{0}, false, false, true},
		{"kkaitlyn111-cs336-a2-systems__memory_snapshot.pickle", 1457, 1912, 75902222336, 55083942400, 0, 20818279936, 6, []int{0}, []int{0}, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			s, err := ReadFile(realFile(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var blocks int
			var reserved uint64
			var byState [3]uint64
			devs := map[int]bool{}
			for _, sg := range s.Segments {
				reserved += sg.TotalSize
				blocks += len(sg.Blocks)
				devs[sg.Device] = true
				a := sg.Address
				for _, b := range sg.Blocks {
					byState[b.State] += b.Size
					if b.Address != a {
						t.Fatalf("block at %#x, want %#x (contiguous)", b.Address, a)
					}
					a += b.Size
				}
				if a != sg.Address+sg.TotalSize {
					t.Fatalf("segment %#x: blocks end at %#x, want %#x", sg.Address, a, sg.Address+sg.TotalSize)
				}
			}
			if len(s.Segments) != tt.segments || blocks != tt.blocks || reserved != tt.reserved {
				t.Errorf("segments %d blocks %d reserved %d, want %d %d %d", len(s.Segments), blocks, reserved, tt.segments, tt.blocks, tt.reserved)
			}
			if byState != [3]uint64{tt.free, tt.allocated, tt.pending} {
				t.Errorf("bytes by state %v, want inactive %d allocated %d pending %d", byState, tt.free, tt.allocated, tt.pending)
			}
			if got := len(s.Stacks) - 1; got != tt.stacks {
				t.Errorf("%d distinct stacks, want %d", got, tt.stacks)
			}
			var events []int
			for _, tr := range s.Traces {
				events = append(events, tr.Len())
			}
			if !slices.Equal(events, tt.events) {
				t.Errorf("events per device %v, want %v", events, tt.events)
			}
			if len(devs) != len(tt.devices) || !devs[tt.devices[0]] {
				t.Errorf("devices %v, want %v", devs, tt.devices)
			}
			if s.Layout.SegmentsOnly != tt.segmentsOnly || s.Layout.History != tt.history || s.Layout.TimeUS != tt.time {
				t.Errorf("layout %+v", s.Layout)
			}
			if s.Layout.Protocol != 4 {
				t.Errorf("protocol %d, want 4", s.Layout.Protocol)
			}
		})
	}
}

// The last event of two real files, field by field; the drisspg file holds
// a frame line of 2^64-1, which must read as "unknown" (0).
func TestRealEvents(t *testing.T) {
	s, err := ReadFile(realFile(t, "MAGMA27-assignment2-systems__memory_snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	tr := &s.Traces[0]
	e := tr.At(tr.Len() - 1)
	if e.Action != ActionFreeCompleted || e.Addr != 47492103680 || e.Size != 4 || e.TimeUS != 1776479641333549 || !e.HasStack {
		t.Errorf("last event %+v", *e)
	}
	f := s.Stacks[e.Stack][0]
	if f != (Frame{Name: "backward", Filename: `D:\Dev\assignment2-systems\.venv\Lib\site-packages\torch\_tensor.py`, Line: 631}) {
		t.Errorf("frame %+v", f)
	}
	counts := map[Action]int{}
	for _, e := range tr.All() {
		counts[e.Action]++
	}
	if counts[ActionAlloc] != 1721 || counts[ActionFreeRequested] != 1721 || counts[ActionFreeCompleted] != 1721 {
		t.Errorf("action counts %v", counts)
	}
	if s.Settings == nil || s.Settings.MaxSplitSize != -1 || s.Settings.ExpandableSegments || len(s.Settings.RoundupPower2Divs) != 16 {
		t.Errorf("settings %+v", s.Settings)
	}

	s, err = ReadFile(realFile(t, "drisspg-transformer_nuggets__test_data_mini_snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	unknownLines := 0
	for _, st := range s.Stacks {
		for _, f := range st {
			if f.Line == 0 && f.Filename != "??" {
				unknownLines++
			}
		}
	}
	if unknownLines == 0 {
		t.Error("no Python frame with an unknown line; the 2^64-1 line was not mapped to 0")
	}
}

// hand-p*.pickle are written by testdata/make.py with Python's pickle in
// protocols 2 to 5 (and gzip); every one must decode to the same figures.
func TestHandMade(t *testing.T) {
	for _, name := range []string{"hand-p2.pickle", "hand-p3.pickle", "hand-p4.pickle", "hand-p5.pickle", "hand-p4.pickle.gz"} {
		t.Run(name, func(t *testing.T) {
			s, err := ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			checkHand(t, s)
			if s.Layout.Gzip != strings.HasSuffix(name, ".gz") {
				t.Errorf("gzip %v", s.Layout.Gzip)
			}
		})
	}
}

func checkHand(t *testing.T, s *Snapshot) {
	t.Helper()
	if len(s.Segments) != 2 {
		t.Fatalf("%d segments", len(s.Segments))
	}
	s0, s1 := s.Segments[0], s.Segments[1]
	if s0.Device != 0 || s0.Address != 0x7f0000000000 || s0.TotalSize != 20971520 || s0.AllocatedSize != 10485760 ||
		s0.ActiveSize != 12582912 || s0.RequestedSize != 12000000 || s0.Small || s0.Pool.Private() || s0.Expandable || s0.Stream != 0 {
		t.Errorf("segment 0 %+v", s0)
	}
	if s1.Device != 1 || !s1.Small || s1.Pool != (PoolID{1, 3}) || !s1.Expandable || s1.Stream != 140000000000000 || s1.Stack != 0 {
		t.Errorf("segment 1 %+v", s1)
	}
	wantBlocks := []Block{
		{Address: 0x7f0000000000, Size: 10485760, RequestedSize: 10000000, State: ActiveAllocated},
		{Address: 0x7f0000a00000, Size: 2097152, RequestedSize: 2000000, State: ActivePendingFree},
		{Address: 0x7f0000c00000, Size: 8388608, RequestedSize: 7, State: Inactive},
	}
	for i, w := range wantBlocks {
		b := s0.Blocks[i]
		b.Stack = 0
		if b != w {
			t.Errorf("block %d = %+v, want %+v", i, b, w)
		}
	}
	// STACK_A is one list object shared by the segment, a block and events.
	a := s0.Stack
	if a == 0 || s0.Blocks[0].Stack != a || s1.Blocks[0].Stack != a {
		t.Errorf("shared stack ids %d %d %d", a, s0.Blocks[0].Stack, s1.Blocks[0].Stack)
	}
	if got := s.Stacks[a]; len(got) != 2 || got[0] != (Frame{"forward", "model.py", 54}) || got[1] != (Frame{"train_step", "train.py", 120}) {
		t.Errorf("stack A %+v", got)
	}
	cpp := s.Stacks[s0.Blocks[1].Stack]
	if len(cpp) != 2 || cpp[0] != (Frame{"torch::unwind::unwind()", "??", 0}) || cpp[1] != (Frame{"<module>", "run.py", 0}) {
		t.Errorf("C++ stack %+v", cpp)
	}
	if len(s.Stacks) != 3 {
		t.Errorf("%d stacks, want 3 (empty, A, C++)", len(s.Stacks))
	}
	if len(s.Traces) != 2 || s.Traces[0].Len() != 9 || s.Traces[1].Len() != 3 {
		t.Fatalf("traces %d", len(s.Traces))
	}
	wantActions := []Action{ActionSegmentAlloc, ActionAlloc, ActionAlloc, ActionFreeRequested, ActionSnapshot,
		ActionSegmentMap, ActionSegmentUnmap, ActionOther, ActionOOM}
	for i, w := range wantActions {
		e := s.Traces[0].At(i)
		if e.Action != w || e.TimeUS != 1700000000000000+int64(i)+1 {
			t.Errorf("event %d: %v at %d, want %v", i, e.Action, e.TimeUS, w)
		}
	}
	if e := s.Traces[0].At(3); e.HasStack {
		t.Error("free_requested without frames reads as having a stack")
	}
	oom := s.Traces[0].At(8)
	if oom.DeviceFree() != 123456789 || oom.Size != 41943040 || oom.Stack != s0.Blocks[1].Stack {
		t.Errorf("oom %+v", *oom)
	}
	if s.UnknownActions["workspace_snapshot"] != 1 {
		t.Errorf("unknown actions %v", s.UnknownActions)
	}
	e := s.Traces[1].At(0)
	if s.Streams[e.Stream] != 140000000000000 || s.Traces[1].At(2).Action != ActionSegmentFree {
		t.Errorf("stream %d -> %v", e.Stream, s.Streams)
	}
	wantMeta := map[EventRef]EventMeta{
		{0, 2}: {CompileContext: "Torch-Compiled Region: 0/0"},
		{0, 7}: {UserMetadata: "step 3"},
	}
	if len(s.Meta) != len(wantMeta) {
		t.Errorf("meta %v", s.Meta)
	}
	for k, v := range wantMeta {
		if s.Meta[k] != v {
			t.Errorf("meta %v = %+v, want %+v", k, s.Meta[k], v)
		}
	}
	st := s.Settings
	if st == nil || st.AllocConf != "expandable_segments:True" || st.MaxSplitSize != -1 || st.GCThreshold != 0.6 ||
		!st.ExpandableSegments || st.RoundupPower2Divs["1"] != 4 || st.PinnedRegisterThread != 1 {
		t.Errorf("settings %+v", st)
	}
	if len(s.Annotations) != 2 || s.Annotations[1] != (Annotation{"END", "Optimizer.step#AdamW.step", 0, 1700000000000005}) {
		t.Errorf("annotations %+v", s.Annotations)
	}
	l := s.Layout
	if !l.BlockAddress || !l.TimeUS || !l.Settings || !l.Annotations || !l.CompileCtx || !l.UserMetadata || l.History || l.SegmentsOnly {
		t.Errorf("layout %+v", l)
	}
}

func TestLegacyAndList(t *testing.T) {
	s, err := ReadFile("testdata/legacy-p4.pickle")
	if err != nil {
		t.Fatal(err)
	}
	b := s.Segments[0].Blocks
	// No block addresses in the file: computed from the segment.
	if !s.Layout.History || s.Layout.BlockAddress || b[0].Address != 4096*1024 || b[1].Address != 4096*1024+1024 {
		t.Errorf("layout %+v blocks %+v", s.Layout, b)
	}
	if st := s.Stacks[b[0].Stack]; len(st) != 2 || st[0].Name != "forward" {
		t.Errorf("history stack %+v", st)
	}
	if e := s.Traces[0].At(0); e.Action != ActionSnapshot || e.Size != 1024 || e.HasStack {
		t.Errorf("event %+v", *e)
	}

	s, err = ReadFile("testdata/list-p4.pickle")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Layout.SegmentsOnly || len(s.Segments) != 2 || len(s.Traces) != 0 || s.Segments[1].Pool != (PoolID{1, 3}) {
		t.Errorf("list form: %+v", s.Layout)
	}
}

// Every failure is an *Error with a byte offset and a message a person can
// act on; nothing panics.
func TestBadInput(t *testing.T) {
	hand, err := os.ReadFile("testdata/hand-p4.pickle")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		data   []byte
		offset int64
		want   string
	}{
		{"empty", nil, 0, "the file is empty"},
		{"text", []byte("Traceback (most recent call last):\n"), 0, "not a PyTorch memory snapshot: it does not start with a pickle PROTO opcode (first byte 0x54)"},
		{"ordereddict", read(t, "testdata/ordereddict.pickle"), 39, "the pickle asks to import a Python name (STACK_GLOBAL); a memory snapshot holds only plain data, so gpudx refuses it (opcode STACK_GLOBAL)"},
		{"global", []byte("\x80\x02cos\nsystem\nq\x00."), 2, "import a Python name (GLOBAL)"},
		{"reduce", []byte("\x80\x02)R."), 3, "call a function (REDUCE)"},
		{"not a snapshot", read(t, "testdata/not-a-snapshot.pickle"), 33, "the pickle is a dict without a \"segments\" key"},
		{"truncated", hand[:1000], 999, "file ends early: the opcode needs 1 more bytes, 0 left (truncated file?) (opcode BINGET)"},
		{"no stop", hand[:len(hand)-1], int64(len(hand) - 1), "file ends before the pickle's STOP opcode"},
		{"protocol 6", []byte("\x80\x06."), 0, "pickle protocol 6 is newer than this reader knows"},
		{"underflow", []byte("\x80\x04s."), 2, "stack underflow (opcode SETITEM)"},
		{"memo miss", []byte("\x80\x04h\x07."), 2, "memo slot 7 was never stored"},
		{"huge string", []byte("\x80\x04\x8d\xff\xff\xff\xff\xff\xff\x00\x00"), 2, "longer than any snapshot holds"},
		{"huge claimed", []byte("\x80\x04X\x00\x00\x00\x01abc"), 2, "the opcode needs 16777216 more bytes, 3 left"},
		{"text opcode", []byte("\x80\x02I1\n."), 2, "protocol-0 text opcode"},
		{"int top", []byte("\x80\x04K\x05."), 5, "the pickle holds an int, not a dict or a list of segments"},
		{"bad state", []byte("\x80\x04]}(\x8c\x05state\x8c\x04oops\x8c\x04size\x4b\x01ua."), 26, `unknown block state "oops"`},
		{"trailing mark", []byte("\x80\x04(]."), 4, "STOP inside an unfinished MARK"},
		{"stack flood", append(append([]byte("\x80\x04("), bytes.Repeat([]byte("N"), 70000)...), 'l', '.'), 3 + stackFloor + 1, "65537 values wait on the stack after 65540 bytes"},
		{"memoised floats", append(append([]byte("\x80\x04G\x3f\xf0\x00\x00\x00\x00\x00\x00"), bytes.Repeat([]byte("\x94"), maxWide+1)...), '.'), 11 + maxWide, "memoised values that are not containers or strings"},
		{"tuple flood", append(append([]byte("\x80\x04"), bytes.Repeat([]byte("N\x85\x940"), objFloor+2)...), 'N', '.'), 3 + 4*objFloor, "65537 lists, dicts and tuples after 262147 bytes"},
		{"escapes quoted", []byte("\x80\x04]}(\x8c\x05state\x8c\x06\x1b]0;X\x07\x8c\x04size\x4b\x01ua."), 28, `unknown block state "\x1b]0;X\a"`},
		{"too many marks", append([]byte("\x80\x04"), bytes.Repeat([]byte("("), maxMarks+2)...), 2 + maxMarks + 1, "MARKs open"},
		{"memo far apart", farMemo(), 2 + 1 + 5*maxSparse, "memo slots far from the ones in use"},
		{"dup segment", []byte("\x80\x04]}(\x8c\ntotal_size\x4b\x00\x8c\x06blocks]u2e."), 29, "a segment dict is referenced twice"},
		{"blocks short", read(t, "testdata/bad-total.pickle"), 261, "segments[0] (device 0, address 0x100000): its blocks add up to 512 bytes but total_size is 1024"},
		{"blocks gap", read(t, "testdata/bad-address.pickle"), 290, "segments[0] (device 0, address 0x100000): block 1 starts at 0x100400, want 0x100200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tt.data))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *Error", err, err)
			}
			if e.Offset != tt.offset || !strings.Contains(e.Error(), tt.want) {
				t.Errorf("got %q at %d, want %q at %d", e.Error(), e.Offset, tt.want, tt.offset)
			}
		})
	}
}

// farMemo stores one value in memo slots 4096 apart, past the sparse cap.
func farMemo() []byte {
	b := []byte("\x80\x04N")
	for i := 0; i <= maxSparse; i++ {
		b = append(b, 'r', 0, 0, 0, 0)
		binary.LittleEndian.PutUint32(b[len(b)-4:], uint32((i+2)*2048))
	}
	return append(b, '.')
}

func read(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every prefix of a real file fails cleanly, never panics, and never
// succeeds. With -short, every 7th.
func TestEveryTruncation(t *testing.T) {
	data := read(t, "testdata/hand-p2.pickle")
	step := 1
	if testing.Short() {
		step = 7
	}
	for n := 0; n < len(data); n += step {
		s, err := Read(bytes.NewReader(data[:n]))
		if err == nil {
			t.Fatalf("prefix of %d bytes decoded: %d segments", n, len(s.Segments))
		}
		var e *Error
		if !errors.As(err, &e) || e.Offset > int64(n) {
			t.Fatalf("prefix %d: %v", n, err)
		}
	}
}

// Random byte flips in a real pickle give an error or a snapshot, never a
// panic or a hang. With -short, 300 corruptions instead of 3,000.
func TestCorruption(t *testing.T) {
	data := read(t, "testdata/hand-p4.pickle")
	rng := rand.New(rand.NewSource(1))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := 0; i < n; i++ {
		c := append([]byte(nil), data...)
		for j := 0; j < 1+rng.Intn(4); j++ {
			c[1+rng.Intn(len(c)-1)] = byte(rng.Intn(256))
		}
		_, err := Read(bytes.NewReader(c))
		var e *Error
		if err != nil && (!errors.As(err, &e) || e.Offset > int64(len(c))) {
			t.Fatalf("corruption %d: %v (%T)", i, err, err)
		}
	}
}

func FuzzRead(f *testing.F) {
	for _, p := range []string{"testdata/hand-p2.pickle", "testdata/hand-p4.pickle", "testdata/legacy-p4.pickle", "testdata/list-p4.pickle"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// The hostile shapes, small: lists appended through memo references,
	// BINBYTES8 strings, lists nested through the memo.
	for _, r := range []io.Reader{memoBomb(3), bigStrings(3, 100), memoNest(50)} {
		b, err := io.ReadAll(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := Read(bytes.NewReader(b))
		var e *Error
		if err != nil && (!errors.As(err, &e) || e.Offset < 0 || e.Offset > int64(len(b))) {
			t.Fatalf("error %v (%T) is not an *Error with an offset inside the %d-byte input", err, err, len(b))
		}
	})
}

func TestTrace(t *testing.T) {
	var tr Trace
	for i := 0; i < 1<<chunkBits+5; i++ {
		tr.Append(TraceEntry{Addr: uint64(i)})
	}
	if tr.Len() != 1<<chunkBits+5 || tr.At(1<<chunkBits+4).Addr != 1<<chunkBits+4 || len(tr.chunks) != 2 {
		t.Errorf("len %d chunks %d", tr.Len(), len(tr.chunks))
	}
	n := 0
	for i, e := range tr.All() {
		if e.Addr != uint64(i) {
			t.Fatalf("event %d has addr %d", i, e.Addr)
		}
		n++
	}
	if n != tr.Len() {
		t.Errorf("All yielded %d", n)
	}
}

// Appending to a decoded trace must not write into the next device's
// events, which share its storage.
func TestAppendToDecodedTrace(t *testing.T) {
	s, err := ReadFile("testdata/hand-p4.pickle")
	if err != nil {
		t.Fatal(err)
	}
	before := *s.Traces[1].At(0)
	s.Traces[0].Append(TraceEntry{Action: ActionAlloc, Addr: 42})
	if s.Traces[0].Len() != 10 || s.Traces[0].At(9).Addr != 42 || s.Traces[0].At(8).Action != ActionOOM {
		t.Errorf("device 0 after append: len %d", s.Traces[0].Len())
	}
	if *s.Traces[1].At(0) != before {
		t.Errorf("device 1's first event changed to %+v", *s.Traces[1].At(0))
	}
}
