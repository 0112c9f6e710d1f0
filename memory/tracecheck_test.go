package memory

import (
	"strings"
	"testing"

	"github.com/gpudx/gpudx/snapshot"
)

// TestTraceMismatch: a trace that ends with an unfreed 4 MiB alloc whose
// block the segments show free, and a live 1 MiB block at an address the
// trace last freed. The peak comes from the trace alone: 4 MiB + 1 MiB
// (before its free) = 5 MiB after event 1.
func TestTraceMismatch(t *testing.T) {
	A, B := base, base+4*mib
	s := &snapshot.Snapshot{
		Segments: []snapshot.Segment{seg(0, base, []snapshot.Block{free(4 * mib), alloc(mib, mib, 0), free(15 * mib)})},
		Traces: []snapshot.Trace{snapshot.TraceOf(
			ev(snapshot.ActionAlloc, A, 4*mib, at(1)),
			ev(snapshot.ActionAlloc, B, mib, at(2)),
			ev(snapshot.ActionFreeCompleted, B, mib, at(3)),
		)},
	}
	r := Analyze(s, Options{})
	if len(r.TraceMismatch) != 1 {
		t.Fatalf("mismatch %+v", r.TraceMismatch)
	}
	m := r.TraceMismatch[0]
	if m.TraceEndBytes != 4*mib || m.SegmentBytes != mib || m.UnfreedBytes != 4*mib || m.UnfreedCount != 1 ||
		m.UnrecordedBytes != mib || m.UnrecordedCount != 1 {
		t.Errorf("%+v", m)
	}
	for _, w := range []string{"disagree on device 0", "4.00 MiB in 1 allocation", "1.00 MiB in 1 block", "The peak and the timeline come from the trace alone"} {
		if !strings.Contains(m.Text, w) {
			t.Errorf("text lacks %q: %s", w, m.Text)
		}
	}
	if r.Peak == nil || r.Peak.Bytes != 5*mib || r.Peak.Event != 1 {
		t.Errorf("peak %+v", r.Peak)
	}
	// A consistent trace: no mismatch.
	if r := Analyze(peakSnapshot(), Options{}); len(r.TraceMismatch) != 0 {
		t.Errorf("consistent trace: %+v", r.TraceMismatch)
	}
}
