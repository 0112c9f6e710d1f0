package snapshot

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
)

// Read decodes a snapshot from r: a pickle as _dump_snapshot writes it, or a
// pickled memory_snapshot() list, plain or gzip-compressed. Failures are
// *Error values carrying the byte offset where decoding stopped (an offset
// into the decompressed stream for gzip input). It is ReadWith with the
// default Options.
func Read(r io.Reader) (*Snapshot, error) { return ReadWith(r, Options{}) }

// ReadWith is Read within the memory budget of opt: a file whose decoding
// would hold more is refused with an *Error at the byte where it went over.
func ReadWith(r io.Reader, opt Options) (*Snapshot, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	head, _ := br.Peek(2)
	gz := false
	var src io.Reader = br
	if len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &Error{Msg: "gzip header: " + err.Error()}
		}
		defer zr.Close()
		zr.Multistream(false)
		src, gz = zr, true
	}
	d := newDecoder(src, opt)
	d.out.Layout.Gzip = gz
	if !d.fill(1) {
		if d.rerr != nil {
			return nil, &Error{Msg: "read error: " + d.rerr.Error()}
		}
		return nil, &Error{Msg: "the file is empty"}
	}
	if d.buf[0] != opProto {
		return nil, &Error{Msg: fmt.Sprintf("not a PyTorch memory snapshot: it does not start with a pickle PROTO opcode (first byte 0x%02x)", d.buf[0])}
	}
	v, err := d.run()
	if err != nil {
		return nil, err
	}
	if err := d.finish(v); err != nil {
		return nil, err
	}
	return d.out, nil
}

// ReadFile decodes the snapshot in the named file.
func ReadFile(path string) (*Snapshot, error) { return ReadFileWith(path, Options{}) }

// ReadFileWith is ReadFile within the memory budget of opt.
func ReadFileWith(path string, opt Options) (*Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadWith(f, opt)
}

// finish turns the pickle's result into the Snapshot.
func (d *decoder) finish(v value) error {
	d.op = d.base + int64(d.pos)
	s := d.out
	switch v.k {
	case kList, kEmptyList:
		s.Layout.SegmentsOnly = true
		segs, err := d.segments(v)
		if err != nil {
			return err
		}
		s.Segments = segs
	case kDict:
		g := &d.dicts[v.n]
		seen := false
		for i, k := range g.keys {
			val := g.vals[i]
			var err error
			switch d.key(k) {
			case sSegments:
				seen = true
				s.Segments, err = d.segments(val)
			case sDeviceTraces:
				err = d.deviceTraces(val)
			case sAllocatorSettings:
				s.Layout.Settings = true
				err = d.settings(val)
			case sExternalAnnotations:
				s.Layout.Annotations = true
				err = d.annotations(val)
			}
			if err != nil {
				return err
			}
		}
		if !seen {
			return &Error{Offset: d.op, Msg: "not a PyTorch memory snapshot: the pickle is a dict without a \"segments\" key"}
		}
	default:
		return &Error{Offset: d.op, Msg: fmt.Sprintf("not a PyTorch memory snapshot: the pickle holds %s, not a dict or a list of segments", v.k)}
	}
	for i := range s.Segments {
		if err := d.tile(i, &s.Segments[i]); err != nil {
			return err
		}
	}
	s.Stacks = d.stacks
	if len(d.metaArr) > 0 {
		s.Meta = map[EventRef]EventMeta{}
		for i, m := range d.metaArr {
			s.Meta[d.eventRef(i)] = m
		}
	}
	return nil
}

// tile checks that a segment's blocks cover it exactly, in address order,
// as the allocator guarantees, and fills in block addresses for layouts that
// lack them. Every figure (free gaps, maps drawn to scale) relies on it.
func (d *decoder) tile(i int, sg *Segment) error {
	a := sg.Address
	for j := range sg.Blocks {
		b := &sg.Blocks[j]
		if !d.out.Layout.BlockAddress {
			b.Address = a
		} else if b.Address != a {
			return &Error{Offset: d.op, Msg: fmt.Sprintf("segments[%d] (device %d, address %#x): block %d starts at %#x, want %#x (blocks must tile the segment in order)", i, sg.Device, sg.Address, j, b.Address, a)}
		}
		if a+b.Size < a {
			return &Error{Offset: d.op, Msg: fmt.Sprintf("segments[%d] (device %d, address %#x): block %d of %d bytes runs past the end of the address space", i, sg.Device, sg.Address, j, b.Size)}
		}
		a += b.Size
	}
	if a-sg.Address != sg.TotalSize {
		return &Error{Offset: d.op, Msg: fmt.Sprintf("segments[%d] (device %d, address %#x): its blocks add up to %d bytes but total_size is %d", i, sg.Device, sg.Address, a-sg.Address, sg.TotalSize)}
	}
	return nil
}

// eventRef maps an arena index to its device and index in that device's
// trace.
func (d *decoder) eventRef(i uint64) EventRef {
	for dev, t := range d.out.Traces {
		if int(i) >= t.off && int(i) < t.off+t.n {
			return EventRef{Device: int32(dev), Index: int32(int(i) - t.off)}
		}
	}
	return EventRef{Device: -1, Index: int32(i)}
}

// listItems returns the items of the list in field (none for an empty
// list), or an error naming the field when it is not a list of values.
func (d *decoder) listItems(field string, v value) ([]value, error) {
	switch v.k {
	case kEmptyList:
		return nil, nil
	case kList:
		if d.lists[v.n].trN > 0 {
			return nil, &Error{Offset: d.op, Msg: field + " holds trace entries"}
		}
		return d.lists[v.n].items, nil
	}
	return nil, &Error{Offset: d.op, Msg: fmt.Sprintf("%s is %s, want a list", field, v.k)}
}

func (d *decoder) segments(v value) ([]Segment, error) {
	items, err := d.listItems("segments", v)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	// The common case: the segments list holds every segment, in order, and
	// the arena can be handed over without a copy.
	inOrder := len(items) == len(d.segs)
	for i, it := range items {
		if it.k != kSegment {
			return nil, &Error{Offset: d.op, Msg: fmt.Sprintf("segments[%d] is %s, not a segment dict", i, it.k)}
		}
		if it.n != uint64(i) {
			inOrder = false
		}
	}
	if inOrder {
		return d.segs, nil
	}
	out := make([]Segment, len(items))
	for i, it := range items {
		out[i] = d.segs[it.n]
	}
	return out, nil
}

func (d *decoder) deviceTraces(v value) error {
	items, err := d.listItems("device_traces", v)
	if err != nil {
		return err
	}
	for dev, it := range items {
		t := Trace{chunks: d.traces.chunks, shared: true}
		switch it.k {
		case kEmptyList:
		case kList:
			l := d.lists[it.n]
			if len(l.items) > 0 {
				return &Error{Offset: d.op, Msg: fmt.Sprintf("device_traces[%d] holds %s, not trace entries", dev, l.items[0].k)}
			}
			t.off, t.n = int(l.trStart), int(l.trN)
		default:
			return &Error{Offset: d.op, Msg: fmt.Sprintf("device_traces[%d] is %s, want a list", dev, it.k)}
		}
		d.out.Traces = append(d.out.Traces, t)
	}
	return nil
}

// dictItems returns a plain dict's keys (as strings) and values.
func (d *decoder) dictItems(v value) (map[string]value, bool) {
	if v.k == kFreshDict {
		return map[string]value{}, true
	}
	if v.k != kDict {
		return nil, false
	}
	g := &d.dicts[v.n]
	m := make(map[string]value, len(g.keys))
	for i, k := range g.keys {
		if k.k == kStr {
			m[d.strs[k.n]] = g.vals[i]
		}
	}
	return m, true
}

func (d *decoder) settings(v value) error {
	m, ok := d.dictItems(v)
	if !ok {
		return &Error{Offset: d.op, Msg: fmt.Sprintf("allocator_settings is %s, want a dict", v.k)}
	}
	st := &Settings{MaxSplitSize: -1}
	for k, val := range m {
		switch k {
		case "PYTORCH_CUDA_ALLOC_CONF":
			if val.k == kStr {
				st.AllocConf = d.strs[val.n]
			}
		case "max_split_size":
			if val.k == kInt {
				st.MaxSplitSize = int64(val.n)
			}
		case "garbage_collection_threshold":
			if val.k == kFloat {
				st.GCThreshold = math.Float64frombits(val.n)
			}
		case "expandable_segments":
			st.ExpandableSegments = val.k == kBool && val.n != 0
		case "release_lock_on_cudamalloc":
			st.ReleaseLockOnMalloc = val.k == kBool && val.n != 0
		case "pinned_num_register_threads":
			if val.k == kInt {
				st.PinnedRegisterThread = int64(val.n)
			}
		case "roundup_power2_divisions":
			if r, ok := d.dictItems(val); ok {
				st.RoundupPower2Divs = map[string]int64{}
				for rk, rv := range r {
					if rv.k == kInt {
						st.RoundupPower2Divs[rk] = int64(rv.n)
					}
				}
			}
		}
	}
	d.out.Settings = st
	return nil
}

func (d *decoder) annotations(v value) error {
	items, err := d.listItems("external_annotations", v)
	if err != nil {
		return err
	}
	for _, it := range items {
		m, ok := d.dictItems(it)
		if !ok {
			continue
		}
		var a Annotation
		if x, ok := m["stage"]; ok && x.k == kStr {
			a.Stage = d.strs[x.n]
		}
		if x, ok := m["name"]; ok && x.k == kStr {
			a.Name = d.strs[x.n]
		}
		if x, ok := m["device"]; ok && x.k == kInt {
			a.Device = int(int64(x.n))
		}
		if x, ok := m["time_us"]; ok && x.k == kInt {
			a.TimeUS = int64(x.n)
		}
		d.out.Annotations = append(d.out.Annotations, a)
	}
	return nil
}
