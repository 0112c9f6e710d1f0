// Package snapshot reads the memory snapshots that PyTorch's CUDA caching
// allocator writes (torch.cuda.memory._dump_snapshot, or a pickled
// torch.cuda.memory_snapshot() list) into typed Go values.
//
// The decoder is a pickle machine that knows only plain data: dicts, lists,
// tuples, strings, bytes, integers of any size, floats, booleans, None and
// memo references. Opcodes that would import a name, call a function or build
// an object are refused, so reading an untrusted file cannot run code. It
// decodes the snapshot's dicts straight into the structs below as it goes,
// without a tree of interface values in between, so a file of gigabytes
// needs memory well below its own size.
//
// Layouts from PyTorch 1.13 (blocks with a "history" list) to the 2026 layout
// are read; features are detected from the keys present, never from a guessed
// version. Gzip-compressed files are read transparently.
package snapshot

import "fmt"

// Snapshot is one decoded memory snapshot.
type Snapshot struct {
	// Segments are every device's segments in file order (PyTorch writes
	// each device's segments sorted by address).
	Segments []Segment
	// Traces holds the allocator's event ring buffer, indexed by device
	// ordinal, oldest event first. Empty when the file has no history
	// (memory_snapshot() lists, or recording was off).
	Traces []Trace
	// Settings is the allocator configuration at snapshot time; nil before
	// PyTorch ≈2.3.
	Settings *Settings
	// Annotations are record_function START/END markers (PyTorch ≈2.5+).
	Annotations []Annotation
	// Stacks holds every distinct frame list. StackID indexes it; Stacks[0]
	// is the empty stack (nothing recorded).
	Stacks [][]Frame
	// Meta is per-event text that is not the default ("N/A" compile context,
	// empty user metadata), keyed by device and event index.
	Meta map[EventRef]EventMeta
	// Streams holds the raw cudaStream_t values that TraceEntry.Stream
	// indexes; Streams[0] is 0, the default stream.
	Streams []uint64
	// Layout says which format features the file had.
	Layout Layout
	// UnknownActions counts trace actions this reader does not know, by
	// name; they are kept in Traces as ActionOther.
	UnknownActions map[string]int
}

// Layout records the format features present in a file.
type Layout struct {
	Protocol     int  // pickle protocol (PROTO opcode; 0 or 1 when absent)
	Gzip         bool // the file was gzip-compressed
	SegmentsOnly bool // top level was a list of segments (memory_snapshot())
	History      bool // blocks carry the 1.13/2.0 "history" list instead of frames
	BlockAddress bool // blocks carry "address" (2.1+); otherwise it is computed
	TimeUS       bool // trace entries carry time_us (≈2.2+)
	Settings     bool // allocator_settings present (≈2.3+)
	Annotations  bool // external_annotations present (≈2.5+)
	CompileCtx   bool // trace entries carry compile_context (≈2.8+)
	UserMetadata bool // trace entries carry user_metadata (≈2.10+)
}

// StackID indexes Snapshot.Stacks. Zero is the empty stack.
type StackID uint32

// Frame is one entry of a recorded stack, innermost first.
type Frame struct {
	Name     string
	Filename string
	// Line is 0 when unknown (C++ frames, and the 2^64-1 that CPython uses
	// for "no line").
	Line int64
}

// BlockState is a block's allocator state.
type BlockState uint8

const (
	// Inactive blocks are free and reusable.
	Inactive BlockState = iota
	// ActiveAllocated blocks back a live tensor.
	ActiveAllocated
	// ActivePendingFree blocks were freed by their user but wait on events
	// from other streams before they can be reused.
	ActivePendingFree
)

var stateNames = [...]string{"inactive", "active_allocated", "active_pending_free"}

func (s BlockState) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("BlockState(%d)", s)
}

// Active reports whether the block holds memory that cannot be reused yet.
func (s BlockState) Active() bool { return s != Inactive }

// PoolID names a memory pool: (0, 0) is the default pool, anything else a
// private pool (a CUDA graph pool or a torch.cuda.MemPool).
type PoolID [2]int64

// Private reports whether the pool is not the default pool.
func (p PoolID) Private() bool { return p != PoolID{} }

// Segment is one cudaMalloc, or one mapped range of an expandable segment.
// Its blocks tile it exactly, in address order.
type Segment struct {
	Device        int
	Address       uint64
	TotalSize     uint64
	AllocatedSize uint64 // as written in the file
	ActiveSize    uint64 // as written in the file
	RequestedSize uint64 // as written in the file (absent before 2.0: 0)
	Stream        uint64 // cudaStream_t as an integer; 0 is the default stream
	Small         bool   // segment_type "small" (requests up to 1 MiB)
	Pool          PoolID
	Expandable    bool
	Stack         StackID // where the segment was created
	Blocks        []Block
}

// Block is a piece of a segment.
type Block struct {
	Address uint64 // computed from the segment and the sizes before it when absent
	Size    uint64 // rounded size (a multiple of 512)
	// RequestedSize is what the caller asked for. Only meaningful for active
	// blocks: on inactive ones it is a stale leftover.
	RequestedSize uint64
	State         BlockState
	Stack         StackID
}

// Action is what a trace event records.
type Action uint8

// The allocator's trace actions.
const (
	ActionOther         Action = iota // an action this reader does not know
	ActionAlloc                       // a block handed to a caller; Size is the requested size
	ActionFreeRequested               // the caller released it
	ActionFreeCompleted               // the block is back in the pool
	ActionSegmentAlloc                // cudaMalloc of a new segment
	ActionSegmentFree                 // cudaFree of a segment
	ActionSegmentMap                  // an expandable segment grew
	ActionSegmentUnmap                // an expandable segment shrank
	ActionSnapshot                    // _snapshot() was called; Size is the active bytes then
	ActionOOM                         // the allocator gave up; Addr holds device_free
	ActionAnnotate                    // a block was annotated (2026)
)

var actionNames = [...]string{"other", "alloc", "free_requested", "free_completed",
	"segment_alloc", "segment_free", "segment_map", "segment_unmap", "snapshot", "oom", "annotate"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", a)
}

// ParseAction returns the action named s, or ActionOther.
func ParseAction(s string) Action {
	for i, n := range actionNames {
		if n == s && i > 0 {
			return Action(i)
		}
	}
	return ActionOther
}

// TraceEntry is one allocator event. It is kept small (32 bytes) because a
// trace can hold tens of millions of them.
type TraceEntry struct {
	// Addr is the block or segment address. For ActionOOM it is the
	// device_free figure (bytes free according to cudaMemGetInfo).
	Addr   uint64
	Size   uint64
	TimeUS int64 // microseconds since the Unix epoch; 0 when not recorded
	Stack  StackID
	// Stream indexes Snapshot.Streams; it is an index, not the raw handle.
	Stream uint16
	Action Action
	// HasStack is false when the event carried no "frames" key at all.
	HasStack bool
}

// DeviceFree is the bytes free on the device at an ActionOOM event.
func (e *TraceEntry) DeviceFree() uint64 { return e.Addr }

// EventRef names one trace event.
type EventRef struct {
	Device int32
	Index  int32
}

// EventMeta is an event's text fields when they are not the defaults.
type EventMeta struct {
	CompileContext string
	UserMetadata   string
}

// Annotation is a record_function marker.
type Annotation struct {
	Stage  string // "START" or "END"
	Name   string
	Device int
	TimeUS int64
}

// Settings is the allocator_settings dict.
type Settings struct {
	AllocConf            string // PYTORCH_CUDA_ALLOC_CONF as parsed ("" when unset)
	MaxSplitSize         int64  // bytes; -1 means unlimited
	GCThreshold          float64
	ExpandableSegments   bool
	ReleaseLockOnMalloc  bool
	RoundupPower2Divs    map[string]int64
	PinnedRegisterThread int64
}
