package memory

import (
	"reflect"
	"testing"

	"github.com/gpudx/gpudx/snapshot"
)

// figuresSnapshot: device 0 has two default large segments (one mixed, one
// wholly free), a default small segment with a pending-free block, and an
// expandable segment in private pool (1,2); device 1, listed first in the
// file, has one small segment with no blocks.
func figuresSnapshot() *snapshot.Snapshot {
	return &snapshot.Snapshot{
		Segments: []snapshot.Segment{
			seg(1, 0x50000000, nil, small, sized(2*mib)),
			seg(0, 0x10000000, []snapshot.Block{
				alloc(4*mib, 4*mib-100, 1),
				blk(2*mib, 7, snapshot.Inactive, 0), // stale requested size: ignored
				alloc(8*mib, 8*mib, 2),
				free(6 * mib),
			}),
			seg(0, 0x20000000, []snapshot.Block{free(20 * mib)}),
			seg(0, 0x30000000, []snapshot.Block{
				alloc(512, 100, 3),
				pending(1024, 1000, 3),
				free(512),
				alloc(1536, 1500, 4),
				free(2*mib - 3584),
			}, small),
			seg(0, 0x40000000, []snapshot.Block{alloc(20*mib, 20*mib-1, 5)}, pool(1, 2), expandable),
		},
	}
}

func TestFigures(t *testing.T) {
	r := Analyze(figuresSnapshot(), Options{})
	large := Figures{
		ReservedBytes: 41943040, AllocatedBytes: 12582912, ActiveBytes: 12582912,
		InactiveBytes: 29360128, RequestedBytes: 12582812, RoundingBytes: 100,
		ReleasableBytes: 20971520, StrandedBytes: 8388608, LargestFreeBlockBytes: 20971520,
		Fragmentation:       0.2857142857142857,
		TypicalRequestBytes: 4194304, SmallFreeBlocks: 1,
		Segments: 2, Blocks: 5,
		SegmentStates: SegStates{Mixed: 1, Free: 1},
		BlockStates: BlockCount{
			ActiveAllocated: CountBytes{2, 12582912},
			Inactive:        CountBytes{3, 29360128},
		},
	}
	smallPool := Figures{
		ReservedBytes: 2097152, AllocatedBytes: 2048, ActiveBytes: 3072,
		InactiveBytes: 2094080, RequestedBytes: 2600, RoundingBytes: 472,
		StrandedBytes: 2094080, LargestFreeBlockBytes: 2093568,
		Fragmentation:       0.00024449877750609694,
		TypicalRequestBytes: 512, SmallFreeBlocks: 0,
		Segments: 1, Blocks: 5,
		SegmentStates: SegStates{Mixed: 1},
		BlockStates: BlockCount{
			ActiveAllocated:   CountBytes{2, 2048},
			ActivePendingFree: CountBytes{1, 1024},
			Inactive:          CountBytes{2, 2094080},
		},
	}
	private := Figures{
		ReservedBytes: 20971520, AllocatedBytes: 20971520, ActiveBytes: 20971520,
		RequestedBytes: 20971519, RoundingBytes: 1,
		TypicalRequestBytes: 20971520,
		Segments:            1, Blocks: 1,
		SegmentStates:      SegStates{Full: 1},
		BlockStates:        BlockCount{ActiveAllocated: CountBytes{1, 20971520}},
		ExpandableSegments: 1, ExpandableBytes: 20971520,
	}
	dev0 := Figures{
		ReservedBytes: 65011712, AllocatedBytes: 33556480, ActiveBytes: 33557504,
		InactiveBytes: 31454208, RequestedBytes: 33556931, RoundingBytes: 573,
		ReleasableBytes: 20971520, StrandedBytes: 10482688, LargestFreeBlockBytes: 20971520,
		Fragmentation: 0.333268222808217,
		// The device's median is over all its allocated blocks (512, 1536,
		// 4 MiB, 8 MiB, 20 MiB), but its small-free count is the pools' sum
		// (1 + 0 + 0): compared with 4 MiB device-wide it would be 3.
		TypicalRequestBytes: 4194304, SmallFreeBlocks: 1,
		Segments: 4, Blocks: 11,
		SegmentStates: SegStates{Full: 1, Mixed: 2, Free: 1},
		BlockStates: BlockCount{
			ActiveAllocated:   CountBytes{5, 33556480},
			ActivePendingFree: CountBytes{1, 1024},
			Inactive:          CountBytes{5, 31454208},
		},
		ExpandableSegments: 1, ExpandableBytes: 20971520,
	}
	dev1 := Figures{ReservedBytes: 2097152, Segments: 1, SegmentStates: SegStates{Free: 1}}
	want := []Device{
		{Device: 0, Figures: dev0, Pools: []Pool{
			{Pool: "large", Kind: "large", Figures: large},
			{Pool: "small", Kind: "small", Figures: smallPool},
			{Pool: "private 1,2 large", Kind: "large", PoolID: snapshot.PoolID{1, 2}, Figures: private},
		}},
		{Device: 1, Figures: dev1, Pools: []Pool{{Pool: "small", Kind: "small", Figures: dev1}}},
	}
	if !reflect.DeepEqual(r.Devices, want) {
		t.Errorf("devices:\n got %s\nwant %s", js(t, r.Devices), js(t, want))
	}
}

func TestPoolOrder(t *testing.T) {
	one := func(opts ...func(*snapshot.Segment)) snapshot.Segment {
		return seg(0, 0, []snapshot.Block{free(512)}, opts...)
	}
	s := &snapshot.Snapshot{Segments: []snapshot.Segment{
		one(pool(1, 0), small),
		one(pool(0, 5)),
		one(small),
		one(pool(-1, 3)),
		one(pool(1, 0)),
		one(),
	}}
	var got []string
	for _, p := range Analyze(s, Options{}).Devices[0].Pools {
		got = append(got, p.Pool)
	}
	want := []string{"large", "small", "private -1,3 large", "private 0,5 large", "private 1,0 large", "private 1,0 small"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pools: got %q, want %q", got, want)
	}
}

// TestTypicalRequest checks the lower median and the strict "smaller than"
// of small free blocks.
func TestTypicalRequest(t *testing.T) {
	for _, c := range []struct {
		name     string
		blocks   []snapshot.Block
		typical  uint64
		smallCnt int
	}{
		{"none allocated", []snapshot.Block{free(512), pending(1024, 1024, 0)}, 0, 0},
		{"one", []snapshot.Block{alloc(1024, 1000, 0), free(512), free(1024)}, 1024, 1},
		{"even count takes the lower", []snapshot.Block{alloc(4096, 1, 0), alloc(1024, 1, 0), free(2048), alloc(3072, 1, 0), alloc(2048, 1, 0), free(1536)}, 2048, 1},
		{"odd count", []snapshot.Block{alloc(4096, 1, 0), alloc(1024, 1, 0), alloc(3072, 1, 0), free(2560), free(3072), free(512)}, 3072, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &snapshot.Snapshot{Segments: []snapshot.Segment{seg(0, 0, c.blocks)}}
			d := Analyze(s, Options{}).Devices[0]
			if d.TypicalRequestBytes != c.typical || d.SmallFreeBlocks != c.smallCnt {
				t.Errorf("typical %d small %d, want %d %d", d.TypicalRequestBytes, d.SmallFreeBlocks, c.typical, c.smallCnt)
			}
		})
	}
}

func TestInfo(t *testing.T) {
	on := true
	for _, c := range []struct {
		name string
		s    *snapshot.Snapshot
		want Info
	}{
		{"empty", &snapshot.Snapshot{}, Info{Format: "dict, pickle protocol 0"}},
		{"segment list gzip", &snapshot.Snapshot{
			Layout:   snapshot.Layout{Protocol: 4, Gzip: true, SegmentsOnly: true},
			Segments: []snapshot.Segment{seg(0, 0, []snapshot.Block{free(512), alloc(512, 1, 1)}), seg(0, 1<<20, nil)},
			Stacks:   [][]snapshot.Frame{nil, {fr("f", "a.py", 1)}, {fr("g", "a.py", 2)}},
		}, Info{Segments: 2, Blocks: 2, Stacks: 2, Format: "segment list, pickle protocol 4, gzip"}},
		{"dict with settings and traces", &snapshot.Snapshot{
			Layout:   snapshot.Layout{Protocol: 5},
			Settings: &snapshot.Settings{AllocConf: "expandable_segments:True", ExpandableSegments: true},
			Traces: []snapshot.Trace{
				snapshot.TraceOf(ev(snapshot.ActionSnapshot, 0, 0)),
				{},
				snapshot.TraceOf(ev(snapshot.ActionSnapshot, 0, 0), ev(snapshot.ActionSnapshot, 0, 0)),
			},
		}, Info{TraceEvents: 3, Format: "dict, pickle protocol 5", AllocatorConf: "expandable_segments:True", Expandable: &on}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Analyze(c.s, Options{})
			if !reflect.DeepEqual(r.Info, c.want) {
				t.Errorf("info:\n got %s\nwant %s", js(t, r.Info), js(t, c.want))
			}
		})
	}
}

// TestEmpty: an empty snapshot gives empty arrays (JSON []) and nulls.
func TestEmpty(t *testing.T) {
	for _, s := range []*snapshot.Snapshot{nil, {}} {
		r := Analyze(s, Options{})
		if r.Devices == nil || len(r.Devices) != 0 || r.TopSites == nil || len(r.TopSites) != 0 ||
			r.OOM != nil || r.Peak != nil || r.Timeline != nil {
			t.Errorf("empty snapshot: %s", js(t, r))
		}
	}
}
