package memory

import (
	"container/heap"
	"slices"

	"github.com/gpudx/gpudx/snapshot"
)

// ActiveTimeline is a device's live allocations over its trace, stacked as
// memory_viz's "Active Memory Timeline" draws them, reduced to a bounded
// number of shapes: the trace is sampled at most Columns times (each
// sample the event with the most memory in use in its span), the largest
// allocations alive at a sample are drawn one by one (at most Bands), and
// the rest alive at each sample are summed into Other. Allocations that
// live only between two samples appear in no sample.
type ActiveTimeline struct {
	Device int
	Events int   // trace length
	Sample []int // event index of each column
	// Total is in use after each sampled event; Other the part of it held
	// by allocations not drawn one by one (OtherCount of them).
	Total      []uint64
	Other      []uint64
	OtherCount int
	Bands      []ActiveBand
	// PeakColumn is the column with the most in use; OOMEvent the index of
	// the last oom event (-1 when none).
	PeakColumn int
	OOMEvent   int
}

// ActiveBand is one allocation drawn as a band.
type ActiveBand struct {
	Size  uint64 // requested bytes
	Stack snapshot.StackID
	Site  string
	// Alloc and Free are its event indexes: Alloc -1 when it was allocated
	// before the trace began; Free = Events when it was not freed by its end.
	Alloc, Free int
	// First is the first column it is alive at; Offset its bottom (bytes
	// below it) at each column from First on.
	First  int
	Offset []uint64
}

// Limits of the active timeline.
const (
	DefaultActiveColumns = 300
	DefaultActiveBands   = 300
)

// life is one allocation of the trace window.
type life struct {
	size        uint64
	alloc, free int32 // event indexes (alloc -1: before the window)
	stack       snapshot.StackID
}

// ActiveTimelineOf builds the timeline of a device's trace; nil when the
// device has no trace with an alloc or a free. columns and bands ≤ 0 take
// the defaults.
func ActiveTimelineOf(s *snapshot.Snapshot, dev, columns, bands int) *ActiveTimeline {
	if s == nil || dev < 0 || dev >= len(s.Traces) || s.Traces[dev].Len() == 0 {
		return nil
	}
	if columns <= 0 {
		columns = DefaultActiveColumns
	}
	if bands <= 0 {
		bands = DefaultActiveBands
	}
	tr := &s.Traces[dev]
	n := tr.Len()
	lives, deltaOK := lifetimes(s, dev, tr)
	if !deltaOK {
		return nil
	}
	t := &ActiveTimeline{Device: dev, Events: n, OOMEvent: -1}

	// In use after each event, by a running sum over the lifetimes'
	// starts and ends, then the maximum of each span of events.
	delta := make([]int64, n+1)
	var start uint64
	for _, l := range lives {
		if l.alloc < 0 {
			start += l.size
		} else {
			delta[l.alloc] += int64(l.size)
		}
		if int(l.free) < n {
			delta[l.free] -= int64(l.size)
		}
	}
	width := (n + columns - 1) / columns
	cur := int64(start)
	var best uint64
	for i := 0; i < n; i++ {
		cur += delta[i]
		if tr.At(i).Action == snapshot.ActionOOM {
			t.OOMEvent = i
		}
		c := i / width
		v := uint64(max(cur, 0))
		if c == len(t.Sample) {
			t.Sample = append(t.Sample, i)
			t.Total = append(t.Total, v)
		} else if v > t.Total[c] {
			t.Sample[c], t.Total[c] = i, v
		}
		if v > best || i == 0 {
			best, t.PeakColumn = v, c
		}
	}

	// The largest allocations alive at a sample are drawn; a min-heap
	// keeps the biggest `bands` of them.
	h := &bySize{lives: lives}
	alive := func(l *life) (int, bool) {
		c, _ := slices.BinarySearch(t.Sample, int(l.alloc))
		return c, c < len(t.Sample) && t.Sample[c] < int(l.free)
	}
	t.Other = make([]uint64, len(t.Sample))
	for i := range lives {
		if _, ok := alive(&lives[i]); !ok {
			continue
		}
		if h.Len() < bands {
			heap.Push(h, i)
		} else if lives[i].size > lives[h.idx[0]].size {
			h.idx[0] = i
			heap.Fix(h, 0)
		}
	}
	drawn := make([]bool, len(lives))
	for _, i := range h.idx {
		drawn[i] = true
	}
	for i := range lives {
		l := &lives[i]
		c, ok := alive(l)
		if !ok || drawn[i] {
			continue
		}
		t.OtherCount++
		for ; c < len(t.Sample) && t.Sample[c] < int(l.free); c++ {
			t.Other[c] += l.size
		}
	}

	// Bands stack in the order they were allocated (lives is in that
	// order), each column's offsets summing the drawn bands below.
	sites := newSiteNames(s)
	below := make([]uint64, len(t.Sample))
	for i := range lives {
		if !drawn[i] {
			continue
		}
		l := &lives[i]
		c0, _ := alive(l)
		b := ActiveBand{Size: l.size, Stack: l.stack, Alloc: int(l.alloc), Free: int(l.free), First: c0}
		b.Site, _ = SiteOf(sites.frames(l.stack))
		for c := c0; c < len(t.Sample) && t.Sample[c] < int(l.free); c++ {
			b.Offset = append(b.Offset, below[c])
			below[c] += l.size
		}
		t.Bands = append(t.Bands, b)
	}
	return t
}

// lifetimes pairs each alloc with its free_completed, in allocation order:
// first what was alive before the window (frees without an alloc in it,
// then active blocks the trace never mentions), then the window's allocs.
// It reports false when nothing in the trace allocates or frees.
func lifetimes(s *snapshot.Snapshot, dev int, tr *snapshot.Trace) ([]life, bool) {
	n := tr.Len()
	var before, window []life
	open := map[uint64]int{} // address → index in window of its unfreed alloc
	seen := map[uint64]bool{}
	moves := false
	for i := 0; i < n; i++ {
		e := tr.At(i)
		switch e.Action {
		case snapshot.ActionAlloc:
			moves = true
			open[e.Addr] = len(window)
			seen[e.Addr] = true
			window = append(window, life{size: e.Size, alloc: int32(i), free: int32(n), stack: e.Stack})
		case snapshot.ActionFreeCompleted:
			moves = true
			if j, ok := open[e.Addr]; ok {
				window[j].free = int32(i)
				delete(open, e.Addr)
			} else if !seen[e.Addr] {
				before = append(before, life{size: e.Size, alloc: -1, free: int32(i), stack: e.Stack})
			}
			seen[e.Addr] = true
		}
	}
	if !moves {
		return nil, false
	}
	for i := range s.Segments {
		sg := &s.Segments[i]
		if sg.Device != dev {
			continue
		}
		for j := range sg.Blocks {
			if b := &sg.Blocks[j]; b.State.Active() && !seen[b.Address] {
				before = append(before, life{size: b.RequestedSize, alloc: -1, free: int32(n), stack: b.Stack})
			}
		}
	}
	return append(before, window...), true
}

// bySize is a min-heap of indexes into lives by size.
type bySize struct {
	lives []life
	idx   []int
}

func (h *bySize) Len() int           { return len(h.idx) }
func (h *bySize) Less(i, j int) bool { return h.lives[h.idx[i]].size < h.lives[h.idx[j]].size }
func (h *bySize) Swap(i, j int)      { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *bySize) Push(x any)         { h.idx = append(h.idx, x.(int)) }
func (h *bySize) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}
