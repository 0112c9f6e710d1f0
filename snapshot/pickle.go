package snapshot

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/big"
	"unsafe"
)

// Limits that keep a hostile file from exhausting memory. Real snapshots
// stay far below them: their longest strings are C++ symbol names.
const (
	maxString = 256 << 20 // one string or bytes value
	maxLong   = 1 << 10   // bytes of one LONG1/LONG4 integer
	maxStream = 1 << 16   // distinct streams (TraceEntry.Stream is 16 bits)
	// stackFloor and stackRatio bound the values waiting on the stack: up to
	// stackFloor freely, beyond it one value per stackRatio bytes read, so
	// the stack (16 bytes a value) never outgrows the input. Python's pickler
	// appends in batches of 1000; PyTorch's C++ pickler pushes a whole list
	// before one APPENDS, but each of its trace entries takes ~50 bytes.
	stackFloor = 1 << 16
	stackRatio = 16
	maxMarks   = 1 << 16 // nesting depth; real snapshots nest fewer than 10 deep
	// maxSparse bounds memo slots stored far from the slots in use.
	maxSparse = 1 << 20
	// memoAhead is how far past the slots in use a memo index may land and
	// still go to the dense table; picklers number slots 0, 1, 2, ...
	memoAhead = 1 << memoBits
	// maxWide bounds memo slots whose value does not pack into 32 bits
	// (floats, large ints): Python's pickler never memoises those.
	maxWide = 1 << 16
	// objFloor and objRatio bound plain containers (lists, dicts, tuples
	// that are not frames, blocks, segments or events): beyond objFloor, one
	// per objRatio bytes read.
	objFloor = 1 << 16
	objRatio = 8
	// largeString and maxLarge bound the strings that are not names: a
	// snapshot's strings are symbols, paths and keys, a few KiB at most, so
	// all the strings over largeString together may hold what one string of
	// the per-string limit may.
	largeString = 1 << 20
	maxLarge    = maxString
)

// The memory budget: what decoding holds (values on the stack and in lists,
// dicts and tuples, memo slots, strings, the snapshot's own tables) may grow
// to memFloor plus memRatio bytes per byte read, and never past
// Options.MaxMemory. A long snapshot holds about half its size (0.54 for
// bench/mem's); small ones of frame dicts and segments up to 3.8 times
// theirs. The hostile shapes this stops (a list appended through a memo
// reference, lists nested through the memo) hold 7 to 16 bytes per byte.
const (
	memFloor = 32 << 20
	memRatio = 4
	// DefaultMaxMemory is the cap when Options.MaxMemory is 0: a 4 GiB
	// snapshot, the server's default upload limit, decodes well within it.
	DefaultMaxMemory = 4 << 30
)

// Options bound what Read may hold while it decodes.
type Options struct {
	// MaxMemory caps the bytes that decoding may hold, whatever the input's
	// size: 0 means DefaultMaxMemory. Below it, the budget is 32 MiB plus
	// 4 bytes per byte read so far (decompressed), so a small file cannot
	// claim much memory.
	MaxMemory int64
}

// Error is a decoding failure at a byte offset of the (decompressed) file.
type Error struct {
	Offset int64  // offset of the opcode that failed
	Op     byte   // the opcode, 0 when the failure is not tied to one
	Msg    string // what went wrong
}

func (e *Error) Error() string {
	if e.Op != 0 {
		return fmt.Sprintf("snapshot: byte %d: %s (opcode %s)", e.Offset, e.Msg, opName(e.Op))
	}
	return fmt.Sprintf("snapshot: byte %d: %s", e.Offset, e.Msg)
}

// kind is the type of a value on the pickle machine's stack. Zero is unused
// so that an unset memo slot reads as zero.
type kind uint8

const (
	kNone kind = iota + 1
	kBool
	kInt       // n holds an int64
	kUint      // n holds a uint64 above MaxInt64
	kBig       // n indexes d.bigs
	kFloat     // n holds float64 bits
	kStr       // n indexes d.strs
	kBytes     // n indexes d.strs
	kList      // n indexes d.lists
	kEmptyList // a list nothing was appended to yet; n is its memo slot+1 or 0
	kDict      // n indexes d.dicts (a dict of no snapshot type)
	kFreshDict // an empty dict whose type is not known yet; n is its memo slot+1 or 0
	kTuple     // n indexes d.tuples
	kFrame     // n indexes d.frames
	kTrace     // n indexes the trace arena
	kBlock     // n indexes d.blocks
	kSegment   // n indexes d.segs
	// kStack is a frames list turned into a stack as it was filled: the low
	// 32 bits of n are the StackID; on the stack (never in the memo) the
	// high bits hold the list's memo slot+1, so a later append can update it.
	kStack
)

var kindNames = [...]string{kNone: "None", kBool: "a bool", kInt: "an int", kUint: "an int", kBig: "an int",
	kFloat: "a float", kStr: "a str", kBytes: "bytes", kList: "a list", kEmptyList: "a list", kDict: "a dict",
	kFreshDict: "a dict", kTuple: "a tuple", kFrame: "a frame dict", kTrace: "a trace entry dict",
	kBlock: "a block dict", kSegment: "a segment dict", kStack: "a list"}

func (k kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "?"
}

// value is one stack or memo value: 16 bytes, no pointers, so the stack and
// the memo cost the garbage collector nothing to scan.
type value struct {
	k kind
	n uint64
}

// glist is a list. A list of trace entries keeps only the range of the
// arena its entries occupy.
type glist struct {
	items    []value
	trStart  uint64
	trN      uint64
	stack    StackID // cached conversion of this list to a stack
	hasStack bool
}

type gdict struct {
	keys, vals []value
}

// Known strings: keys of the snapshot's dicts and the values that name
// actions, states and segment types.
const (
	sNone uint8 = iota
	sAction
	sAddr
	sSize
	sStream
	sFrames
	sTimeUS
	sCompileContext
	sUserMetadata
	sDeviceFree
	sDevice
	sAddress
	sTotalSize
	sAllocatedSize
	sActiveSize
	sRequestedSize
	sSegmentType
	sSegmentPoolID
	sIsExpandable
	sBlocks
	sState
	sHistory
	sFilename
	sLine
	sName
	sSegments
	sDeviceTraces
	sAllocatorSettings
	sExternalAnnotations
	sSmall
	sLarge
	sInactive
	sActiveAllocated
	sActivePendingFree
	sActiveAwaitingFree
	sNA
	sStage
)

var knownStrings = map[string]uint8{
	"action": sAction, "addr": sAddr, "size": sSize, "stream": sStream, "frames": sFrames,
	"time_us": sTimeUS, "compile_context": sCompileContext, "user_metadata": sUserMetadata,
	"device_free": sDeviceFree, "device": sDevice, "address": sAddress, "total_size": sTotalSize,
	"allocated_size": sAllocatedSize, "active_size": sActiveSize, "requested_size": sRequestedSize,
	"segment_type": sSegmentType, "segment_pool_id": sSegmentPoolID, "is_expandable": sIsExpandable,
	"blocks": sBlocks, "state": sState, "history": sHistory, "filename": sFilename, "line": sLine,
	"name": sName, "segments": sSegments, "device_traces": sDeviceTraces,
	"allocator_settings": sAllocatorSettings, "external_annotations": sExternalAnnotations,
	"small": sSmall, "large": sLarge, "inactive": sInactive, "active_allocated": sActiveAllocated,
	"active_pending_free": sActivePendingFree, "active_awaiting_free": sActiveAwaitingFree,
	"N/A": sNA, "stage": sStage,
}

// actionBase offsets the known-string ids of action names: id actionBase+a
// names Action a.
const actionBase = 100

func init() {
	for a := ActionAlloc; int(a) < len(actionNames); a++ {
		knownStrings[actionNames[a]] = actionBase + uint8(a)
	}
}

// internMax is the longest string that is looked up in the intern table.
// Snapshots repeat short strings (keys, "N/A") as fresh objects per event.
const internMax = 64

// decoder is the pickle machine.
type decoder struct {
	r    io.Reader
	buf  []byte
	pos  int   // next unread byte of buf
	end  int   // bytes of buf that hold data
	base int64 // file offset of buf[0]
	eof  bool
	rerr error
	op   int64 // offset of the current opcode

	stack  []value
	marks  []int
	memo   [][]uint32       // chunks of packed values
	memoN  uint64           // slots MEMOIZE has used
	wide   map[uint64]value // dense slots whose value does not pack
	sparse map[uint64]value // slots far beyond the dense range

	strs   []string
	strKey []uint8 // known-string id per strs index
	intern map[string]uint32
	lists  []glist
	dicts  []gdict
	tuples [][]value
	bigs   []*big.Int
	frames []Frame
	// frameCanon caches canonFrame+1 per frame dict; frameIDs and stackIDs
	// intern frames and stacks by content; stackKey is scratch.
	frameCanon []uint32
	frameIDs   map[Frame]uint32
	stackIDs   map[string]StackID
	stackKey   []byte
	blocks     []Block
	segs       []Segment
	traces     Trace // the arena: every device's entries, one after another
	metaArr    map[uint64]EventMeta
	stacks     [][]Frame
	streams    map[uint64]uint16
	out        *Snapshot

	// held is an estimate, in bytes, of what decoding holds, charged where
	// it allocates; the stack and the marks are added when it is checked.
	// maxMem is the cap; large is the bytes of strings over largeString.
	held   int64
	maxMem int64
	large  int64
}

func newDecoder(r io.Reader, opt Options) *decoder {
	maxMem := opt.MaxMemory
	if maxMem <= 0 {
		maxMem = DefaultMaxMemory
	}
	d := &decoder{
		r:        r,
		maxMem:   maxMem,
		buf:      make([]byte, 64<<10),
		intern:   make(map[string]uint32),
		streams:  map[uint64]uint16{0: 0},
		stacks:   [][]Frame{nil},
		tuples:   [][]value{nil},
		frameIDs: map[Frame]uint32{},
		stackIDs: map[string]StackID{},
		out: &Snapshot{
			Streams:        []uint64{0},
			UnknownActions: map[string]int{},
		},
	}
	return d
}

// fill makes at least n unread bytes available; false at end of input.
func (d *decoder) fill(n int) bool {
	for d.end-d.pos < n {
		if d.eof {
			return false
		}
		if d.pos > 0 {
			copy(d.buf, d.buf[d.pos:d.end])
			d.end -= d.pos
			d.base += int64(d.pos)
			d.pos = 0
		}
		if d.end == len(d.buf) {
			// Grow by doubling as data arrives, never to a length the
			// file only claims. Only opcodes longer than the buffer grow
			// it, and strings that long are read past it (readLarge).
			d.held += int64(len(d.buf))
			nb := make([]byte, 2*len(d.buf))
			copy(nb, d.buf[:d.end])
			d.buf = nb
		}
		m, err := d.r.Read(d.buf[d.end:])
		d.end += m
		if err != nil {
			d.eof = true
			if err != io.EOF {
				d.rerr = err
			}
		}
	}
	return true
}

func (d *decoder) fail(op byte, format string, a ...any) error {
	return &Error{Offset: d.op, Op: op, Msg: fmt.Sprintf(format, a...)}
}

func (d *decoder) truncated(op byte, want int) error {
	if d.rerr != nil {
		return &Error{Offset: d.op, Op: op, Msg: "read error: " + d.rerr.Error()}
	}
	return &Error{Offset: d.op, Op: op, Msg: fmt.Sprintf("file ends early: the opcode needs %d more bytes, %d left (truncated file?)", want, d.end-d.pos)}
}

// bytes returns the next n bytes; they stay valid until the next read.
func (d *decoder) bytes(op byte, n int) ([]byte, error) {
	if d.end-d.pos >= n { // the fast path, small enough to inline
		b := d.buf[d.pos : d.pos+n]
		d.pos += n
		return b, nil
	}
	return d.bytesSlow(op, n)
}

func (d *decoder) bytesSlow(op byte, n int) ([]byte, error) {
	if !d.fill(n) {
		return nil, d.truncated(op, n)
	}
	b := d.buf[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

func (d *decoder) push(v value) { d.stack = append(d.stack, v) }

// grow is called before a plain container is made; it refuses files that
// make far more of them than any snapshot, which would use memory many
// times their size.
func (d *decoder) grow(op byte) error {
	n := len(d.lists) + len(d.dicts) + len(d.tuples)
	if n > objFloor && int64(n) > d.op/objRatio {
		return d.fail(op, "%d lists, dicts and tuples after %d bytes; no snapshot needs that many", n, d.op)
	}
	return nil
}

// Sizes charged to the memory budget, with the map and slice headers that
// come with them where they are per item.
const (
	valueSize = int64(unsafe.Sizeof(value{}))
	listSize  = int64(unsafe.Sizeof(glist{}))
	dictSize  = int64(unsafe.Sizeof(gdict{}))
	frameSize = int64(unsafe.Sizeof(Frame{}))
	mapEntry  = 16 // a map entry's share of its table (control byte, free slots), beyond key and value
)

// heldNow is what decoding holds: the charges so far, the stack and the
// marks.
func (d *decoder) heldNow() int64 {
	return d.held + int64(cap(d.stack))*valueSize + int64(cap(d.marks))*8
}

// budget is what decoding may hold once the bytes read so far (up to the
// end of the current opcode) are decoded.
func (d *decoder) budget() int64 { return min(d.maxMem, memFloor+memRatio*(d.base+int64(d.pos))) }

// checkBudget refuses a file whose decoding holds more than the budget.
func (d *decoder) checkBudget(op byte, h int64) error {
	if h <= d.budget() {
		return nil
	}
	if d.budget() == d.maxMem {
		return d.fail(op, "decoding would hold %s, more than the memory cap of %s set for this read", mib(h), mib(d.maxMem))
	}
	return d.fail(op, "decoding would hold %s after %d bytes, more than the memory budget of %s (%s plus %d bytes per byte read); snapshots hold less than their own size",
		mib(h), d.base+int64(d.pos), mib(d.budget()), mib(memFloor), memRatio)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func (d *decoder) pop(op byte) (value, error) {
	if len(d.stack) == 0 || (len(d.marks) > 0 && len(d.stack) == d.marks[len(d.marks)-1]) {
		return value{}, d.fail(op, "stack underflow")
	}
	v := d.stack[len(d.stack)-1]
	d.stack = d.stack[:len(d.stack)-1]
	return v, nil
}

// popMark returns the start of the items above the innermost mark and
// removes the mark.
func (d *decoder) popMark(op byte) (int, error) {
	if len(d.marks) == 0 {
		return 0, d.fail(op, "no MARK to pop to")
	}
	m := d.marks[len(d.marks)-1]
	d.marks = d.marks[:len(d.marks)-1]
	return m, nil
}

// topIndex is the index of the value below the items an opcode consumes,
// checking it is not hidden behind a mark.
func (d *decoder) below(op byte, i int) (int, error) {
	floor := 0
	if len(d.marks) > 0 {
		floor = d.marks[len(d.marks)-1]
	}
	if i < floor || i < 0 {
		return 0, d.fail(op, "stack underflow")
	}
	return i, nil
}

// memo

const memoBits = 12

// A memo slot packs a value into 32 bits: 5 bits of kind, 27 of n. A
// snapshot memoises one or a few values per event, so this halves the
// memo's share of memory. Values that do not fit go to d.wide.
const (
	packBits = 27
	wideTag  = 31 // kind bits of a slot whose value lives in d.wide
)

func pack(v value) (uint32, bool) {
	n := v.n
	switch v.k {
	case kFreshDict, kEmptyList:
		n = 0 // the slot is implied by where it is stored
	case kStack:
		n &= 1<<32 - 1
	case kTrace, kBlock, kSegment:
		n = 0 // never fetched from the memo: a second reference is refused
	}
	if n >= 1<<packBits {
		return 0, false
	}
	return uint32(v.k)<<packBits | uint32(n), true
}

// memoPut stores v in slot i. Picklers number slots 0, 1, 2, ...; a slot
// far beyond the dense range goes to a map, so a hostile file cannot make
// a few bytes claim a large dense table.
func (d *decoder) memoPut(i uint64, v value) error {
	c := i >> memoBits
	if c > uint64(len(d.memo)) || (c == uint64(len(d.memo)) && i >= d.memoN+memoAhead) {
		if _, ok := d.sparse[i]; !ok {
			if len(d.sparse) >= maxSparse {
				return d.fail(0, "more than %d memo slots far from the ones in use; picklers number slots in order", maxSparse)
			}
			d.memoN++
		}
		if d.sparse == nil {
			d.sparse = map[uint64]value{}
		}
		d.held += 8 + valueSize + mapEntry
		d.sparse[i] = v
		return nil
	}
	if c == uint64(len(d.memo)) {
		d.memo = append(d.memo, make([]uint32, 1<<memoBits))
		d.held += 4<<memoBits + 24
	}
	p, ok := pack(v)
	if !ok {
		if len(d.wide) >= maxWide {
			return d.fail(0, "more than %d memoised values that are not containers or strings; picklers memoise only those", maxWide)
		}
		if d.wide == nil {
			d.wide = map[uint64]value{}
		}
		d.held += 8 + valueSize + mapEntry
		d.wide[i] = v
		p = wideTag << packBits
	}
	slot := &d.memo[c][i&(1<<memoBits-1)]
	if *slot == 0 {
		if _, ok := d.sparse[i]; ok {
			delete(d.sparse, i) // now dense; keep one home per slot
		} else {
			d.memoN++
		}
	}
	*slot = p
	return nil
}

func (d *decoder) memoGet(i uint64) (value, bool) {
	c := i >> memoBits
	if c >= uint64(len(d.memo)) {
		v, ok := d.sparse[i]
		return v, ok
	}
	p := d.memo[c][i&(1<<memoBits-1)]
	if p == 0 {
		v, ok := d.sparse[i]
		return v, ok
	}
	if p>>packBits == wideTag {
		v, ok := d.wide[i]
		return v, ok
	}
	v := value{k: kind(p >> packBits), n: uint64(p & (1<<packBits - 1))}
	switch v.k {
	case kFreshDict, kEmptyList:
		v.n = i + 1
	case kStack:
		v.n |= (i + 1) << 32
	}
	return v, true
}

// memoize stores the stack top in slot i. An empty list or dict learns its
// slot, so that giving it a type later can update the memo too.
func (d *decoder) memoize(op byte, i uint64) error {
	if len(d.stack) == 0 {
		return d.fail(op, "memoize with an empty stack")
	}
	top := &d.stack[len(d.stack)-1]
	switch top.k {
	case kFreshDict, kEmptyList:
		if top.n == 0 {
			top.n = i + 1
		}
	case kStack:
		top.n = top.n&(1<<32-1) | (i+1)<<32
	}
	return d.memoPut(i, *top)
}

func (d *decoder) memoFetch(op byte, i uint64) error {
	v, ok := d.memoGet(i)
	if !ok {
		return d.fail(op, "memo slot %d was never stored", i)
	}
	if err := d.unshared(op, v); err != nil {
		return err
	}
	d.push(v)
	return nil
}

// unshared refuses a second reference to a trace entry, block or segment:
// PyTorch writes each once, and counting one twice would double figures.
func (d *decoder) unshared(op byte, v value) error {
	switch v.k {
	case kTrace, kBlock, kSegment:
		return d.fail(op, "%s is referenced twice; snapshots never share those", v.k)
	}
	return nil
}

// setMemo records a container's new identity in its memo slot.
func (d *decoder) setMemo(slot uint64, v value) {
	if slot > 0 {
		// The slot exists already, so this cannot fail.
		_ = d.memoPut(slot-1, v)
	}
}

// strings

func (d *decoder) newString(b []byte, k kind) value {
	if len(b) <= internMax {
		if i, ok := d.intern[string(b)]; ok && k == kStr {
			return value{k: kStr, n: uint64(i)}
		}
	}
	return d.addString(string(b), k)
}

// addString stores s (which no one else may change) as a new string.
func (d *decoder) addString(s string, k kind) value {
	i := uint32(len(d.strs))
	d.strs = append(d.strs, s)
	d.strKey = append(d.strKey, knownStrings[s])
	d.held += int64(len(s)) + 16 + 1
	if k == kStr && len(s) <= internMax {
		d.intern[s] = i
		d.held += 16 + 4 + mapEntry
	}
	return value{k: k, n: uint64(i)}
}

func (d *decoder) readString(op byte, n uint64, k kind) error {
	if n > maxString {
		return d.fail(op, "a string of %d bytes is longer than any snapshot holds (limit %d)", n, maxString)
	}
	if n > largeString {
		// Refused before it is read: neither the bytes nor the time.
		if d.large+int64(n) > maxLarge {
			return d.fail(op, "strings over %d bytes hold %d bytes together with this one of %d (limit %d); a snapshot's strings are names and paths", largeString, d.large+int64(n), n, maxLarge)
		}
		if h := d.heldNow() + int64(n); h > d.maxMem {
			return d.fail(op, "decoding would hold %s with this string of %d bytes, more than the memory cap of %s set for this read", mib(h), n, mib(d.maxMem))
		}
		d.large += int64(n)
		if int(n) > len(d.buf) {
			return d.readLarge(op, int(n), k)
		}
	}
	b, err := d.bytes(op, int(n))
	if err != nil {
		return err
	}
	d.push(d.newString(b, k))
	return nil
}

// readLarge reads a string longer than the buffer straight into its own
// memory, so that the buffer does not grow to hold it (and keep that size).
func (d *decoder) readLarge(op byte, n int, k kind) error {
	b := make([]byte, n)
	m := copy(b, d.buf[d.pos:d.end])
	d.base += int64(d.end)
	d.pos, d.end = 0, 0
	if m < n && !d.eof {
		got, err := io.ReadFull(d.r, b[m:])
		d.base += int64(got)
		m += got
		if err != nil {
			d.eof = true
			if err != io.EOF && err != io.ErrUnexpectedEOF {
				d.rerr = err
			}
		}
	}
	if m < n {
		if d.rerr != nil {
			return &Error{Offset: d.op, Op: op, Msg: "read error: " + d.rerr.Error()}
		}
		return &Error{Offset: d.op, Op: op, Msg: fmt.Sprintf("file ends early: the opcode needs %d more bytes, %d left (truncated file?)", n, m)}
	}
	d.push(d.addString(unsafe.String(unsafe.SliceData(b), n), k))
	return nil
}

// integers

func intValue(i int64) value { return value{k: kInt, n: uint64(i)} }

// long decodes a little-endian two's-complement integer of any width.
func (d *decoder) long(b []byte) value {
	if len(b) == 0 {
		return intValue(0)
	}
	if len(b) <= 8 {
		var u uint64
		for i := len(b) - 1; i >= 0; i-- {
			u = u<<8 | uint64(b[i])
		}
		shift := 64 - 8*uint(len(b))
		return intValue(int64(u<<shift) >> shift)
	}
	neg := b[len(b)-1]&0x80 != 0
	if !neg {
		// Non-negative and fits in 64 bits once the high zero bytes go.
		hi := true
		for _, c := range b[8:] {
			if c != 0 {
				hi = false
				break
			}
		}
		if hi {
			u := binary.LittleEndian.Uint64(b[:8])
			if u <= math.MaxInt64 {
				return intValue(int64(u))
			}
			return value{k: kUint, n: u}
		}
	}
	// Any other width: math/big, big-endian magnitude.
	be := make([]byte, len(b))
	for i := range b {
		be[len(b)-1-i] = b[i]
	}
	d.held += int64(len(b)) + 64
	z := new(big.Int).SetBytes(be)
	if neg {
		z.Sub(z, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	d.bigs = append(d.bigs, z)
	return value{k: kBig, n: uint64(len(d.bigs) - 1)}
}
