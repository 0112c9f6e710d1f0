package memory

import (
	"fmt"
	"sort"

	"github.com/gpudx/gpudx/snapshot"
)

// Options tunes Analyze. The zero value asks about device 0 for a
// Request; callers that want the busiest device set RequestDevice to -1.
type Options struct {
	// Request, when > 0, asks whether a request of this many bytes could be
	// served on RequestDevice from the snapshot-time state; it replaces the
	// trace's oom event as the subject of Report.OOM.
	Request uint64
	// RequestDevice is the device Request is asked on; -1 picks the device
	// with the most reserved memory (ties: the lowest ordinal).
	RequestDevice int
	// Capacity is the device's total memory in bytes (0 = unknown). The
	// snapshot never records it, and without it memory held outside
	// PyTorch's allocator cannot be told apart.
	Capacity uint64
	// Top is how many sites to list (default 10).
	Top int
	// TimelinePoints caps the timeline's points per device (default 1000).
	TimelinePoints int
}

const (
	defaultTop    = 10
	defaultPoints = 1000
)

func (o Options) top() int {
	if o.Top <= 0 {
		return defaultTop
	}
	return o.Top
}

func (o Options) points() int {
	if o.TimelinePoints <= 0 {
		return defaultPoints
	}
	return o.TimelinePoints
}

// Analyze computes the report of one snapshot: figures per device and pool,
// who holds the memory, the trace's peak and timeline, and the OOM
// explanation. It reads s and never changes it.
func Analyze(s *snapshot.Snapshot, opt Options) *Report {
	if s == nil {
		s = &snapshot.Snapshot{}
	}
	a := newAnalysis(s)
	r := &Report{
		Devices:  a.devices(),
		TopSites: a.topSites(opt.top()),
		Info:     info(s),
	}
	traces, bad := a.replayTraces(opt.points())
	r.TraceMismatch = bad
	r.Peak, r.Timeline = a.peak(traces, opt.top())
	r.OOM = a.explainOOM(traces, opt, r)
	return r
}

// analysis holds what several parts of the report share: the segments of
// each device and the site name of each stack, computed once.
type analysis struct {
	s     *snapshot.Snapshot
	devs  []int                       // devices with segments, ascending
	segs  map[int][]*snapshot.Segment // by device, in file order
	sites *siteNames
}

func newAnalysis(s *snapshot.Snapshot) *analysis {
	a := &analysis{s: s, segs: map[int][]*snapshot.Segment{}, sites: newSiteNames(s)}
	for i := range s.Segments {
		sg := &s.Segments[i]
		if _, ok := a.segs[sg.Device]; !ok {
			a.devs = append(a.devs, sg.Device)
		}
		a.segs[sg.Device] = append(a.segs[sg.Device], sg)
	}
	sort.Ints(a.devs)
	return a
}

// info says what the file held and how it was encoded.
func info(s *snapshot.Snapshot) Info {
	in := Info{Segments: len(s.Segments)}
	for i := range s.Segments {
		in.Blocks += len(s.Segments[i].Blocks)
	}
	for i := range s.Traces {
		in.TraceEvents += s.Traces[i].Len()
	}
	// Stacks[0] is the empty stack by convention; count the stacks that
	// record something, so a file without stacks says 0.
	for _, st := range s.Stacks {
		if len(st) > 0 {
			in.Stacks++
		}
	}
	in.Format = "dict"
	if s.Layout.SegmentsOnly {
		in.Format = "segment list"
	}
	in.Format += fmt.Sprintf(", pickle protocol %d", s.Layout.Protocol)
	if s.Layout.Gzip {
		in.Format += ", gzip"
	}
	if s.Settings != nil {
		in.AllocatorConf = s.Settings.AllocConf
		on := s.Settings.ExpandableSegments
		in.Expandable = &on
	}
	return in
}
