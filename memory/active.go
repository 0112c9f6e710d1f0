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

// life is one allocation: its size, its events and its place in the
// stacking order (key).
type life struct {
	size        uint64
	alloc, free int32 // event indexes (alloc -1: before the window; free = n: never freed)
	stack       snapshot.StackID
	key         int64 // stacking order: earlier first
}

// Stacking groups: what was alive before the window (frees without an
// alloc in it, by free event; then active blocks the trace never mentions),
// then the window's allocs by alloc event.
const (
	keyLateFree = 0
	keyGhost    = 1 << 40
	keyAlloc    = 2 << 40
)

// ActiveTimelineOf builds the timeline of a device's trace; nil when the
// device has no trace with an alloc or a free. columns and bands ≤ 0 take
// the defaults. It reads the trace twice and keeps no per-event or
// per-allocation array: the in-use figure is a running sum, and the
// allocations are paired as the trace frees them and only the largest
// `bands` are kept, so memory stays small on long traces.
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
	t := &ActiveTimeline{Device: dev, Events: n, OOMEvent: -1}

	// Pass 1: in use after each event, relative to what was alive before
	// the window (the maximum of each span of events is its sample), the
	// frees of addresses not mentioned before (alive before the window),
	// and which addresses the trace mentions at all.
	mentioned := map[uint64]bool{}
	var lateFrees []int32
	var start uint64
	var rel int64
	var relTotal []int64
	moves := false
	width := (n + columns - 1) / columns
	for i := 0; i < n; i++ {
		e := tr.At(i)
		switch e.Action {
		case snapshot.ActionAlloc:
			moves = true
			rel += int64(e.Size)
			mentioned[e.Addr] = true
		case snapshot.ActionFreeCompleted:
			moves = true
			rel -= int64(e.Size)
			if !mentioned[e.Addr] {
				start += e.Size
				lateFrees = append(lateFrees, int32(i))
			}
			mentioned[e.Addr] = true
		case snapshot.ActionOOM:
			t.OOMEvent = i
		}
		if c := i / width; c == len(t.Sample) {
			t.Sample = append(t.Sample, i)
			relTotal = append(relTotal, rel)
		} else if rel > relTotal[c] {
			t.Sample[c], relTotal[c] = i, rel
		}
	}
	if !moves {
		return nil
	}
	var ghosts []life
	for i := range s.Segments {
		sg := &s.Segments[i]
		if sg.Device != dev {
			continue
		}
		for j := range sg.Blocks {
			if b := &sg.Blocks[j]; b.State.Active() && !mentioned[b.Address] {
				start += b.RequestedSize
				ghosts = append(ghosts, life{size: b.RequestedSize, alloc: -1, free: int32(n), stack: b.Stack, key: keyGhost + int64(len(ghosts))})
			}
		}
	}
	t.Total = make([]uint64, len(relTotal))
	var best uint64
	for c, r := range relTotal {
		t.Total[c] = uint64(max(int64(start)+r, 0))
		if t.Total[c] > best || c == 0 {
			best, t.PeakColumn = t.Total[c], c
		}
	}

	// Pass 2: pair allocs with frees; each allocation alive at a sample
	// counts in Other until it is among the largest `bands`.
	t.Other = make([]uint64, len(t.Sample))
	span := func(l *life, add bool) {
		c, _ := slices.BinarySearch(t.Sample, int(l.alloc))
		for ; c < len(t.Sample) && t.Sample[c] < int(l.free); c++ {
			if add {
				t.Other[c] += l.size
			} else {
				t.Other[c] -= l.size
			}
		}
	}
	h := &bySize{}
	consider := func(l life) {
		c, _ := slices.BinarySearch(t.Sample, int(l.alloc))
		if c == len(t.Sample) || t.Sample[c] >= int(l.free) {
			return // alive at no sample
		}
		switch {
		case h.Len() < bands:
			heap.Push(h, l)
		case l.size > h.lives[0].size:
			old := h.lives[0]
			span(&old, true)
			t.OtherCount++
			h.lives[0] = l
			heap.Fix(h, 0)
		default:
			span(&l, true)
			t.OtherCount++
		}
	}
	for _, g := range ghosts {
		consider(g)
	}
	open := map[uint64]life{}
	late := 0
	for i := 0; i < n; i++ {
		e := tr.At(i)
		switch e.Action {
		case snapshot.ActionAlloc:
			open[e.Addr] = life{size: e.Size, alloc: int32(i), free: int32(n), stack: e.Stack, key: keyAlloc + int64(i)}
		case snapshot.ActionFreeCompleted:
			if l, ok := open[e.Addr]; ok {
				l.free = int32(i)
				delete(open, e.Addr)
				consider(l)
			} else if late < len(lateFrees) && lateFrees[late] == int32(i) {
				late++
				consider(life{size: e.Size, alloc: -1, free: int32(i), stack: e.Stack, key: keyLateFree + int64(i)})
			}
		}
	}
	// Allocs never freed, in the order they were made.
	rest := make([]life, 0, len(open))
	for _, l := range open {
		rest = append(rest, l)
	}
	slices.SortFunc(rest, func(a, b life) int { return int(a.key - b.key) })
	for _, l := range rest {
		consider(l)
	}

	// Bands stack in allocation order, each column's offsets summing the
	// drawn bands below.
	drawn := h.lives
	slices.SortFunc(drawn, func(a, b life) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	sites := newSiteNames(s)
	below := make([]uint64, len(t.Sample))
	for i := range drawn {
		l := &drawn[i]
		c0, _ := slices.BinarySearch(t.Sample, int(l.alloc))
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

// bySize is a min-heap of allocations by size.
type bySize struct{ lives []life }

func (h *bySize) Len() int           { return len(h.lives) }
func (h *bySize) Less(i, j int) bool { return h.lives[i].size < h.lives[j].size }
func (h *bySize) Swap(i, j int)      { h.lives[i], h.lives[j] = h.lives[j], h.lives[i] }
func (h *bySize) Push(x any)         { h.lives = append(h.lives, x.(life)) }
func (h *bySize) Pop() any {
	x := h.lives[len(h.lives)-1]
	h.lives = h.lives[:len(h.lives)-1]
	return x
}
