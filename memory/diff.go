package memory

import (
	"cmp"
	"slices"
	"strings"

	"github.com/gpudx/gpudx/snapshot"
)

// Compare reports what grew between two snapshots, by allocation site:
// the active memory of each site before and after, largest growth first,
// at most top sites (default 10) and only sites whose bytes changed. Sites
// are compared by name, so the two files need not share stack tables.
func Compare(before, after *snapshot.Snapshot, top int) *Diff {
	if top <= 0 {
		top = defaultTop
	}
	if before == nil {
		before = &snapshot.Snapshot{}
	}
	if after == nil {
		after = &snapshot.Snapshot{}
	}
	gb := newAnalysis(before).blockSites()
	ga := newAnalysis(after).blockSites()
	d := &Diff{Before: totals(before), After: totals(after), Sites: []SiteDiff{}}

	// shown is a changed site with the group whose stack it shows: the
	// after snapshot's when the site is still there, since a leak is read
	// where it ended up.
	type shown struct {
		SiteDiff
		g     *grouper
		group *siteGroup
	}
	var all []shown
	for _, g := range []*grouper{gb, ga} {
		for site := range g.groups {
			if g == ga && gb.groups[site] != nil {
				continue // already met in before
			}
			b, a := gb.groups[site], ga.groups[site]
			sh := shown{SiteDiff: SiteDiff{Site: site}, g: ga, group: a}
			if b != nil {
				sh.BytesBefore, sh.CountBefore = b.bytes, b.count
			}
			if a != nil {
				sh.BytesAfter, sh.CountAfter = a.bytes, a.count
			} else {
				sh.g, sh.group = gb, b
			}
			// Two's complement wrap-around gives the signed difference.
			sh.DeltaBytes = int64(sh.BytesAfter - sh.BytesBefore)
			if sh.DeltaBytes != 0 {
				all = append(all, sh)
			}
		}
	}
	slices.SortFunc(all, func(x, y shown) int {
		if c := cmp.Compare(y.DeltaBytes, x.DeltaBytes); c != 0 {
			return c
		}
		return strings.Compare(x.Site, y.Site)
	})
	for _, sh := range all[:min(top, len(all))] {
		sh.Frames = keptFrames(sh.g.sites.frames(sh.group.bestStack))
		d.Sites = append(d.Sites, sh.SiteDiff)
	}
	return d
}

// totals sums a snapshot's reserved and allocated bytes and its blocks over
// all devices.
func totals(s *snapshot.Snapshot) DiffTotals {
	var t DiffTotals
	for i := range s.Segments {
		sg := &s.Segments[i]
		t.ReservedBytes += sg.TotalSize
		t.Blocks += len(sg.Blocks)
		for j := range sg.Blocks {
			if b := &sg.Blocks[j]; b.State == snapshot.ActiveAllocated {
				t.AllocatedBytes += b.Size
			}
		}
	}
	return t
}
