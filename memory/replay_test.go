package memory

import (
	"reflect"
	"testing"

	"github.com/gpudx/gpudx/snapshot"
)

const base = uint64(0x7f0000000000)

// peakSnapshot: one large segment on device 0 holding a block the trace
// never mentions (a ghost, 2 MiB - 10 requested) and a block allocated by
// event 4 (1 MiB). In the trace, C's stack names the same site as A's,
// and Q is freed at event 3 without an alloc in the window.
//
// In use after each event, walking back from E = 2 MiB - 10 + 1 MiB =
// 3145718:
//
//	6 free_requested          3145718
//	5 free_completed A 4 MiB  3145718 (before: 7340022)
//	4 alloc K 1 MiB           7340022 (before: 6291446)
//	3 free_completed Q 3 MiB  6291446 (before: 9437174)
//	2 free_completed C 1000   9437174 (before: 9438174)
//	1 alloc C 1000            9438174 (before: 9437174)
//	0 alloc A 4 MiB           9437174 (before: 5242870)
//
// The peak is event 1. Alive then: A and C (allocated, not yet freed), Q
// (freed later, allocated before the window) and the ghost G; K is not
// (allocated later). 4194304 + 1000 + 3145728 + 2097142 = 9438174.
func peakSnapshot() *snapshot.Snapshot {
	A, C, Q, K := base+10*mib, base+14*mib, base+5*mib, base+2*mib
	return &snapshot.Snapshot{
		Stacks: [][]snapshot.Frame{
			nil,
			{fr("alloc_a", "/home/u/train.py", 10)}, // 1
			{fr("empty", "/opt/torch/_refs.py", 1), fr("alloc_a", "/home/u/train.py", 10)}, // 2: same site
			{fr("q", "/home/u/model.py", 5)},                                               // 3
			{fr("g", "/home/u/model.py", 7)},                                               // 4
			{fr("k", "/home/u/data.py", 3)},                                                // 5
		},
		Segments: []snapshot.Segment{
			seg(0, base, []snapshot.Block{
				alloc(2*mib, 2*mib-10, 4), // G, at base
				alloc(mib, mib, 5),        // K
				free(17 * mib),
			}),
		},
		Traces: []snapshot.Trace{snapshot.TraceOf(
			ev(snapshot.ActionAlloc, A, 4*mib, at(10), stack(1)),
			ev(snapshot.ActionAlloc, C, 1000, at(20), stack(2)),
			ev(snapshot.ActionFreeCompleted, C, 1000, at(30), stack(2)),
			ev(snapshot.ActionFreeCompleted, Q, 3*mib, at(40), stack(3)),
			ev(snapshot.ActionAlloc, K, mib, at(50), stack(5)),
			ev(snapshot.ActionFreeCompleted, A, 4*mib, at(60), stack(1)),
			ev(snapshot.ActionFreeRequested, K, mib, at(70), stack(5)),
		)},
	}
}

func TestPeak(t *testing.T) {
	r := Analyze(peakSnapshot(), Options{TimelinePoints: 3})
	want := &Peak{Device: 0, Bytes: 9438174, TimeUS: 20, Event: 1, TopSites: []Site{
		{Site: "alloc_a (/home/u/train.py:10)", Bytes: 4195304, Count: 2, Frames: []Frame{{"alloc_a", "/home/u/train.py", 10}}},
		{Site: "q (/home/u/model.py:5)", Bytes: 3145728, Count: 1, Frames: []Frame{{"q", "/home/u/model.py", 5}}},
		{Site: "g (/home/u/model.py:7)", Bytes: 2097142, Count: 1, Frames: []Frame{{"g", "/home/u/model.py", 7}}},
	}}
	if !reflect.DeepEqual(r.Peak, want) {
		t.Errorf("peak:\n got %s\nwant %s", js(t, r.Peak), js(t, want))
	}
	// 7 events in spans of ceil(7/3) = 3: [0,3) [3,6) [6,7).
	wantTL := &Timeline{Devices: []DeviceTimeline{{Device: 0, Points: []Point{
		{Event: 1, TimeUS: 20, Bytes: 9438174},
		{Event: 4, TimeUS: 50, Bytes: 7340022},
		{Event: 6, TimeUS: 70, Bytes: 3145718},
	}}}}
	if !reflect.DeepEqual(r.Timeline, wantTL) {
		t.Errorf("timeline:\n got %s\nwant %s", js(t, r.Timeline), js(t, wantTL))
	}
}

func TestTimelineBuckets(t *testing.T) {
	s := peakSnapshot()
	after := []uint64{9437174, 9438174, 9437174, 6291446, 7340022, 3145718, 3145718}
	for _, c := range []struct {
		points int
		want   []int // events
	}{
		{0, []int{0, 1, 2, 3, 4, 5, 6}}, // default 1000: one event per point
		{7, []int{0, 1, 2, 3, 4, 5, 6}},
		{100, []int{0, 1, 2, 3, 4, 5, 6}},
		{1, []int{1}},
		{2, []int{1, 4}},       // spans of 4: [0,4) [4,7)
		{4, []int{1, 2, 4, 6}}, // spans of 2: [0,2) [2,4) [4,6) [6,7)
		{6, []int{1, 2, 4, 6}}, // spans of 2 again: at most 6 points, here 4
	} {
		got := Analyze(s, Options{TimelinePoints: c.points}).Timeline.Devices[0].Points
		var ev []int
		for _, p := range got {
			ev = append(ev, p.Event)
			if p.Bytes != after[p.Event] {
				t.Errorf("points %d: event %d bytes %d, want %d", c.points, p.Event, p.Bytes, after[p.Event])
			}
		}
		if !reflect.DeepEqual(ev, c.want) {
			t.Errorf("points %d: events %v, want %v", c.points, ev, c.want)
		}
	}
}

// TestPeakTies: equal values resolve to the earliest event, for the peak
// and within a timeline span; an alloc larger than the memory in use
// clamps at zero instead of wrapping.
func TestPeakTies(t *testing.T) {
	X, Y := base, base+mib
	s := &snapshot.Snapshot{Traces: []snapshot.Trace{snapshot.TraceOf(
		ev(snapshot.ActionAlloc, X, 100),
		ev(snapshot.ActionFreeCompleted, X, 100),
		ev(snapshot.ActionAlloc, Y, 100),
		ev(snapshot.ActionFreeCompleted, Y, 100),
		ev(snapshot.ActionAlloc, X, 50),
	)}}
	// E = 0 (no segments): after = [100, 0, 100, 0, 0]; before event 4
	// 0 - 50 clamps to 0.
	r := Analyze(s, Options{TimelinePoints: 1})
	if r.Peak == nil || r.Peak.Event != 0 || r.Peak.Bytes != 100 {
		t.Fatalf("peak %s", js(t, r.Peak))
	}
	if p := r.Timeline.Devices[0].Points; len(p) != 1 || p[0].Event != 0 {
		t.Errorf("points %s", js(t, p))
	}
	// Alive after event 0: X's first alloc, freed only at event 1: 100
	// bytes, no stack.
	if ts := r.Peak.TopSites; len(ts) != 1 || ts[0].Site != NoStack || ts[0].Bytes != 100 || ts[0].Count != 1 {
		t.Errorf("alive %s", js(t, ts))
	}
}

// TestPeakDevice: the device with the larger peak wins, the lowest device
// on a tie; devices whose traces are empty have no timeline.
func TestPeakDevice(t *testing.T) {
	mk := func(n0, n2 uint64) *snapshot.Snapshot {
		return &snapshot.Snapshot{Traces: []snapshot.Trace{
			snapshot.TraceOf(ev(snapshot.ActionAlloc, 1, n0), ev(snapshot.ActionFreeCompleted, 1, n0)),
			{},
			snapshot.TraceOf(ev(snapshot.ActionAlloc, 1, n2, at(5)), ev(snapshot.ActionFreeCompleted, 1, n2)),
		}}
	}
	for _, c := range []struct {
		n0, n2 uint64
		dev    int
	}{{100, 200, 2}, {200, 100, 0}, {100, 100, 0}} {
		r := Analyze(mk(c.n0, c.n2), Options{})
		if r.Peak.Device != c.dev || r.Peak.Bytes != max(c.n0, c.n2) || r.Peak.Event != 0 {
			t.Errorf("%d/%d: peak %s", c.n0, c.n2, js(t, r.Peak))
		}
		if len(r.Timeline.Devices) != 2 || r.Timeline.Devices[0].Device != 0 || r.Timeline.Devices[1].Device != 2 {
			t.Errorf("timeline devices %s", js(t, r.Timeline))
		}
	}
}

// TestNoPeak: a trace without alloc or free_completed gives no peak and
// no timeline.
func TestNoPeak(t *testing.T) {
	s := &snapshot.Snapshot{
		Segments: []snapshot.Segment{seg(0, 0, []snapshot.Block{alloc(512, 512, 0)})},
		Traces: []snapshot.Trace{snapshot.TraceOf(
			ev(snapshot.ActionSnapshot, 0, 512),
			ev(snapshot.ActionSegmentAlloc, 0, 2*mib),
			ev(snapshot.ActionFreeRequested, 0, 512),
		)},
	}
	if r := Analyze(s, Options{}); r.Peak != nil || r.Timeline != nil {
		t.Errorf("peak %s timeline %s", js(t, r.Peak), js(t, r.Timeline))
	}
}

// TestAliveReusedAddress: an address allocated twice with no free between
// (a ring buffer that lost the free) counts both allocations; a free
// before the peak ends every earlier allocation at its address.
func TestAliveReusedAddress(t *testing.T) {
	s := &snapshot.Snapshot{Traces: []snapshot.Trace{snapshot.TraceOf(
		ev(snapshot.ActionAlloc, 1, 10),
		ev(snapshot.ActionAlloc, 1, 20),
		ev(snapshot.ActionAlloc, 2, 40),
		ev(snapshot.ActionAlloc, 2, 80),
		ev(snapshot.ActionFreeCompleted, 2, 80),
		ev(snapshot.ActionAlloc, 3, 1000),
		ev(snapshot.ActionFreeCompleted, 3, 1000),
		ev(snapshot.ActionFreeCompleted, 1, 20),
		ev(snapshot.ActionFreeCompleted, 1, 10),
	)}}
	// In use after each event (E = 0, backwards): 8:0 7:10 6:30 5:1030
	// 4:30 3:110 2:30, then 30 - 40 clamps to 0: 1:0 0:0. Alive after
	// event 5: both allocs at 1 (10 + 20), the one at 3 (1000); the free at
	// event 4 ended both allocs at 2.
	r := Analyze(s, Options{})
	if r.Peak.Event != 5 || r.Peak.Bytes != 1030 {
		t.Fatalf("peak %s", js(t, r.Peak))
	}
	if ts := r.Peak.TopSites; len(ts) != 1 || ts[0].Bytes != 1030 || ts[0].Count != 3 {
		t.Errorf("alive %s", js(t, ts))
	}
}

// BenchmarkAnalyzeTrace measures the two passes over a trace of a million
// events (alloc/free pairs over 5000 addresses).
func BenchmarkAnalyzeTrace(b *testing.B) {
	var tr snapshot.Trace
	for i := 0; i < 500_000; i++ {
		a := base + uint64(i%5000)*4096
		tr.Append(ev(snapshot.ActionAlloc, a, 4000, stack(snapshot.StackID(i%2))))
		tr.Append(ev(snapshot.ActionFreeCompleted, a, 4000))
	}
	s := &snapshot.Snapshot{Traces: []snapshot.Trace{tr}, Stacks: [][]snapshot.Frame{nil, {fr("a", "a.py", 1)}}}
	b.ReportAllocs()
	for b.Loop() {
		Analyze(s, Options{})
	}
}
