package memory

import (
	"testing"

	"github.com/gpudx/gpudx/snapshot"
)

// TestAllocatorPath: each step of PyTorch's malloc on generated snapshots
// whose answer follows from CUDACachingAllocator.cpp's rules.
func TestAllocatorPath(t *testing.T) {
	const s0 = uint64(0x7f0000000000)
	one := func(st *snapshot.Settings, segs ...snapshot.Segment) *snapshot.Snapshot {
		return &snapshot.Snapshot{Segments: segs, Settings: st}
	}
	for _, c := range []struct {
		name    string
		s       *snapshot.Snapshot
		opt     Options
		rounded uint64
		path    string
		verdict string
	}{
		{
			// Best fit of 30 MiB for 25 MiB: split, served from the cache.
			name:    "cached block",
			s:       one(nil, seg(0, s0, []snapshot.Block{alloc(10*mib, 10*mib, 0), free(30 * mib)})),
			opt:     Options{Request: 25 * mib},
			rounded: 25 * mib, path: "cached_block:succeeds:26214400/31457280", verdict: VerdictFits,
		},
		{
			// The best fit is the smallest block that holds it: 30 MiB,
			// not 50 MiB.
			name:    "best fit is the smallest block",
			s:       one(nil, seg(0, s0, []snapshot.Block{free(50 * mib), alloc(10*mib, 10*mib, 0), free(30 * mib)})),
			opt:     Options{Request: 25 * mib},
			rounded: 25 * mib, path: "cached_block:succeeds:26214400/31457280", verdict: VerdictFits,
		},
		{
			// A block from another stream never serves it.
			name:    "other stream",
			s:       one(nil, seg(0, s0, []snapshot.Block{alloc(10*mib, 10*mib, 0), free(30 * mib)}, onStream(0x99))),
			opt:     Options{Request: 25 * mib, Capacity: 100 * mib},
			rounded: 25 * mib, path: "cached_block:fails:26214400/0 new_segment:succeeds:27262976/62914560", verdict: VerdictNewSegment,
		},
		{
			// max_split_size 40 MiB: a 60 MiB free block is oversize and
			// refused to a 25 MiB request. It is free and large enough, so
			// neither fragmentation nor live tensors: the step's text names
			// max_split_size.
			name:    "oversize block refused to a normal request",
			s:       one(&snapshot.Settings{MaxSplitSize: int64(40 * mib)}, seg(0, s0, []snapshot.Block{alloc(10*mib, 10*mib, 0), free(60 * mib)})),
			opt:     Options{Request: 25 * mib, Capacity: 70 * mib},
			rounded: 25 * mib, path: "cached_block:fails:26214400/0 new_segment:fails:27262976/0 release_oversize:skipped:27262976/- release_cached:fails:27262976/0", verdict: VerdictUnknown,
		},
		{
			// An oversize request takes an oversize block less than 20 MiB
			// larger (max_non_split_rounding_size), never one 20 MiB larger.
			name:    "oversize request: within 20 MiB",
			s:       one(&snapshot.Settings{MaxSplitSize: int64(40 * mib)}, seg(0, s0, []snapshot.Block{alloc(10*mib, 10*mib, 0), free(60 * mib)})),
			opt:     Options{Request: 45 * mib},
			rounded: 45 * mib, path: "cached_block:succeeds:47185920/62914560", verdict: VerdictFits,
		},
		{
			name:    "oversize request: 20 MiB larger is refused, the free oversize segment released",
			s:       one(&snapshot.Settings{MaxSplitSize: int64(40 * mib)}, seg(0, s0, []snapshot.Block{free(80 * mib)}), seg(0, s0+256*mib, []snapshot.Block{alloc(10*mib, 10*mib, 0)})),
			opt:     Options{Request: 45 * mib, Capacity: 100 * mib},
			rounded: 45 * mib, path: "cached_block:fails:47185920/0 new_segment:fails:48234496/10485760 release_oversize:succeeds:48234496/94371840", verdict: VerdictAfterRelease,
		},
		{
			// roundup_power2_divisions 4 in the 1-2 MiB interval: 1.1 MiB
			// rounds to 1.25 MiB, which a 1.2 MiB block cannot hold.
			name: "power-of-two rounding",
			s: one(&snapshot.Settings{RoundupPower2Divs: map[string]int64{"1": 4}},
				seg(0, s0, []snapshot.Block{alloc(2*mib, 2*mib, 0), free(1258291), free(20*mib - 2*mib - 1258291)}, sized(20*mib))),
			opt:     Options{Request: 1153434, Capacity: 40 * mib},
			rounded: 1310720, path: "cached_block:succeeds:1310720/17616077", verdict: VerdictFits,
		},
		{
			// A request between 1 and 10 MiB gets a 20 MiB segment; the
			// device's free memory (capacity - reserved) is 15 MiB; the
			// entirely free 8 MiB segment of another stream is released
			// and then 23 MiB is free.
			name: "release then retry",
			s: one(nil, seg(0, s0, []snapshot.Block{alloc(20*mib, 20*mib, 0)}),
				seg(0, s0+64*mib, []snapshot.Block{free(8 * mib)}, onStream(0x5))),
			opt:     Options{Request: 3 * mib, Capacity: 43 * mib},
			rounded: 3 * mib, path: "cached_block:fails:3145728/0 new_segment:fails:20971520/15728640 release_cached:succeeds:20971520/24117248", verdict: VerdictAfterRelease,
		},
		{
			// A segment whose only block is pending free is released after
			// the sync: 20 MiB given back.
			name: "pending free released after the sync",
			s: one(nil, seg(0, s0, []snapshot.Block{alloc(20*mib, 20*mib, 0)}),
				seg(0, s0+64*mib, []snapshot.Block{pending(20*mib, 20*mib, 0)})),
			opt:     Options{Request: 3 * mib},
			rounded: 3 * mib, path: "cached_block:fails:3145728/0 new_segment:unknown:20971520/- release_cached:succeeds:20971520/20971520", verdict: VerdictAfterRelease,
		},
		{
			// Expandable segments: 10 MiB free at the end of the mapped
			// range; 25 MiB needs 15 MiB more, mapped as one 20 MiB page.
			name: "expandable segment grows by pages",
			s: one(&snapshot.Settings{ExpandableSegments: true},
				seg(0, s0, []snapshot.Block{alloc(30*mib, 30*mib, 0), free(10 * mib)}, expandable)),
			opt:     Options{Request: 25 * mib, Capacity: 60 * mib},
			rounded: 25 * mib, path: "cached_block:fails:26214400/0 new_segment:succeeds:20971520/20971520", verdict: VerdictNewSegment,
		},
		{
			// garbage_collection_threshold set: the step is listed, skipped
			// (it needs a memory fraction the snapshot does not record).
			name:    "garbage collection threshold",
			s:       one(&snapshot.Settings{GCThreshold: 0.6}, seg(0, s0, []snapshot.Block{alloc(20*mib, 20*mib, 0)})),
			opt:     Options{Request: 30 * mib, Capacity: 100 * mib},
			rounded: 30 * mib, path: "cached_block:fails:31457280/0 gc:skipped:0/- new_segment:succeeds:31457280/83886080", verdict: VerdictNewSegment,
		},
		{
			// Nothing fits anywhere and the stranded pieces would not either:
			// live tensors.
			name:    "every step fails",
			s:       one(nil, seg(0, s0, []snapshot.Block{alloc(60*mib, 60*mib, 0), free(2 * mib)})),
			opt:     Options{Request: 30 * mib, Capacity: 70 * mib},
			rounded: 30 * mib, path: "cached_block:fails:31457280/0 new_segment:fails:31457280/8388608 release_cached:fails:31457280/8388608", verdict: VerdictLiveTensors,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := Analyze(c.s, c.opt).OOM
			if o.RoundedBytes != c.rounded {
				t.Errorf("rounded %d, want %d", o.RoundedBytes, c.rounded)
			}
			if p := pathString(o.Path); p != c.path {
				t.Errorf("path\n got %s\nwant %s", p, c.path)
			}
			if o.Verdict != c.verdict {
				t.Errorf("verdict %s, want %s", o.Verdict, c.verdict)
			}
			for _, s := range o.Path {
				if s.Text == "" || s.TextZH == "" {
					t.Errorf("step %s has no text", s.Step)
				}
			}
		})
	}
}

func TestRoundSize(t *testing.T) {
	div := &snapshot.Settings{RoundupPower2Divs: map[string]int64{"1": 4, "2": 8, "32768": 2}}
	for _, c := range []struct {
		n    uint64
		st   *snapshot.Settings
		want uint64
	}{
		{1, nil, 512}, {512, nil, 512}, {513, nil, 1024}, {3*mib + 1, nil, 3*mib + 512},
		{1200 * 1024, div, 1280 * 1024}, // PyTorch's own example, scaled by 1024
		{mib + 1, div, 1280 * 1024},
		{2 * mib, div, 2 * mib},           // a power of two stays
		{3*mib + 1, div, 3*mib + 256*kib}, // 8 divisions of [2, 4) MiB
		{100 * gib, div, 128 * gib},       // the last interval, 2 divisions of [64, 128) GiB
		{4 * kib, div, 4 * kib},           // below 1 MiB: the first interval, but size <= 512 × 4
	} {
		if got := roundSize(c.n, c.st); got != c.want {
			t.Errorf("roundSize(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	for _, c := range [][2]uint64{{1, 2 * mib}, {mib, 2 * mib}, {mib + 512, 20 * mib}, {10*mib - 512, 20 * mib}, {10 * mib, 10 * mib}, {11 * mib, 12 * mib}} {
		if got := allocationSize(c[0]); got != c[1] {
			t.Errorf("allocationSize(%d) = %d, want %d", c[0], got, c[1])
		}
	}
}
