package memory

import (
	"slices"

	"github.com/gpudx/gpudx/snapshot"
)

// traceSummary is what one backward pass over a device's trace finds.
type traceSummary struct {
	dev       int
	tr        *snapshot.Trace
	moves     bool   // the trace holds an alloc or a free_completed
	peak      int    // index of the first event with the most memory in use after it
	peakBytes uint64 // in use after that event
	points    []Point
	oom       int // index of the last oom event, -1 when none
}

// replayTraces walks every non-empty device trace once, newest event
// first. The snapshot's own state is the end of the window, so walking
// backwards from it needs no guess about memory that predates the window,
// which a forward replay from zero would need.
func (a *analysis) replayTraces(points int) ([]traceSummary, []TraceMismatch) {
	var out []traceSummary
	var bad []TraceMismatch
	for d := range a.s.Traces {
		tr := &a.s.Traces[d]
		if tr.Len() == 0 {
			continue
		}
		// The backward pass starts from the trace's own end: when the
		// trace and the segments disagree, starting from the segments
		// would mix the two (a peak that is not the sum of what was alive).
		end, m := a.traceEnd(d, tr, a.requested(d))
		if m != nil {
			bad = append(bad, *m)
		}
		out = append(out, replayBackward(d, tr, end, points))
	}
	return out, bad
}

// requested is Σ requested_size of a device's active blocks: the memory in
// use, as the trace counts it, at snapshot time.
func (a *analysis) requested(dev int) uint64 {
	var n uint64
	for _, sg := range a.segs[dev] {
		for i := range sg.Blocks {
			if b := &sg.Blocks[i]; b.State.Active() {
				n += b.RequestedSize
			}
		}
	}
	return n
}

// replayBackward computes, for every event i, the memory in use after it
// (end is the value after the last event) and keeps only the peak, the
// timeline's span maxima and the last oom, so memory does not grow with
// the trace. Walking backwards, ">=" makes the earliest event win ties.
func replayBackward(dev int, tr *snapshot.Trace, end uint64, points int) traceSummary {
	n := tr.Len()
	width := (n + points - 1) / points
	ts := traceSummary{dev: dev, tr: tr, oom: -1, peak: n - 1, peakBytes: end,
		points: make([]Point, (n+width-1)/width)}
	for k := range ts.points {
		ts.points[k].Event = -1
	}
	cur := end
	for i := n - 1; i >= 0; i-- {
		e := tr.At(i)
		if cur >= ts.peakBytes {
			ts.peak, ts.peakBytes = i, cur
		}
		if p := &ts.points[i/width]; p.Event < 0 || cur >= p.Bytes {
			*p = Point{Event: i, TimeUS: e.TimeUS, Bytes: cur}
		}
		switch e.Action {
		case snapshot.ActionAlloc:
			ts.moves = true
			if cur >= e.Size {
				cur -= e.Size
			} else {
				cur = 0 // a trace inconsistent with the snapshot; never negative
			}
		case snapshot.ActionFreeCompleted:
			ts.moves = true
			cur += e.Size
		case snapshot.ActionOOM:
			if ts.oom < 0 {
				ts.oom = i
			}
		}
	}
	return ts
}

// peak picks the device whose trace reached the most memory in use (ties:
// the lowest device) and lists what was alive then; it also assembles the
// timeline. Both are nil when no trace records an alloc or a free, since
// then nothing moved in the window.
func (a *analysis) peak(traces []traceSummary, top int) (*Peak, *Timeline) {
	var best *traceSummary
	moves := false
	for i := range traces {
		t := &traces[i]
		moves = moves || t.moves
		if best == nil || t.peakBytes > best.peakBytes {
			best = t
		}
	}
	if !moves {
		return nil, nil
	}
	tl := &Timeline{Devices: make([]DeviceTimeline, 0, len(traces))}
	for _, t := range traces {
		tl.Devices = append(tl.Devices, DeviceTimeline{Device: t.dev, Points: t.points})
	}
	p := &Peak{Device: best.dev, Bytes: best.peakBytes, Event: best.peak,
		TimeUS: best.tr.At(best.peak).TimeUS}
	p.TopSites = a.aliveAt(best.dev, best.tr, best.peak).top(top)
	return p, tl
}

// Flags kept per address by aliveAt.
const (
	seenAddr  = 1 << iota // the address appears in an alloc or free_completed
	allocAddr             // the address appears in an alloc so far
)

// aliveAt groups by site the allocations live after event p of a device's
// trace, in one forward pass with maps keyed by address:
//
//	(a) allocs at or before p not freed by p (trace size and stack);
//	(b) frees after p of addresses with no earlier alloc in the window:
//	    allocated before the window began, so alive at p;
//	(c) active blocks at snapshot time whose address the trace never
//	    mentions: older than the window and never freed (requested size
//	    and stack of the block).
//
// Members are added in event order ((a) by alloc index, then (b)), then
// (c) in segment and block order, which fixes the tie rule for the shown
// stack.
func (a *analysis) aliveAt(dev int, tr *snapshot.Trace, p int) *grouper {
	n := tr.Len()
	flags := map[uint64]uint8{}
	live := map[uint64]int{}     // address → index of its live alloc
	shadow := map[uint64][]int{} // earlier live allocs at a reused address (inconsistent traces)
	var late []int               // (b), by index
	for i := 0; i < n; i++ {
		e := tr.At(i)
		switch e.Action {
		case snapshot.ActionAlloc:
			if i <= p {
				if prev, ok := live[e.Addr]; ok {
					shadow[e.Addr] = append(shadow[e.Addr], prev)
				}
				live[e.Addr] = i
			}
			flags[e.Addr] |= seenAddr | allocAddr
		case snapshot.ActionFreeCompleted:
			if i <= p {
				delete(live, e.Addr)
				delete(shadow, e.Addr)
			} else if flags[e.Addr]&allocAddr == 0 {
				late = append(late, i)
			}
			flags[e.Addr] |= seenAddr
		}
	}
	early := make([]int, 0, len(live))
	for _, i := range live {
		early = append(early, i)
	}
	for _, is := range shadow {
		early = append(early, is...)
	}
	slices.Sort(early)

	g := newGrouper(a.sites)
	for _, i := range early {
		e := tr.At(i)
		g.add(e.Stack, e.Size)
	}
	for _, i := range late {
		e := tr.At(i)
		g.add(e.Stack, e.Size)
	}
	for _, sg := range a.segs[dev] {
		for j := range sg.Blocks {
			if b := &sg.Blocks[j]; b.State.Active() && flags[b.Address]&seenAddr == 0 {
				g.add(b.Stack, b.RequestedSize)
			}
		}
	}
	return g
}
