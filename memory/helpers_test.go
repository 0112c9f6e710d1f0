package memory

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/snapshot"
)

const (
	kib = uint64(1) << 10
	mib = uint64(1) << 20
	gib = uint64(1) << 30
)

// blk is a block; seg fills in the addresses.
func blk(size, req uint64, st snapshot.BlockState, stack snapshot.StackID) snapshot.Block {
	return snapshot.Block{Size: size, RequestedSize: req, State: st, Stack: stack}
}

func alloc(size, req uint64, stack snapshot.StackID) snapshot.Block {
	return blk(size, req, snapshot.ActiveAllocated, stack)
}

func pending(size, req uint64, stack snapshot.StackID) snapshot.Block {
	return blk(size, req, snapshot.ActivePendingFree, stack)
}

func free(size uint64) snapshot.Block { return blk(size, 0, snapshot.Inactive, 0) }

// seg is a default-pool large segment on stream 0 whose blocks tile it from
// addr; opts adjust it.
func seg(dev int, addr uint64, blocks []snapshot.Block, opts ...func(*snapshot.Segment)) snapshot.Segment {
	s := snapshot.Segment{Device: dev, Address: addr, Blocks: blocks}
	a := addr
	for i := range s.Blocks {
		s.Blocks[i].Address = a
		a += s.Blocks[i].Size
		s.TotalSize += s.Blocks[i].Size
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func small(s *snapshot.Segment)      { s.Small = true }
func expandable(s *snapshot.Segment) { s.Expandable = true }
func pool(a, b int64) func(*snapshot.Segment) {
	return func(s *snapshot.Segment) { s.Pool = snapshot.PoolID{a, b} }
}
func onStream(st uint64) func(*snapshot.Segment) {
	return func(s *snapshot.Segment) { s.Stream = st }
}
func sized(n uint64) func(*snapshot.Segment) {
	return func(s *snapshot.Segment) { s.TotalSize = n }
}

// fr is a frame.
func fr(name, file string, line int64) snapshot.Frame {
	return snapshot.Frame{Name: name, Filename: file, Line: line}
}

// ev builds trace entries.
func ev(a snapshot.Action, addr, size uint64, opts ...func(*snapshot.TraceEntry)) snapshot.TraceEntry {
	e := snapshot.TraceEntry{Action: a, Addr: addr, Size: size}
	for _, o := range opts {
		o(&e)
	}
	return e
}

func at(us int64) func(*snapshot.TraceEntry) { return func(e *snapshot.TraceEntry) { e.TimeUS = us } }
func stack(id snapshot.StackID) func(*snapshot.TraceEntry) {
	return func(e *snapshot.TraceEntry) { e.Stack, e.HasStack = id, true }
}
func streamIdx(i uint16) func(*snapshot.TraceEntry) {
	return func(e *snapshot.TraceEntry) { e.Stream = i }
}

// js renders a value as indented JSON, for readable failure messages.
func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ptr(n uint64) *uint64 { return &n }

// pathString writes a path as step:outcome:need/have ("-" when have is not
// known), steps separated by spaces.
func pathString(p []Step) string {
	var b strings.Builder
	for i, st := range p {
		if i > 0 {
			b.WriteByte(' ')
		}
		h := "-"
		if st.HaveBytes != nil {
			h = strconv.FormatUint(*st.HaveBytes, 10)
		}
		fmt.Fprintf(&b, "%s:%s:%d/%s", st.Step, st.Outcome, st.NeedBytes, h)
	}
	return b.String()
}
