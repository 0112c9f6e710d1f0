package memview

import (
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/gpudx/gpudx/memory"
	"github.com/gpudx/gpudx/snapshot"
)

// Profile builds a pprof profile of the memory in use at snapshot time:
// sample types ("inuse_space", "bytes") and ("inuse_objects", "count"), one
// sample per distinct stack (the frames memory.SiteOf keeps) of the blocks
// that are not inactive, innermost frame first. Blocks without a stack get
// one frame named "<no stack recorded>". `go tool pprof -http` shows it as a
// flame graph.
func Profile(s *snapshot.Snapshot, comment string) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "inuse_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"},
		},
		DefaultSampleType: "inuse_space",
		PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:            1,
	}
	if comment != "" {
		p.Comments = []string{comment}
	}
	type fnKey struct{ name, file string }
	type locKey struct {
		fn   uint64
		line int64
	}
	funcs := map[fnKey]*profile.Function{}
	locs := map[locKey]*profile.Location{}
	samples := map[string]*profile.Sample{}           // by kept frames
	byStack := map[snapshot.StackID]*profile.Sample{} // the same, once per stack id
	location := func(f memory.Frame) *profile.Location {
		fk := fnKey{f.Name, f.Filename}
		fn := funcs[fk]
		if fn == nil {
			fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: f.Name, SystemName: f.Name, Filename: f.Filename}
			if strings.HasPrefix(f.Name, "<") {
				// Python's <module>, <lambda>, <listcomp>: a SystemName
				// unlike Name tells pprof the name is already demangled,
				// or it would strip the <...> as C++ template arguments.
				fn.SystemName = ""
			}
			funcs[fk] = fn
			p.Function = append(p.Function, fn)
		}
		lk := locKey{fn.ID, f.Line}
		loc := locs[lk]
		if loc == nil {
			loc = &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn, Line: f.Line}}}
			locs[lk] = loc
			p.Location = append(p.Location, loc)
		}
		return loc
	}
	var key strings.Builder
	sampleOf := func(id snapshot.StackID) *profile.Sample {
		if smp, ok := byStack[id]; ok {
			return smp
		}
		var st []snapshot.Frame
		if int(id) < len(s.Stacks) {
			st = s.Stacks[id]
		}
		_, frames := memory.SiteOf(st)
		if len(frames) == 0 {
			frames = []memory.Frame{{Name: "<no stack recorded>"}}
		}
		key.Reset()
		for _, f := range frames {
			key.WriteString(f.Name)
			key.WriteByte(0)
			key.WriteString(f.Filename)
			key.WriteByte(0)
			key.WriteString(strconv.FormatInt(f.Line, 10))
			key.WriteByte(0)
		}
		smp := samples[key.String()]
		if smp == nil {
			smp = &profile.Sample{Value: []int64{0, 0}}
			for _, f := range frames {
				smp.Location = append(smp.Location, location(f))
			}
			samples[key.String()] = smp
			p.Sample = append(p.Sample, smp)
		}
		byStack[id] = smp
		return smp
	}
	for i := range s.Segments {
		seg := &s.Segments[i]
		for j := range seg.Blocks {
			if blk := &seg.Blocks[j]; blk.State.Active() {
				smp := sampleOf(blk.Stack)
				// Saturate rather than wrap negative (pprof values are int64).
				smp.Value[0] = int64(min(uint64(smp.Value[0])+min(blk.Size, math.MaxInt64), math.MaxInt64))
				smp.Value[1]++
			}
		}
	}
	return p
}

// Pprof writes Profile(s) gzip-compressed, as `go tool pprof` reads it.
func Pprof(w io.Writer, s *snapshot.Snapshot, comment string) error {
	return Profile(s, comment).Write(w)
}
