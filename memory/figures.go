package memory

import (
	"fmt"
	"slices"

	"github.com/gpudx/gpudx/snapshot"
)

// poolKey names one pool of a device: the pool id and its small or large
// half (the allocator keeps them apart: a small block never serves a large
// request).
type poolKey struct {
	id    snapshot.PoolID
	small bool
}

// less orders pools: the default pool first, then private pools by id, the
// large half before the small one.
func (k poolKey) less(o poolKey) bool {
	if k.id != o.id {
		if k.id.Private() != o.id.Private() {
			return !k.id.Private()
		}
		if k.id[0] != o.id[0] {
			return k.id[0] < o.id[0]
		}
		return k.id[1] < o.id[1]
	}
	return !k.small && o.small
}

func (k poolKey) kind() string {
	if k.small {
		return "small"
	}
	return "large"
}

func (k poolKey) name() string {
	if !k.id.Private() {
		return k.kind()
	}
	return fmt.Sprintf("private %d,%d %s", k.id[0], k.id[1], k.kind())
}

// devices computes the figures of every device that has segments, and of
// each of its pools.
func (a *analysis) devices() []Device {
	out := make([]Device, 0, len(a.devs))
	for _, d := range a.devs {
		segs := a.segs[d]
		byPool := map[poolKey][]*snapshot.Segment{}
		var keys []poolKey
		for _, sg := range segs {
			k := poolKey{sg.Pool, sg.Small}
			if _, ok := byPool[k]; !ok {
				keys = append(keys, k)
			}
			byPool[k] = append(byPool[k], sg)
		}
		slices.SortFunc(keys, func(x, y poolKey) int {
			switch {
			case x.less(y):
				return -1
			case y.less(x):
				return 1
			}
			return 0
		})
		dev := Device{Device: d, Figures: figuresOf(segs), Pools: make([]Pool, 0, len(keys))}
		// Each pool compares its free blocks with its own typical request
		// (a 2 MiB small-pool hole is not "small" next to small tensors),
		// so the device's count is the pools' sum, not a device-wide test.
		dev.SmallFreeBlocks = 0
		for _, k := range keys {
			p := Pool{Pool: k.name(), Kind: k.kind(), PoolID: k.id, Figures: figuresOf(byPool[k])}
			dev.SmallFreeBlocks += p.SmallFreeBlocks
			dev.Pools = append(dev.Pools, p)
		}
		out = append(out, dev)
	}
	return out
}

func (c *CountBytes) add(n uint64) {
	c.Count++
	c.Bytes += n
}

// figuresOf computes the figures of a set of segments (see the package's
// JSON documentation for each definition).
func figuresOf(segs []*snapshot.Segment) Figures {
	var f Figures
	var allocated []uint64 // sizes of active_allocated blocks, for the median
	for _, sg := range segs {
		f.Segments++
		f.ReservedBytes += sg.TotalSize
		if sg.Expandable {
			f.ExpandableSegments++
			f.ExpandableBytes += sg.TotalSize
		}
		var used, free int
		var freeBytes uint64
		for i := range sg.Blocks {
			b := &sg.Blocks[i]
			f.Blocks++
			switch b.State {
			case snapshot.Inactive:
				free++
				freeBytes += b.Size
				f.BlockStates.Inactive.add(b.Size)
				f.LargestFreeBlockBytes = max(f.LargestFreeBlockBytes, b.Size)
				continue
			case snapshot.ActiveAllocated:
				f.BlockStates.ActiveAllocated.add(b.Size)
				f.AllocatedBytes += b.Size
				allocated = append(allocated, b.Size)
			default:
				// Pending free, and any state a future reader might add:
				// not Inactive, so the memory is not reusable yet.
				f.BlockStates.ActivePendingFree.add(b.Size)
			}
			used++
			f.ActiveBytes += b.Size
			f.RequestedBytes += b.RequestedSize
		}
		f.InactiveBytes += freeBytes
		switch {
		case used == 0:
			f.SegmentStates.Free++
			f.ReleasableBytes += freeBytes
		case free == 0:
			f.SegmentStates.Full++
		default:
			f.SegmentStates.Mixed++
			f.StrandedBytes += freeBytes
		}
	}
	if f.ActiveBytes > f.RequestedBytes {
		f.RoundingBytes = f.ActiveBytes - f.RequestedBytes
	}
	if f.InactiveBytes > 0 {
		f.Fragmentation = 1 - float64(f.LargestFreeBlockBytes)/float64(f.InactiveBytes)
	}
	if len(allocated) > 0 {
		slices.Sort(allocated)
		f.TypicalRequestBytes = allocated[(len(allocated)-1)/2]
		for _, sg := range segs {
			for i := range sg.Blocks {
				if b := &sg.Blocks[i]; b.State == snapshot.Inactive && b.Size < f.TypicalRequestBytes {
					f.SmallFreeBlocks++
				}
			}
		}
	}
	return f
}
