// Package memory analyses a PyTorch CUDA memory snapshot: how much is
// reserved, allocated and free per device and pool, how fragmented the free
// memory is, why an out-of-memory error happened and what fixes it, which
// code holds the memory (now and at the peak of the trace), and what grew
// between two snapshots.
//
// Every figure is in bytes and follows PyTorch's own definitions (see
// docs/json-output.md, "gpudx mem"). The Report is the data model; text,
// HTML and pprof views are built from it elsewhere.
package memory

import "github.com/gpudx/gpudx/snapshot"

// Report is the analysis of one snapshot. Its JSON form is gpudx mem's
// --format json output.
type Report struct {
	Devices  []Device  `json:"devices"`
	OOM      *OOM      `json:"oom"`
	TopSites []Site    `json:"top_sites"`
	Peak     *Peak     `json:"peak"`
	Timeline *Timeline `json:"timeline"`
	// TraceMismatch lists the devices whose trace and segments disagree.
	TraceMismatch []TraceMismatch `json:"trace_mismatch,omitempty"`
	Info          Info            `json:"info"`
}

// Info says what the snapshot held.
type Info struct {
	Segments      int    `json:"segments"`
	Blocks        int    `json:"blocks"`
	TraceEvents   int    `json:"trace_events"`
	Stacks        int    `json:"stacks"`
	Format        string `json:"format"` // e.g. "dict, pickle protocol 4" or "segment list"
	AllocatorConf string `json:"allocator_conf"`
	// Expandable is the allocator_settings expandable_segments flag; nil
	// when the file has no settings.
	Expandable *bool `json:"expandable_segments"`
}

// Figures are the memory figures of a device or a pool.
type Figures struct {
	ReservedBytes  uint64 `json:"reserved_bytes"`  // Σ segment sizes
	AllocatedBytes uint64 `json:"allocated_bytes"` // Σ active_allocated block sizes
	ActiveBytes    uint64 `json:"active_bytes"`    // allocated + pending-free block sizes
	InactiveBytes  uint64 `json:"inactive_bytes"`  // Σ inactive block sizes (free inside reserved)
	// RequestedBytes is Σ requested_size over active blocks; ActiveBytes -
	// RequestedBytes is the rounding overhead.
	RequestedBytes uint64 `json:"requested_bytes"`
	RoundingBytes  uint64 `json:"rounding_bytes"`
	// ReleasableBytes is free memory in segments with no active block
	// (empty_cache() would return it); StrandedBytes is free memory in
	// segments that also hold active blocks.
	ReleasableBytes       uint64  `json:"releasable_bytes"`
	StrandedBytes         uint64  `json:"stranded_bytes"`
	LargestFreeBlockBytes uint64  `json:"largest_free_block_bytes"`
	Fragmentation         float64 `json:"fragmentation"` // 1 - largest free / total free; 0 when nothing is free
	// TypicalRequestBytes is the median size of active_allocated blocks;
	// SmallFreeBlocks counts inactive blocks smaller than it.
	TypicalRequestBytes uint64     `json:"typical_request_bytes"`
	SmallFreeBlocks     int        `json:"small_free_blocks"`
	Segments            int        `json:"segments"`
	Blocks              int        `json:"blocks"`
	SegmentStates       SegStates  `json:"segment_states"`
	BlockStates         BlockCount `json:"block_states"`
	ExpandableSegments  int        `json:"expandable_segments"`
	ExpandableBytes     uint64     `json:"expandable_bytes"`
}

// SegStates counts segments by what their blocks hold.
type SegStates struct {
	Full  int `json:"full"`  // every block active
	Mixed int `json:"mixed"` // active and free blocks
	Free  int `json:"free"`  // every block free
}

// BlockCount counts blocks and bytes by state.
type BlockCount struct {
	ActiveAllocated   CountBytes `json:"active_allocated"`
	ActivePendingFree CountBytes `json:"active_pending_free"`
	Inactive          CountBytes `json:"inactive"`
}

// CountBytes is a count with its bytes.
type CountBytes struct {
	Count int    `json:"count"`
	Bytes uint64 `json:"bytes"`
}

// Device is one device's figures and its pools.
type Device struct {
	Device int `json:"device"`
	Figures
	Pools []Pool `json:"pools"`
}

// Pool is the figures of one pool of a device: the default pool's "large"
// and "small" halves, and each private pool's ("private 1,0 large").
type Pool struct {
	Pool   string          `json:"pool"`
	Kind   string          `json:"kind"` // "large" or "small"
	PoolID snapshot.PoolID `json:"pool_id"`
	Figures
}

// Frame is one frame of a stack, innermost first.
type Frame struct {
	Name     string `json:"name"`
	Filename string `json:"filename"`
	Line     int64  `json:"line"` // 0 when unknown
}

// Site is memory grouped by allocation site: the innermost frame in user
// code, skipping PyTorch's own frames and interpreter internals.
type Site struct {
	Site   string  `json:"site"`
	Bytes  uint64  `json:"bytes"`
	Count  int     `json:"count"`
	Frames []Frame `json:"frames"` // the stack of the group's largest block
}

// OOM explains an out-of-memory event (the trace's last oom event, or a
// request the user asked about).
type OOM struct {
	Device                int     `json:"device"`
	RequestedBytes        uint64  `json:"requested_bytes"`
	DeviceFreeBytes       *uint64 `json:"device_free_bytes"` // null for a --request question
	LargestFreeBlockBytes uint64  `json:"largest_free_block_bytes"`
	// CacheFreeBytes is free memory in reserved segments of the pool and
	// stream the request needed.
	CacheFreeBytes uint64 `json:"cache_free_bytes"`
	ReservedBytes  uint64 `json:"reserved_bytes"`
	AllocatedBytes uint64 `json:"allocated_bytes"`
	// OutsideBytes is capacity - reserved - device free, when the capacity
	// is known: memory held outside PyTorch's allocator.
	OutsideBytes  *uint64 `json:"outside_bytes,omitempty"`
	CapacityBytes *uint64 `json:"capacity_bytes,omitempty"`
	Pool          string  `json:"pool"`
	Stream        uint64  `json:"stream"`
	// RoundedBytes is the request as the allocator rounds it (round_size);
	// an oom event records it already rounded.
	RoundedBytes uint64 `json:"rounded_bytes"`
	// DeviceFreeSource says where DeviceFreeBytes comes from: "oom_event"
	// (measured by PyTorch at an oom, moved by what was reserved or
	// released since for a --request), "capacity" (--capacity minus
	// reserved: memory held outside PyTorch is not known and counted as
	// none), or "" when the device's free memory is not known.
	DeviceFreeSource string `json:"device_free_source"`
	// ReleasableBytes is what releasing every entirely free cached segment
	// gives back (PyTorch does this before it raises an OOM);
	// StrandedBytes is free memory in segments that also hold live blocks,
	// which no release gives back.
	ReleasableBytes uint64 `json:"releasable_bytes"`
	StrandedBytes   uint64 `json:"stranded_bytes"`
	// Path is the allocator's steps for the request, up to the first that
	// succeeds; for a trace oom, the steps that failed.
	Path []Step `json:"path"`
	// Verdict is "fragmentation", "outside_allocator", "exceeds_available",
	// "live_tensors", "unknown", or for a --request question "fits" (a
	// cached block serves it), "new_segment", "fits_after_release" or
	// "device_free_unknown".
	Verdict  string  `json:"verdict"`
	Reason   string  `json:"reason"`
	ReasonZH string  `json:"reason_zh"`
	Fix      string  `json:"fix"`
	FixZH    string  `json:"fix_zh"`
	Frames   []Frame `json:"frames"`
	Site     string  `json:"site"`
	TimeUS   int64   `json:"time_us"`
	Event    int     `json:"event"`  // index in the device's trace; -1 for --request
	Source   string  `json:"source"` // "trace" or "request"
	// ReplayedAt is true when the figures were rebuilt for the moment of the
	// event by undoing the events after it.
	Replayed bool `json:"replayed"`
}

// Peak is the highest memory in use over the trace window.
type Peak struct {
	Device   int    `json:"device"`
	Bytes    uint64 `json:"bytes"`
	TimeUS   int64  `json:"time_us"`
	Event    int    `json:"event"` // index of the event that reached it
	TopSites []Site `json:"top_sites"`
}

// Timeline is memory in use over the trace window, per device, reduced to at
// most a fixed number of points (each the maximum of its span).
type Timeline struct {
	Devices []DeviceTimeline `json:"devices"`
}

// DeviceTimeline is one device's series.
type DeviceTimeline struct {
	Device int     `json:"device"`
	Points []Point `json:"points"`
}

// Point is memory in use after an event.
type Point struct {
	Event  int    `json:"event"`
	TimeUS int64  `json:"time_us"`
	Bytes  uint64 `json:"bytes"`
}

// Diff is the growth between two snapshots, by site.
type Diff struct {
	Before DiffTotals `json:"before"`
	After  DiffTotals `json:"after"`
	Sites  []SiteDiff `json:"sites"` // largest growth first
}

// DiffTotals are a snapshot's totals over all devices.
type DiffTotals struct {
	ReservedBytes  uint64 `json:"reserved_bytes"`
	AllocatedBytes uint64 `json:"allocated_bytes"`
	Blocks         int    `json:"blocks"`
}

// SiteDiff is one site's change.
type SiteDiff struct {
	Site        string  `json:"site"`
	BytesBefore uint64  `json:"bytes_before"`
	BytesAfter  uint64  `json:"bytes_after"`
	DeltaBytes  int64   `json:"delta_bytes"`
	CountBefore int     `json:"count_before"`
	CountAfter  int     `json:"count_after"`
	Frames      []Frame `json:"frames"`
}
