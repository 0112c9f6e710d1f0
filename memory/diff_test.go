package memory

import (
	"reflect"
	"testing"

	"github.com/gpudx/gpudx/snapshot"
)

func TestCompare(t *testing.T) {
	// The two files have their own stack tables: sites match by name.
	before := &snapshot.Snapshot{
		Stacks: [][]snapshot.Frame{nil, {fr("cache", "/a/c.py", 1)}, {fr("grad", "/a/g.py", 2)}, {fr("gone", "/a/x.py", 3)}, {fr("same", "/a/s.py", 4)}},
		Segments: []snapshot.Segment{
			seg(0, 0, []snapshot.Block{alloc(mib, mib, 1), alloc(2*mib, 2*mib, 2), alloc(mib, mib, 3), alloc(mib, mib, 4), free(3 * mib)}),
		},
	}
	after := &snapshot.Snapshot{
		Stacks: [][]snapshot.Frame{nil, {fr("same", "/a/s.py", 4)}, {fr("cache", "/a/c.py", 1)}, {fr("new", "/a/n.py", 5)}, {fr("torch_op", "x.cpp", 0), fr("cache", "/a/c.py", 1)}, {fr("grad", "/a/g.py", 2)}},
		Segments: []snapshot.Segment{
			seg(0, 0, []snapshot.Block{alloc(mib, mib, 2), alloc(4*mib, 4*mib, 4), pending(mib, mib, 5), alloc(mib, mib, 1), free(mib)}),
			seg(1, 0, []snapshot.Block{alloc(2*mib, 2*mib, 3), free(18 * mib)}),
		},
	}
	// cache: 1 → 5 MiB (+4; shown stack: after's largest, stack 4);
	// new: 0 → 2 (+2); grad: 2 → 1 (-1); gone: 1 → 0 (-1); same: unchanged.
	d := Compare(before, after, 0)
	want := &Diff{
		Before: DiffTotals{ReservedBytes: 8 * mib, AllocatedBytes: 5 * mib, Blocks: 5},
		After:  DiffTotals{ReservedBytes: 28 * mib, AllocatedBytes: 8 * mib, Blocks: 7},
		Sites: []SiteDiff{
			{Site: "cache (/a/c.py:1)", BytesBefore: mib, BytesAfter: 5 * mib, DeltaBytes: 4 << 20, CountBefore: 1, CountAfter: 2,
				Frames: []Frame{{"torch_op", "x.cpp", 0}, {"cache", "/a/c.py", 1}}},
			{Site: "new (/a/n.py:5)", BytesAfter: 2 * mib, DeltaBytes: 2 << 20, CountAfter: 1, Frames: []Frame{{"new", "/a/n.py", 5}}},
			{Site: "gone (/a/x.py:3)", BytesBefore: mib, DeltaBytes: -1 << 20, CountBefore: 1, Frames: []Frame{{"gone", "/a/x.py", 3}}},
			{Site: "grad (/a/g.py:2)", BytesBefore: 2 * mib, BytesAfter: mib, DeltaBytes: -1 << 20, CountBefore: 1, CountAfter: 1, Frames: []Frame{{"grad", "/a/g.py", 2}}},
		},
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("diff:\n got %s\nwant %s", js(t, d), js(t, want))
	}
	if d := Compare(before, after, 1); len(d.Sites) != 1 || d.Sites[0].Site != "cache (/a/c.py:1)" {
		t.Errorf("top 1: %s", js(t, d.Sites))
	}
	if d := Compare(before, before, 10); d.Sites == nil || len(d.Sites) != 0 || d.Before != d.After {
		t.Errorf("no change: %s", js(t, d))
	}
	if d := Compare(nil, after, 10); len(d.Sites) != 4 || d.Before != (DiffTotals{}) {
		t.Errorf("from nothing: %s", js(t, d))
	}
}
