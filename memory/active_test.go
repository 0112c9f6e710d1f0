package memory

import (
	"reflect"
	"testing"
)

// TestActiveTimeline on peakSnapshot (see its comment for the in-use
// figures): one column per event, two bands. Alive at some sample: Q (3
// MiB, before the window, freed at 3), the ghost G (2 MiB - 10, never
// freed), A (4 MiB, 0 to 5), C (1000, 1 to 2), K (1 MiB, from 4). The two
// largest, Q and A, are drawn, Q first (allocated before the window), A
// on top of it while Q lives; G, C and K are summed into Other.
func TestActiveTimeline(t *testing.T) {
	tl := ActiveTimelineOf(peakSnapshot(), 0, 7, 2)
	if tl == nil {
		t.Fatal("no timeline")
	}
	if !reflect.DeepEqual(tl.Sample, []int{0, 1, 2, 3, 4, 5, 6}) ||
		!reflect.DeepEqual(tl.Total, []uint64{9437174, 9438174, 9437174, 6291446, 7340022, 3145718, 3145718}) {
		t.Errorf("samples %v totals %v", tl.Sample, tl.Total)
	}
	if !reflect.DeepEqual(tl.Other, []uint64{2097142, 2098142, 2097142, 2097142, 3145718, 3145718, 3145718}) || tl.OtherCount != 3 {
		t.Errorf("other %v (%d)", tl.Other, tl.OtherCount)
	}
	if tl.PeakColumn != 1 || tl.OOMEvent != -1 || tl.Events != 7 {
		t.Errorf("peak %d oom %d events %d", tl.PeakColumn, tl.OOMEvent, tl.Events)
	}
	want := []ActiveBand{
		{Size: 3 * mib, Stack: 3, Site: "q (/home/u/model.py:5)", Alloc: -1, Free: 3, First: 0, Offset: []uint64{0, 0, 0}},
		{Size: 4 * mib, Stack: 1, Site: "alloc_a (/home/u/train.py:10)", Alloc: 0, Free: 5, First: 0, Offset: []uint64{3 * mib, 3 * mib, 3 * mib, 0, 0}},
	}
	if !reflect.DeepEqual(tl.Bands, want) {
		t.Errorf("bands\n got %+v\nwant %+v", tl.Bands, want)
	}
	// Every column's drawn bands plus Other is its total.
	for c := range tl.Sample {
		sum := tl.Other[c]
		for _, b := range tl.Bands {
			if c >= b.First && c < b.First+len(b.Offset) {
				sum += b.Size
			}
		}
		if sum != tl.Total[c] {
			t.Errorf("column %d: %d drawn + other, total %d", c, sum, tl.Total[c])
		}
	}
	// Fewer columns: each the span's maximum (events 0-1, 2-3, 4-5, 6).
	tl = ActiveTimelineOf(peakSnapshot(), 0, 4, 2)
	if !reflect.DeepEqual(tl.Sample, []int{1, 2, 4, 6}) || tl.PeakColumn != 0 {
		t.Errorf("4 columns: samples %v peak %d", tl.Sample, tl.PeakColumn)
	}
	if ActiveTimelineOf(peakSnapshot(), 1, 0, 0) != nil {
		t.Error("a device without a trace has no timeline")
	}
}
