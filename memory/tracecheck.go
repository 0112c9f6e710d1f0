package memory

import (
	"fmt"

	"github.com/gpudx/gpudx/snapshot"
)

// TraceMismatch says that a device's trace and its segments disagree about
// what is in use at snapshot time: allocations the trace never frees that
// the segments show free (frees not recorded: recording stopped, or events
// skipped or lost, before the snapshot), or live blocks at addresses the
// trace last freed (allocs not recorded). The peak and the timeline then
// rest on the trace alone; the figures per device, the holders and the
// verdict rest on the segments.
type TraceMismatch struct {
	Device int `json:"device"`
	// TraceEndBytes is in use at the end of the trace by the trace's own
	// count (what was alive before the window plus its unfreed allocs);
	// SegmentBytes is in use at snapshot time by the segments (Σ
	// requested_size of active blocks).
	TraceEndBytes uint64 `json:"trace_end_bytes"`
	SegmentBytes  uint64 `json:"segment_bytes"`
	// UnfreedBytes/UnfreedCount are allocs alive at the end of the trace
	// whose block is not active in the segments.
	UnfreedBytes uint64 `json:"unfreed_bytes"`
	UnfreedCount int    `json:"unfreed_count"`
	// UnrecordedBytes/UnrecordedCount are active blocks at addresses the
	// trace last freed.
	UnrecordedBytes uint64 `json:"unrecorded_bytes"`
	UnrecordedCount int    `json:"unrecorded_count"`
	Text            string `json:"text"`
	TextZH          string `json:"text_zh"`
}

// traceEnd counts, in one forward pass, what the trace itself says is in
// use at its end: active blocks the trace never mentions (older than the
// window and never freed) plus its allocs never freed. (Memory freed in
// the window without an alloc there was alive before it and is gone at its
// end.) It returns a mismatch when that disagrees with
// the segments; end is the segments' figure.
func (a *analysis) traceEnd(dev int, tr *snapshot.Trace, end uint64) (uint64, *TraceMismatch) {
	const seen, allocd = 1, 2
	flags := map[uint64]uint8{}
	live := map[uint64]uint64{} // address → requested size of its unfreed alloc
	var ghosts uint64
	for i := 0; i < tr.Len(); i++ {
		e := tr.At(i)
		switch e.Action {
		case snapshot.ActionAlloc:
			live[e.Addr] = e.Size
			flags[e.Addr] |= seen | allocd
		case snapshot.ActionFreeCompleted:
			delete(live, e.Addr)
			flags[e.Addr] |= seen
		}
	}
	m := &TraceMismatch{Device: dev, SegmentBytes: end}
	active := map[uint64]bool{}
	for _, sg := range a.segs[dev] {
		for j := range sg.Blocks {
			b := &sg.Blocks[j]
			if !b.State.Active() {
				continue
			}
			active[b.Address] = true
			switch {
			case flags[b.Address]&seen == 0:
				ghosts += b.RequestedSize
			case !hasKey(live, b.Address):
				m.UnrecordedBytes += b.RequestedSize
				m.UnrecordedCount++
			}
		}
	}
	traceEnd := ghosts
	for addr, n := range live {
		traceEnd += n
		if !active[addr] {
			m.UnfreedBytes += n
			m.UnfreedCount++
		}
	}
	if m.UnfreedCount == 0 && m.UnrecordedCount == 0 {
		return traceEnd, nil
	}
	m.TraceEndBytes = traceEnd
	m.Text, m.TextZH = mismatchText(m)
	return traceEnd, m
}

func hasKey(m map[uint64]uint64, k uint64) bool {
	_, ok := m[k]
	return ok
}

// mismatchText says what disagrees, the likely cause and which figures
// rest on which, once.
func mismatchText(m *TraceMismatch) (en, zh string) {
	var what, whatZh string
	switch {
	case m.UnfreedCount > 0 && m.UnrecordedCount > 0:
		what = fmt.Sprintf("the trace ends with %s in %s it never frees that the segments show free, and the segments hold %s in %s the trace last saw freed",
			fb(m.UnfreedBytes), plural(m.UnfreedCount, "allocation", "allocations"), fb(m.UnrecordedBytes), plural(m.UnrecordedCount, "block", "blocks"))
		whatZh = fmt.Sprintf("跟踪结束时有 %d 个从未释放的分配（%s），段中却显示为空闲；段中另有 %d 个块（%s）在跟踪里最后一次是被释放的",
			m.UnfreedCount, fb(m.UnfreedBytes), m.UnrecordedCount, fb(m.UnrecordedBytes))
	case m.UnfreedCount > 0:
		what = fmt.Sprintf("the trace ends with %s in %s it never frees, but the segments show them free (%s in use by the segments)",
			fb(m.UnfreedBytes), plural(m.UnfreedCount, "allocation", "allocations"), fb(m.SegmentBytes))
		whatZh = fmt.Sprintf("跟踪结束时有 %d 个从未释放的分配（%s），段中却显示为空闲（段中在用 %s）",
			m.UnfreedCount, fb(m.UnfreedBytes), fb(m.SegmentBytes))
	default:
		what = fmt.Sprintf("the segments hold %s in %s the trace last saw freed", fb(m.UnrecordedBytes), plural(m.UnrecordedCount, "block", "blocks"))
		whatZh = fmt.Sprintf("段中有 %d 个块（%s）在跟踪里最后一次是被释放的", m.UnrecordedCount, fb(m.UnrecordedBytes))
	}
	en = fmt.Sprintf("The trace and the segments disagree on device %d: %s. Events are missing from the trace: recording was stopped or events were skipped before the snapshot was taken, or the ring buffer lost them. The peak and the timeline come from the trace alone (%s in use at its end); the figures per device, the holders and the verdict come from the segments.",
		m.Device, what, fb(m.TraceEndBytes))
	zh = fmt.Sprintf("设备 %d 上的跟踪与段不一致：%s。跟踪缺少事件：在拍快照之前停止了记录或跳过了部分事件，或环形缓冲区丢失了它们。峰值和时间线只依据跟踪（其结束时在用 %s）；各设备的数字、占用者和结论依据段。",
		m.Device, whatZh, fb(m.TraceEndBytes))
	return en, zh
}
