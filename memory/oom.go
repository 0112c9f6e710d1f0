package memory

import (
	"slices"

	"github.com/gpudx/gpudx/snapshot"
)

const (
	// smallRequest is the largest request the small pool serves.
	smallRequest = 1 << 20
	// smallSegment is the size of a small-pool segment; a segment given
	// back by an undone segment_free is taken to be small up to it.
	smallSegment = 2 << 20
	// minBlock is the allocator's rounding unit and smallest block.
	minBlock = 512
)

// Verdicts of an OOM explanation.
const (
	VerdictFragmentation = "fragmentation"
	VerdictOutside       = "outside_allocator"
	VerdictLiveTensors   = "live_tensors"
	VerdictUnknown       = "unknown"
	// VerdictFits answers a --request question that a free block serves.
	VerdictFits = "fits"
	// VerdictExceedsAvailable is a request larger than all PyTorch held plus
	// what the device had free (or than the card): freeing tensors in this
	// process cannot make room for it.
	VerdictExceedsAvailable = "exceeds_available"
	// VerdictNewSegment answers a --request question that no cached block
	// serves but a new segment from the device's free memory does.
	VerdictNewSegment = "new_segment"
	// VerdictAfterRelease answers a --request question that is served
	// once the allocator has released its entirely free cached segments
	// (it does so by itself before raising an OOM).
	VerdictAfterRelease = "fits_after_release"
	// VerdictDeviceFreeUnknown answers a --request question that needs
	// new memory from the device when the device's free memory is not
	// known (no --capacity and no oom event).
	VerdictDeviceFreeUnknown = "device_free_unknown"
)

// explainOOM explains the trace's last oom event, or the request the user
// asked about; nil when there is neither.
func (a *analysis) explainOOM(traces []traceSummary, opt Options, r *Report) *OOM {
	var o *OOM
	var segs []cacheSeg
	if opt.Request > 0 {
		o, segs = a.requestOOM(opt, traces)
	} else {
		var src *traceSummary
		for i := range traces {
			t := &traces[i]
			if t.oom < 0 {
				continue
			}
			// Devices come in ascending order, so a strict comparison
			// keeps the lowest device on a tie.
			if src == nil || t.tr.At(t.oom).TimeUS > src.tr.At(src.oom).TimeUS {
				src = t
			}
		}
		if src == nil {
			return nil
		}
		o, segs = a.traceOOM(src)
	}
	if opt.Capacity > 0 {
		c := opt.Capacity
		o.CapacityBytes = &c
		if o.DeviceFreeBytes == nil && o.Source == "request" {
			// Nothing says what is held outside PyTorch: the free memory
			// is at most the capacity minus what PyTorch reserved.
			free := c - min(c, o.ReservedBytes)
			o.DeviceFreeBytes = &free
			o.DeviceFreeSource = FreeFromCapacity
		}
		// The memory outside the allocator is only known with a measured
		// free figure; a sum that does not fit the capacity means none.
		if o.DeviceFreeBytes != nil && o.DeviceFreeSource != FreeFromCapacity {
			if used := o.ReservedBytes + *o.DeviceFreeBytes; used >= o.ReservedBytes && used <= c {
				out := c - used
				o.OutsideBytes = &out
			}
		}
	}
	if o.Source == "request" {
		o.Path = path(o, segs, a.s.Settings, o.DeviceFreeBytes)
	} else {
		o.Path = tracePath(o, segs, a.s.Settings)
	}
	o.Verdict = verdict(o)
	explain(o, a.s.Settings, r.TopSites)
	return o
}

// verdict applies the rules in order. A --request question takes the
// verdict of its path (the step that serves it, or that the device's free
// memory is not known). A failure (every step failed, or a trace oom) is:
// free memory in the right pool that is too scattered; memory outside the
// allocator; a request larger than everything this process could get;
// live tensors; unknown.
func verdict(o *OOM) string {
	if o.Source == "request" {
		if v := pathVerdict(o.Path); v != "" {
			return v
		}
	}
	req := o.RoundedBytes
	switch {
	case o.CacheFreeBytes >= req && o.LargestFreeBlockBytes < req:
		return VerdictFragmentation
	case o.CapacityBytes != nil && o.OutsideBytes != nil && *o.OutsideBytes >= req &&
		*o.OutsideBytes >= *o.CapacityBytes/10:
		return VerdictOutside
	case exceedsAvailable(o):
		return VerdictExceedsAvailable
	case o.ReservedBytes > 0 && 2*o.AllocatedBytes >= o.ReservedBytes && // allocated ≥ reserved/2, exactly
		req <= satAdd(o.ReservedBytes, derefOr(o.DeviceFreeBytes)):
		return VerdictLiveTensors
	}
	return VerdictUnknown
}

// exceedsAvailable reports whether the request is larger than the card, or
// than all the memory PyTorch held plus what the device had free.
func exceedsAvailable(o *OOM) bool {
	if o.CapacityBytes != nil && o.RequestedBytes > *o.CapacityBytes {
		return true
	}
	return o.DeviceFreeBytes != nil && o.RequestedBytes > satAdd(o.ReservedBytes, *o.DeviceFreeBytes)
}

func satAdd(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}

// needSmall reports whether a request is served by the small pool.
func needSmall(req uint64) bool { return req <= smallRequest }

func poolKind(small bool) string {
	if small {
		return "small"
	}
	return "large"
}

// stream returns the raw cudaStream_t of a trace event's stream index (0
// for an index outside the table).
func (a *analysis) stream(idx uint16) uint64 {
	if int(idx) < len(a.s.Streams) {
		return a.s.Streams[idx]
	}
	return 0
}

// requestOOM asks whether a request of opt.Request bytes could be served
// on a device from the snapshot-time state.
func (a *analysis) requestOOM(opt Options, traces []traceSummary) (*OOM, []cacheSeg) {
	dev := opt.RequestDevice
	if dev < 0 {
		dev = 0
		var most uint64
		for i, d := range a.devs {
			var r uint64
			for _, sg := range a.segs[d] {
				r += sg.TotalSize
			}
			if i == 0 || r > most {
				dev, most = d, r
			}
		}
	}
	rounded := roundSize(opt.Request, a.s.Settings)
	o := &OOM{Device: dev, RequestedBytes: opt.Request, RoundedBytes: rounded, Event: -1, Source: "request",
		Pool: poolKind(needSmall(rounded)), Frames: []Frame{}}
	segs := a.snapshotSegs(dev)
	fillFigures(o, segs)
	// A trace oom on this device measured the device's free memory; what
	// PyTorch reserved or released since then moves it the other way
	// (memory outside PyTorch taken as unchanged).
	for i := range traces {
		t := &traces[i]
		if t.dev != dev || t.oom < 0 {
			continue
		}
		at, _ := a.traceOOM(t)
		if free := satAdd(*at.DeviceFreeBytes, at.ReservedBytes); free >= o.ReservedBytes {
			free -= o.ReservedBytes
			o.DeviceFreeBytes = &free
		} else {
			o.DeviceFreeBytes = ptrTo(0)
		}
		o.DeviceFreeSource = FreeFromOOM
	}
	return o, segs
}

// traceOOM explains the oom event found by the backward pass.
func (a *analysis) traceOOM(t *traceSummary) (*OOM, []cacheSeg) {
	e := t.tr.At(t.oom)
	free := e.DeviceFree()
	o := &OOM{Device: t.dev, RequestedBytes: e.Size, RoundedBytes: e.Size, DeviceFreeBytes: &free,
		DeviceFreeSource: FreeFromOOM, Pool: poolKind(needSmall(e.Size)), Stream: a.stream(e.Stream),
		TimeUS: e.TimeUS, Event: t.oom, Source: "trace"}
	frames := a.sites.frames(e.Stack)
	o.Site, o.Frames = SiteOf(frames)
	var segs []cacheSeg
	if changesAfter(t.tr, t.oom) {
		segs = a.replayedSegs(o.Device, t.tr, t.oom)
		o.Replayed = true
	} else {
		segs = a.snapshotSegs(o.Device)
	}
	fillFigures(o, segs)
	return o, segs
}

// changesAfter reports whether an event after index i changed the blocks
// or segments. A dump taken after the oom adds a snapshot marker (and
// perhaps a free_requested) that leaves the state as it was at the oom;
// then the snapshot is that state and nothing needs undoing.
func changesAfter(tr *snapshot.Trace, i int) bool {
	for j := tr.Len() - 1; j > i; j-- {
		switch tr.At(j).Action {
		case snapshot.ActionAlloc, snapshot.ActionFreeCompleted, snapshot.ActionSegmentAlloc,
			snapshot.ActionSegmentFree, snapshot.ActionSegmentMap, snapshot.ActionSegmentUnmap:
			return true
		}
	}
	return false
}

// servesRequest reports whether a segment's free memory could serve the
// request: the needed half of the default pool, on the request's stream.
func servesRequest(o *OOM, small bool, pool snapshot.PoolID, stream uint64) bool {
	return small == needSmall(o.RoundedBytes) && !pool.Private() && stream == o.Stream
}

// span is a reserved address range while the trace is undone.
type span struct {
	addr, size uint64
	stream     uint64
	small      bool
	pool       snapshot.PoolID
	expandable bool
}

// extent is an active block while the trace is undone.
type extent struct{ addr, size uint64 }

// round512 is the block size the allocator gives a request.
func round512(n uint64) uint64 {
	if n < minBlock {
		return minBlock
	}
	return (n + minBlock - 1) / minBlock * minBlock
}

// replayedSegs rebuilds the device's segments and active blocks as they
// were at event oom by undoing the later events, newest first, then reads
// the free stretches as the gaps between active blocks inside each segment.
func (a *analysis) replayedSegs(dev int, tr *snapshot.Trace, oom int) []cacheSeg {
	var spans []span
	active := map[uint64]uint64{}
	for _, sg := range a.segs[dev] {
		spans = append(spans, span{sg.Address, sg.TotalSize, sg.Stream, sg.Small, sg.Pool, sg.Expandable})
		for i := range sg.Blocks {
			if b := &sg.Blocks[i]; b.State.Active() {
				active[b.Address] = b.Size
			}
		}
	}
	for i := tr.Len() - 1; i > oom; i-- {
		e := tr.At(i)
		switch e.Action {
		case snapshot.ActionAlloc:
			delete(active, e.Addr)
		case snapshot.ActionFreeCompleted:
			active[e.Addr] = round512(e.Size)
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			spans = cut(spans, e.Addr, e.Addr+e.Size)
		case snapshot.ActionSegmentFree:
			spans = append(spans, span{e.Addr, e.Size, a.stream(e.Stream), e.Size <= smallSegment, snapshot.PoolID{}, false})
		case snapshot.ActionSegmentUnmap:
			spans = append(spans, span{e.Addr, e.Size, a.stream(e.Stream), e.Size <= smallSegment, snapshot.PoolID{}, true})
		}
	}

	blocks := make([]extent, 0, len(active))
	for addr, size := range active {
		blocks = append(blocks, extent{addr, size})
	}
	slices.SortFunc(blocks, func(x, y extent) int { return cmpU64(x.addr, y.addr) })
	slices.SortFunc(spans, func(x, y span) int { return cmpU64(x.addr, y.addr) })
	out := make([]cacheSeg, 0, len(spans))
	for _, sp := range spans {
		c := cacheSeg{addr: sp.addr, size: sp.size, stream: sp.stream, small: sp.small, pool: sp.pool, expandable: sp.expandable}
		var free uint64
		gaps(blocks, sp.addr, sp.addr+sp.size, func(lo, n uint64) {
			c.free = append(c.free, extent{lo, n})
			free += n
		})
		c.allocated = sp.size - free
		c.live = c.allocated > 0
		out = append(out, c)
	}
	return out
}

func cmpU64(x, y uint64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// cut removes [lo, hi) from the spans: a segment_alloc or segment_map
// undone. A span only partly inside keeps its pieces outside (an
// expandable segment that had grown by this range).
func cut(spans []span, lo, hi uint64) []span {
	out := spans[:0:0]
	for _, sp := range spans {
		end := sp.addr + sp.size
		if end <= lo || sp.addr >= hi {
			out = append(out, sp)
			continue
		}
		if sp.addr < lo {
			left := sp
			left.size = lo - sp.addr
			out = append(out, left)
		}
		if end > hi {
			right := sp
			right.addr, right.size = hi, end-hi
			out = append(out, right)
		}
	}
	return out
}

// gaps calls fn with the start and size of each stretch of [lo, hi) that no block
// covers; blocks are sorted by address. Adjacent free space is one gap, as
// the allocator merges neighbouring free blocks.
func gaps(blocks []extent, lo, hi uint64, fn func(lo, n uint64)) {
	// The first block that could reach into the range: the last one that
	// starts at or before lo, since blocks do not overlap.
	j, _ := slices.BinarySearchFunc(blocks, lo, func(b extent, t uint64) int { return cmpU64(b.addr, t) })
	if j > 0 && (j == len(blocks) || blocks[j].addr > lo) {
		j--
	}
	cur := lo
	for ; j < len(blocks) && blocks[j].addr < hi; j++ {
		b := blocks[j]
		if b.addr+b.size <= cur {
			continue
		}
		if b.addr > cur {
			fn(cur, b.addr-cur)
		}
		cur = b.addr + b.size
	}
	if cur < hi {
		fn(cur, hi-cur)
	}
}
