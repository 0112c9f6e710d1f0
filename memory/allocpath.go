package memory

import (
	"math/bits"
	"slices"
	"strconv"

	"github.com/gpudx/gpudx/snapshot"
)

// The caching allocator's constants and steps, as in PyTorch's
// c10/cuda/CUDACachingAllocator.cpp (read at commit 001074d2, 2025; the
// names below are PyTorch's own).
const (
	// kLargeBuffer: requests between 1 and 10 MiB get a 20 MiB segment;
	// also the default max_non_split_rounding_size (an oversize cached
	// block serves a request only if it is less than this much larger) and
	// an expandable segment's large page.
	largeBuffer = 20 << 20
	// kMinLargeAlloc: from here on a segment is the request rounded to 2 MiB.
	minLargeAlloc = 10 << 20
	// kRoundLarge.
	roundLarge = 2 << 20
)

// Steps of the allocator's path, in PyTorch's order (DeviceCachingAllocator::malloc).
const (
	StepCachedBlock     = "cached_block"     // get_free_block: best fit in the pool and stream
	StepGC              = "gc"               // garbage_collect_cached_blocks (threshold and a memory fraction)
	StepNewSegment      = "new_segment"      // alloc_block: cudaMalloc, or map pages of an expandable segment
	StepReleaseOversize = "release_oversize" // release_available_cached_blocks (only with max_split_size)
	StepReleaseCached   = "release_cached"   // release_cached_blocks, then alloc_block again
)

// Outcomes of a step.
const (
	OutcomeSucceeds = "succeeds"
	OutcomeFails    = "fails"
	OutcomeUnknown  = "unknown" // the device's free memory is not known
	OutcomeSkipped  = "skipped" // the setting that runs the step is off, or it cannot change the answer
)

// Step is one step of the allocator's path for a request: what it needs,
// what it had, and whether it would succeed.
type Step struct {
	Step    string `json:"step"`
	Outcome string `json:"outcome"`
	// NeedBytes is what the step needs: the rounded request for a cached
	// block, the new segment's size for the device.
	NeedBytes uint64 `json:"need_bytes"`
	// HaveBytes is what it found: the best-fitting free block, the
	// device's free memory (after the release, for release_cached); nil
	// when not known.
	HaveBytes *uint64 `json:"have_bytes"`
	Text      string  `json:"text"`
	TextZH    string  `json:"text_zh"`
}

// cacheSeg is a segment of the device as a request sees it: its free
// stretches, and whether it holds live or pending-free blocks.
type cacheSeg struct {
	addr, size uint64
	stream     uint64
	small      bool
	pool       snapshot.PoolID
	expandable bool
	free       []extent // free stretches, in address order
	live       bool     // holds an active_allocated block
	allocated  uint64   // Σ sizes of active blocks (allocated or pending free)
	pending    bool     // holds an active_pending_free block
}

// roundSize is round_size(): at least 512 B, a multiple of 512, or the next
// power-of-two division when roundup_power2_divisions sets one for the
// size's interval (intervals from 1 MiB to 64 GiB, keyed in the snapshot by
// their lower bound in MiB: "1", "2", … "32768").
func roundSize(n uint64, st *snapshot.Settings) uint64 {
	if n < minBlock {
		return minBlock
	}
	if div := divisions(n, st); div > 1 && n > minBlock*div {
		return power2Division(n, div)
	}
	return (n + minBlock - 1) / minBlock * minBlock
}

func divisions(n uint64, st *snapshot.Settings) uint64 {
	if st == nil || len(st.RoundupPower2Divs) == 0 {
		return 0
	}
	idx := bits.Len64(n) - 1 - 20 // log2(size) - log2(1 MiB)
	idx = max(0, min(idx, 15))
	d := st.RoundupPower2Divs[strconv.Itoa(1<<idx)]
	if d < 0 {
		return 0
	}
	return uint64(d)
}

// power2Division is roundup_power2_next_division().
func power2Division(n, div uint64) uint64 {
	if n&(n-1) == 0 {
		return n
	}
	floor := uint64(1) << (bits.Len64(n) - 1)
	step := floor >> (bits.Len64(div) - 1)
	if step == 0 {
		return floor << 1
	}
	lo := n &^ (step - 1)
	if lo == n {
		return n
	}
	return lo + step
}

// allocationSize is get_allocation_size(): the segment cudaMalloc is asked
// for.
func allocationSize(rounded uint64) uint64 {
	switch {
	case rounded <= smallRequest:
		return smallSegment
	case rounded < minLargeAlloc:
		return largeBuffer
	}
	return (rounded + roundLarge - 1) / roundLarge * roundLarge
}

// maxSplit is max_split_size in bytes; 0 when unlimited (the default).
func maxSplit(st *snapshot.Settings) uint64 {
	if st == nil || st.MaxSplitSize <= 0 {
		return 0
	}
	return uint64(st.MaxSplitSize)
}

// bestFit is get_free_block(): the smallest free block of the pool and
// stream at least the rounded size, refused when it is oversize for a
// normal request, or oversize and 20 MiB or more larger than an oversize
// request. Returns the block's size, 0 when none serves.
func bestFit(segs []cacheSeg, o *OOM, st *snapshot.Settings) uint64 {
	var best uint64
	for i := range segs {
		sg := &segs[i]
		if !servesRequest(o, sg.small, sg.pool, sg.stream) {
			continue
		}
		for _, f := range sg.free {
			if f.size >= o.RoundedBytes && (best == 0 || f.size < best) {
				best = f.size
			}
		}
	}
	if ms := maxSplit(st); ms > 0 && best > 0 {
		if o.RoundedBytes < ms && best >= ms {
			return 0
		}
		if o.RoundedBytes >= ms && best >= o.RoundedBytes+largeBuffer {
			return 0
		}
	}
	return best
}

// pageOf is an expandable segment's page: 2 MiB in the small pool, 20 MiB
// in the large one.
func pageOf(small bool) uint64 {
	if small {
		return smallSegment
	}
	return largeBuffer
}

// wholePages is the bytes of whole pages inside a free stretch of an
// expandable segment (its mapped range starts on a page boundary): what
// unmapping gives back.
func wholePages(f extent, base, page uint64) uint64 {
	lo := (f.addr - base + page - 1) / page * page
	hi := (f.addr + f.size - base) / page * page
	if hi <= lo {
		return 0
	}
	return hi - lo
}

// releasable is what release_cached_blocks gives back to the device: after
// waiting for pending frees, every default-pool segment with no live
// block (release_blocks frees only unsplit blocks, i.e. whole segments),
// of any stream, and the whole free pages of expandable segments
// (unmap_block). Private pools are left out: only pools whose CUDA graphs
// were destroyed are released, which a snapshot does not say.
func releasable(segs []cacheSeg) uint64 {
	var n uint64
	for i := range segs {
		sg := &segs[i]
		if sg.pool.Private() {
			continue
		}
		if sg.expandable {
			for _, f := range sg.free {
				n += wholePages(f, sg.addr, pageOf(sg.small))
			}
			continue
		}
		if !sg.live {
			n += sg.size
		}
	}
	return n
}

// stranded is free memory in default-pool segments that also hold live
// blocks: no release can give it back.
func stranded(segs []cacheSeg) uint64 {
	var n uint64
	for i := range segs {
		sg := &segs[i]
		if sg.pool.Private() || !sg.live || sg.expandable {
			continue
		}
		for _, f := range sg.free {
			n += f.size
		}
	}
	return n
}

// segmentNeed is what a new segment needs from the device: with
// expandable segments, the pages to map beyond the free tail of the
// pool's segment on the stream (try_allocate_expandable_block); otherwise
// the cudaMalloc size.
func segmentNeed(segs []cacheSeg, o *OOM, st *snapshot.Settings) uint64 {
	if st == nil || !st.ExpandableSegments {
		return allocationSize(o.RoundedBytes)
	}
	small := needSmall(o.RoundedBytes)
	page := pageOf(small)
	var tail uint64
	for i := range segs {
		sg := &segs[i]
		if !sg.expandable || !servesRequest(o, sg.small, sg.pool, sg.stream) || len(sg.free) == 0 {
			continue
		}
		if last := sg.free[len(sg.free)-1]; last.addr+last.size == sg.addr+sg.size {
			tail = max(tail, last.size)
		}
	}
	need := o.RoundedBytes - min(tail, o.RoundedBytes)
	return (need + page - 1) / page * page
}

// fillFigures sets the OOM's cache figures from the device's segments.
func fillFigures(o *OOM, segs []cacheSeg) {
	for i := range segs {
		sg := &segs[i]
		o.ReservedBytes += sg.size
		o.AllocatedBytes += sg.allocated
		if !servesRequest(o, sg.small, sg.pool, sg.stream) {
			continue
		}
		for _, f := range sg.free {
			o.CacheFreeBytes += f.size
			o.LargestFreeBlockBytes = max(o.LargestFreeBlockBytes, f.size)
		}
	}
	o.ReleasableBytes = releasable(segs)
	o.StrandedBytes = stranded(segs)
}

// snapshotSegs reads the device's segments as they are in the snapshot.
func (a *analysis) snapshotSegs(dev int) []cacheSeg {
	out := make([]cacheSeg, 0, len(a.segs[dev]))
	for _, sg := range a.segs[dev] {
		c := cacheSeg{addr: sg.Address, size: sg.TotalSize, stream: sg.Stream, small: sg.Small,
			pool: sg.Pool, expandable: sg.Expandable}
		for i := range sg.Blocks {
			b := &sg.Blocks[i]
			switch b.State {
			case snapshot.Inactive:
				c.free = append(c.free, extent{b.Address, b.Size})
			case snapshot.ActivePendingFree:
				c.pending = true
				c.allocated += b.Size
			default:
				c.live = true
				c.allocated += b.Size
			}
		}
		out = append(out, c)
	}
	return out
}

// path walks the allocator's steps for a request (PyTorch's malloc:
// get_free_block; garbage_collect_cached_blocks when a fraction and a
// threshold are set; alloc_block; release_available_cached_blocks and
// alloc_block when max_split_size is set; release_cached_blocks and
// alloc_block) and stops at the first that succeeds. free is the device's
// free memory before the first step; nil when not known.
func path(o *OOM, segs []cacheSeg, st *snapshot.Settings, free *uint64) []Step {
	var steps []Step
	add := func(s Step) bool {
		steps = append(steps, s)
		return s.Outcome == OutcomeSucceeds
	}
	fit := bestFit(segs, o, st)
	cached := Step{Step: StepCachedBlock, NeedBytes: o.RoundedBytes, HaveBytes: ptrTo(fit), Outcome: OutcomeFails}
	if fit > 0 {
		cached.Outcome = OutcomeSucceeds
	}
	if add(cached) {
		return steps
	}
	if st != nil && st.GCThreshold > 0 {
		// GC frees only unsplit (entirely free) large blocks, a subset of
		// what release_cached frees below, and only under a memory
		// fraction, which the snapshot does not record.
		add(Step{Step: StepGC, Outcome: OutcomeSkipped})
	}
	need := segmentNeed(segs, o, st)
	grow := Step{Step: StepNewSegment, NeedBytes: need, HaveBytes: free, Outcome: OutcomeUnknown}
	if free != nil {
		grow.Outcome = outcome(*free >= need)
	}
	if add(grow) {
		return steps
	}
	if ms := maxSplit(st); ms > 0 {
		// Oversize blocks are whole segments; release_cached frees them
		// too, so this step only matters for its order.
		var over uint64
		for i := range segs {
			sg := &segs[i]
			if servesRequest(o, sg.small, sg.pool, sg.stream) && !sg.live && !sg.pending && !sg.expandable && sg.size >= ms {
				over += sg.size
			}
		}
		s := Step{Step: StepReleaseOversize, NeedBytes: need, Outcome: OutcomeSkipped}
		if over > 0 {
			s.HaveBytes = ptrTo(over)
			s.Outcome = after(free, over, need)
			if free != nil {
				s.HaveBytes = ptrTo(*free + over)
			}
		}
		if add(s) {
			return steps
		}
	}
	rel := o.ReleasableBytes
	s := Step{Step: StepReleaseCached, NeedBytes: need, Outcome: after(free, rel, need)}
	if free != nil {
		s.HaveBytes = ptrTo(satAdd(*free, rel))
	} else if rel >= need {
		s.HaveBytes = ptrTo(rel)
	}
	add(s)
	return steps
}

// after is the outcome of a retry once rel bytes went back to the device.
func after(free *uint64, rel, need uint64) string {
	switch {
	case rel >= need:
		return OutcomeSucceeds // whatever the device had free before
	case free == nil:
		return OutcomeUnknown
	}
	return outcome(satAdd(*free, rel) >= need)
}

func outcome(ok bool) string {
	if ok {
		return OutcomeSucceeds
	}
	return OutcomeFails
}

func ptrTo(n uint64) *uint64 { return &n }

// pathVerdict is a request's verdict from its path: the step that serves
// it, or that the device's free memory is not known, or "" when every step
// fails (the failure is then classified like a trace oom).
func pathVerdict(steps []Step) string {
	for _, s := range steps {
		switch s.Outcome {
		case OutcomeSucceeds:
			switch s.Step {
			case StepCachedBlock:
				return VerdictFits
			case StepNewSegment:
				return VerdictNewSegment
			}
			return VerdictAfterRelease
		case OutcomeUnknown:
			if slices.ContainsFunc(steps, func(t Step) bool { return t.Outcome == OutcomeSucceeds }) {
				// A later step succeeds whatever the device had free.
				return VerdictAfterRelease
			}
			return VerdictDeviceFreeUnknown
		}
	}
	return ""
}

// Where the device's free memory comes from (OOM.DeviceFreeSource).
const (
	FreeFromOOM      = "oom_event"
	FreeFromCapacity = "capacity"
)

// tracePath is the path an oom event's request took: every step failed.
// PyTorch measures the device's free memory (cudaMemGetInfo) after it has
// released the entirely free cached segments, so that figure is what the
// last retry had.
func tracePath(o *OOM, segs []cacheSeg, st *snapshot.Settings) []Step {
	need := segmentNeed(segs, o, st)
	fit := bestFit(segs, o, st)
	steps := []Step{{Step: StepCachedBlock, NeedBytes: o.RoundedBytes, HaveBytes: ptrTo(fit), Outcome: outcome(fit > 0)}}
	steps = append(steps, Step{Step: StepReleaseCached, NeedBytes: need, HaveBytes: o.DeviceFreeBytes,
		Outcome: outcome(derefOr(o.DeviceFreeBytes) >= need)})
	return steps
}
