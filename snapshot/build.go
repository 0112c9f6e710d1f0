package snapshot

import (
	"encoding/binary"
	"math"
	"strconv"
	"unsafe"
)

// appendItems appends items to the list *t, giving an empty list its
// storage on first use.
func (d *decoder) appendItems(op byte, t *value, items []value) error {
	if t.k == kEmptyList {
		slot := t.n
		if v, ok := d.memoGet(slot - 1); slot > 0 && ok && (v.k == kList || v.k == kStack) {
			*t = v // appended to before, through another reference
		}
	}
	switch t.k {
	case kEmptyList, kStack:
		// A frames list filled by one batch becomes a stack at once,
		// without a list object: PyTorch writes a fresh frames list for
		// nearly every event. A full batch (Python's pickler appends 1000
		// at a time) may be continued, so it takes the list path, where
		// the stack is made once when the list is used.
		if t.k == kEmptyList && len(items) < 1000 && allFrames(items) {
			id, err := d.internStack(op, nil, items)
			if err != nil {
				return err
			}
			slot := t.n
			*t = value{k: kStack, n: uint64(id) | slot<<32}
			d.setMemo(slot, value{k: kStack, n: uint64(id)})
			return nil
		}
		if err := d.grow(op); err != nil {
			return err
		}
		var start []value
		slot := t.n
		if t.k == kStack {
			// Appended to after it became a stack (not a pickler's batch
			// pattern): back to a list of the same frames.
			slot = t.n >> 32
			for _, f := range d.stacks[StackID(t.n)] {
				start = append(start, d.frameValue(f))
			}
		}
		d.lists = append(d.lists, glist{items: start})
		d.held += listSize + valueSize*int64(cap(start))
		*t = value{k: kList, n: uint64(len(d.lists) - 1)}
		d.setMemo(slot, *t)
	case kList:
	default:
		return d.fail(op, "appending to %s, not a list", t.k)
	}
	l := &d.lists[t.n]
	c := cap(l.items)
	// Charged by capacity: a list grown by doubling holds up to twice its
	// items.
	defer func() { d.held += valueSize * int64(cap(l.items)-c) }()
	for _, it := range items {
		if it.k == kTrace {
			switch {
			case len(l.items) > 0:
				return d.fail(op, "a list mixes trace entries with other values")
			case l.trN == 0:
				l.trStart, l.trN = it.n, 1
			case it.n == l.trStart+l.trN:
				l.trN++
			default:
				return d.fail(op, "trace entries appended out of order")
			}
			continue
		}
		if l.trN > 0 {
			return d.fail(op, "a list mixes trace entries with other values")
		}
		l.items = append(l.items, it)
	}
	return nil
}

func allFrames(items []value) bool {
	for _, it := range items {
		if it.k != kFrame {
			return false
		}
	}
	return len(items) > 0
}

// frameValue turns a frame of a stack back into a frame value (for the rare
// list that mixes frames with other values after it became a stack).
func (d *decoder) frameValue(f Frame) value {
	d.held += frameSize + 4
	d.frames = append(d.frames, f)
	d.frameCanon = append(d.frameCanon, 0)
	return value{k: kFrame, n: uint64(len(d.frames) - 1)}
}

// canonFrame is the content id of frame dict i: equal frames get equal ids
// even when the file holds them as separate dicts.
func (d *decoder) canonFrame(f Frame) uint32 {
	if id, ok := d.frameIDs[f]; ok {
		return id
	}
	id := uint32(len(d.frameIDs))
	d.frameIDs[f] = id
	d.held += frameSize + 4 + mapEntry
	return id
}

// internStack returns the StackID of base followed by the frames in items
// (kFrame or kStr values), one id per distinct content.
func (d *decoder) internStack(op byte, base []Frame, items []value) (StackID, error) {
	key := d.stackKey[:0]
	for _, f := range base {
		key = binary.LittleEndian.AppendUint32(key, d.canonFrame(f))
	}
	for _, it := range items {
		var id uint32
		switch it.k {
		case kFrame:
			c := &d.frameCanon[it.n]
			if *c == 0 {
				*c = d.canonFrame(d.frames[it.n]) + 1
			}
			id = *c - 1
		case kStr:
			// forward_frames style pre-formatted strings.
			id = d.canonFrame(Frame{Name: d.strs[it.n]})
		default:
			return 0, d.fail(op, "a frame is %s, want a dict with filename, line and name", it.k)
		}
		key = binary.LittleEndian.AppendUint32(key, id)
	}
	d.stackKey = key
	if len(key) == 0 {
		return 0, nil
	}
	if id, ok := d.stackIDs[string(key)]; ok {
		return id, nil
	}
	if len(d.stacks) >= math.MaxUint32 {
		return 0, d.fail(op, "too many distinct stacks")
	}
	fs := make([]Frame, 0, len(base)+len(items))
	fs = append(fs, base...)
	for _, it := range items {
		if it.k == kFrame {
			fs = append(fs, d.frames[it.n])
		} else {
			fs = append(fs, Frame{Name: d.strs[it.n]})
		}
	}
	id := StackID(len(d.stacks))
	d.stacks = append(d.stacks, fs)
	d.stackIDs[string(key)] = id
	d.held += 24 + frameSize*int64(cap(fs)) + int64(len(key)) + 16 + 4 + mapEntry
	return id, nil
}

// key returns the known-string id of a dict key (0 for others).
func (d *decoder) key(v value) uint8 {
	if v.k == kStr {
		return d.strKey[v.n]
	}
	return 0
}

// setItems stores key/value pairs into the dict *t. A dict's first items
// decide what it is: a trace entry (it has "action"), a segment
// ("total_size"), a block ("state"), a frame ("filename" and "line"), or a
// plain dict.
func (d *decoder) setItems(op byte, t *value, pairs []value) error {
	if len(pairs)%2 != 0 {
		return d.fail(op, "odd number of values (%d) for key/value pairs", len(pairs))
	}
	if t.k == kFreshDict {
		slot := t.n
		var action, total, state, filename, line bool
		for i := 0; i < len(pairs); i += 2 {
			switch d.key(pairs[i]) {
			case sAction:
				action = true
			case sTotalSize:
				total = true
			case sState:
				state = true
			case sFilename:
				filename = true
			case sLine:
				line = true
			}
		}
		switch {
		case action:
			d.held += int64(unsafe.Sizeof(TraceEntry{}))
			d.traces.Append(TraceEntry{})
			*t = value{k: kTrace, n: uint64(d.traces.Len() - 1)}
		case total:
			d.held += int64(unsafe.Sizeof(Segment{}))
			d.segs = append(d.segs, Segment{})
			*t = value{k: kSegment, n: uint64(len(d.segs) - 1)}
		case state:
			d.held += int64(unsafe.Sizeof(Block{}))
			d.blocks = append(d.blocks, Block{})
			*t = value{k: kBlock, n: uint64(len(d.blocks) - 1)}
		case filename && line:
			d.held += frameSize + 4
			d.frames = append(d.frames, Frame{})
			d.frameCanon = append(d.frameCanon, 0)
			*t = value{k: kFrame, n: uint64(len(d.frames) - 1)}
		default:
			if err := d.grow(op); err != nil {
				return err
			}
			d.held += dictSize
			d.dicts = append(d.dicts, gdict{})
			*t = value{k: kDict, n: uint64(len(d.dicts) - 1)}
		}
		d.setMemo(slot, *t)
	}
	var err error
	if t.k == kTrace { // the hot path: tens of millions of events
		e := d.traces.At(int(t.n))
		for i := 0; i < len(pairs) && err == nil; i += 2 {
			err = d.setTrace(op, e, t.n, d.key(pairs[i]), pairs[i+1])
		}
		return err
	}
	for i := 0; i < len(pairs) && err == nil; i += 2 {
		k, v := pairs[i], pairs[i+1]
		switch t.k {
		case kSegment:
			err = d.setSegment(op, &d.segs[t.n], d.key(k), v)
		case kBlock:
			err = d.setBlock(op, &d.blocks[t.n], d.key(k), v)
		case kFrame:
			err = d.setFrame(op, &d.frames[t.n], d.key(k), v)
		case kDict:
			g := &d.dicts[t.n]
			c := cap(g.keys) + cap(g.vals)
			g.keys = append(g.keys, k)
			g.vals = append(g.vals, v)
			d.held += valueSize * int64(cap(g.keys)+cap(g.vals)-c)
		default:
			return d.fail(op, "setting items on %s, not a dict", t.k)
		}
	}
	return err
}

// Conversions of values to Go types, for the typed setters.

func (d *decoder) wantUint(op byte, field string, v value) (uint64, error) {
	switch {
	case v.k == kInt && int64(v.n) >= 0, v.k == kUint:
		return v.n, nil
	}
	return 0, d.fail(op, "%s is %s %s, want a non-negative int", field, v.k, d.show(v))
}

func (d *decoder) wantInt(op byte, field string, v value) (int64, error) {
	if v.k == kInt {
		return int64(v.n), nil
	}
	return 0, d.fail(op, "%s is %s %s, want an int", field, v.k, d.show(v))
}

func (d *decoder) wantStr(op byte, field string, v value) (string, error) {
	if v.k == kStr || v.k == kBytes {
		return d.strs[v.n], nil
	}
	return "", d.fail(op, "%s is %s %s, want a str", field, v.k, d.show(v))
}

func (d *decoder) wantBool(op byte, field string, v value) (bool, error) {
	switch v.k {
	case kBool:
		return v.n != 0, nil
	case kInt:
		return v.n != 0, nil
	}
	return false, d.fail(op, "%s is %s %s, want a bool", field, v.k, d.show(v))
}

// show gives a short rendering of a scalar for error messages.
func (d *decoder) show(v value) string {
	switch v.k {
	case kInt:
		return itoa(int64(v.n))
	case kStr, kBytes:
		s := d.strs[v.n]
		if len(s) > 40 {
			s = s[:40]
		}
		// Quoted with escapes: the text comes from the file and goes to a
		// terminal.
		return strconv.Quote(s)
	}
	return ""
}

func itoa(i int64) string {
	if i == 0 {
		return "0"
	}
	neg := i < 0
	u := uint64(i)
	if neg {
		u = -u
	}
	var b [20]byte
	p := len(b)
	for u > 0 {
		p--
		b[p] = byte('0' + u%10)
		u /= 10
	}
	s := string(b[p:])
	if neg {
		s = "-" + s
	}
	return s
}

// stackOf converts a frames value to a StackID.
func (d *decoder) stackOf(op byte, v value) (StackID, error) {
	switch v.k {
	case kEmptyList, kNone:
		return 0, nil
	case kStack:
		return StackID(v.n), nil
	case kList:
	default:
		return 0, d.fail(op, "frames is %s, want a list", v.k)
	}
	l := &d.lists[v.n]
	if l.hasStack {
		return l.stack, nil
	}
	if l.trN > 0 {
		return 0, d.fail(op, "frames holds trace entries")
	}
	id, err := d.internStack(op, nil, l.items)
	if err != nil {
		return 0, err
	}
	l = &d.lists[v.n]
	l.stack, l.hasStack, l.items = id, true, nil
	return id, nil
}

func (d *decoder) setTrace(op byte, e *TraceEntry, i uint64, key uint8, v value) error {
	var err error
	switch key {
	case sAction:
		if k := d.key(v); k > actionBase {
			e.Action = Action(k - actionBase)
			break
		}
		var s string
		if s, err = d.wantStr(op, "action", v); err == nil {
			e.Action = ParseAction(s)
			if e.Action == ActionOther {
				d.out.UnknownActions[s]++
			}
		}
	case sAddr, sDeviceFree:
		e.Addr, err = d.wantUint(op, "addr", v)
	case sSize:
		e.Size, err = d.wantUint(op, "size", v)
	case sStream:
		var s uint64
		if s, err = d.streamValue(op, v); err == nil {
			e.Stream, err = d.streamIndex(op, s)
		}
	case sTimeUS:
		e.TimeUS, err = d.wantInt(op, "time_us", v)
		d.out.Layout.TimeUS = true
	case sFrames:
		e.Stack, err = d.stackOf(op, v)
		e.HasStack = true
	case sCompileContext:
		d.out.Layout.CompileCtx = true
		if !(v.k == kStr && d.strKey[v.n] == sNA) {
			var s string
			if s, err = d.wantStr(op, "compile_context", v); err == nil {
				d.setMeta(i, func(m *EventMeta) { m.CompileContext = s })
			}
		}
	case sUserMetadata:
		d.out.Layout.UserMetadata = true
		if v.k == kStr && d.strs[v.n] == "" {
			break
		}
		if v.k == kStr || v.k == kBytes {
			s := d.strs[v.n]
			d.setMeta(i, func(m *EventMeta) { m.UserMetadata = s })
		}
	}
	return err
}

func (d *decoder) setMeta(i uint64, f func(*EventMeta)) {
	if d.metaArr == nil {
		d.metaArr = map[uint64]EventMeta{}
	}
	m, ok := d.metaArr[i]
	if !ok {
		d.held += 8 + int64(unsafe.Sizeof(m)) + mapEntry
	}
	f(&m)
	d.metaArr[i] = m
}

// streamValue reads a cudaStream_t, which PyTorch writes as a signed
// int64 cast of the pointer.
func (d *decoder) streamValue(op byte, v value) (uint64, error) {
	switch v.k {
	case kInt, kUint:
		return v.n, nil
	}
	return 0, d.fail(op, "stream is %s, want an int", v.k)
}

func (d *decoder) streamIndex(op byte, s uint64) (uint16, error) {
	if i, ok := d.streams[s]; ok {
		return i, nil
	}
	if len(d.out.Streams) >= maxStream {
		return 0, d.fail(op, "more than %d distinct streams", maxStream)
	}
	i := uint16(len(d.out.Streams))
	d.out.Streams = append(d.out.Streams, s)
	d.streams[s] = i
	return i, nil
}

func (d *decoder) setSegment(op byte, s *Segment, key uint8, v value) error {
	var err error
	switch key {
	case sDevice:
		var n int64
		n, err = d.wantInt(op, "device", v)
		if err == nil && (n < 0 || n > 1<<20) {
			err = d.fail(op, "device %d is out of range", n)
		}
		s.Device = int(n)
	case sAddress:
		s.Address, err = d.wantUint(op, "address", v)
	case sTotalSize:
		s.TotalSize, err = d.wantUint(op, "total_size", v)
	case sAllocatedSize:
		s.AllocatedSize, err = d.wantUint(op, "allocated_size", v)
	case sActiveSize:
		s.ActiveSize, err = d.wantUint(op, "active_size", v)
	case sRequestedSize:
		s.RequestedSize, err = d.wantUint(op, "requested_size", v)
	case sStream:
		s.Stream, err = d.streamValue(op, v)
	case sSegmentType:
		var t string
		if t, err = d.wantStr(op, "segment_type", v); err == nil {
			s.Small = t == "small"
		}
	case sSegmentPoolID:
		s.Pool, err = d.poolID(op, v)
	case sIsExpandable:
		s.Expandable, err = d.wantBool(op, "is_expandable", v)
	case sFrames:
		s.Stack, err = d.stackOf(op, v)
	case sBlocks:
		s.Blocks, err = d.takeBlocks(op, v)
	}
	return err
}

func (d *decoder) poolID(op byte, v value) (PoolID, error) {
	var items []value
	switch v.k {
	case kTuple:
		items = d.tuples[v.n]
	case kList:
		items = d.lists[v.n].items
	}
	if len(items) != 2 {
		return PoolID{}, d.fail(op, "segment_pool_id is %s, want a pair of ints", v.k)
	}
	a, err := d.wantInt(op, "segment_pool_id", items[0])
	if err != nil {
		return PoolID{}, err
	}
	b, err := d.wantInt(op, "segment_pool_id", items[1])
	return PoolID{a, b}, err
}

// takeBlocks copies a segment's blocks out of the scratch arena and frees
// the arena's tail for the next segment.
func (d *decoder) takeBlocks(op byte, v value) ([]Block, error) {
	switch v.k {
	case kEmptyList:
		return nil, nil
	case kList:
	default:
		return nil, d.fail(op, "blocks is %s, want a list", v.k)
	}
	items := d.lists[v.n].items
	bs := make([]Block, len(items))
	d.held += int64(unsafe.Sizeof(Block{})) * int64(len(items))
	low := len(d.blocks)
	for i, it := range items {
		if it.k != kBlock {
			return nil, d.fail(op, "a block is %s, want a dict with size and state", it.k)
		}
		bs[i] = d.blocks[it.n]
		low = min(low, int(it.n))
	}
	if low+len(items) == len(d.blocks) {
		d.blocks = d.blocks[:low]
		d.held -= int64(unsafe.Sizeof(Block{})) * int64(len(items)) // the next segment reuses them
	}
	return bs, nil
}

func (d *decoder) setBlock(op byte, b *Block, key uint8, v value) error {
	var err error
	switch key {
	case sAddress:
		b.Address, err = d.wantUint(op, "address", v)
		d.out.Layout.BlockAddress = true
	case sSize:
		b.Size, err = d.wantUint(op, "size", v)
	case sRequestedSize:
		b.RequestedSize, err = d.wantUint(op, "requested_size", v)
	case sState:
		switch d.key(v) {
		case sInactive:
			b.State = Inactive
		case sActiveAllocated:
			b.State = ActiveAllocated
		case sActivePendingFree, sActiveAwaitingFree:
			b.State = ActivePendingFree
		default:
			return d.fail(op, "unknown block state %s", d.show(v))
		}
	case sFrames:
		b.Stack, err = d.stackOf(op, v)
	case sHistory:
		// 1.13/2.0: [{addr, real_size, frames}, ...]; the allocation
		// stack is the first entry's.
		d.out.Layout.History = true
		if v.k == kList && len(d.lists[v.n].items) > 0 {
			if h := d.lists[v.n].items[0]; h.k == kDict {
				g := &d.dicts[h.n]
				for i, k := range g.keys {
					if d.key(k) == sFrames && b.Stack == 0 {
						b.Stack, err = d.stackOf(op, g.vals[i])
					}
				}
			}
		}
	}
	return err
}

func (d *decoder) setFrame(op byte, f *Frame, key uint8, v value) error {
	var err error
	switch key {
	case sName:
		f.Name, err = d.wantStr(op, "frame name", v)
	case sFilename:
		f.Filename, err = d.wantStr(op, "frame filename", v)
	case sLine:
		switch {
		case v.k == kInt && int64(v.n) > 0:
			f.Line = int64(v.n)
		case v.k == kInt, v.k == kUint, v.k == kBig, v.k == kNone:
			f.Line = 0 // unknown: 0, -1, or 2^64-1
		default:
			err = d.fail(op, "frame line is %s, want an int", v.k)
		}
	}
	return err
}
