package memory

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpudx/gpudx/snapshot"
)

// NoStack is the site of memory whose stack was not recorded (or held only
// hidden frames).
const NoStack = "<no stack recorded>"

// Frames that only say how the call reached the allocator: PyTorch's own
// viewers (MemoryViz.js, _memory_viz.py) hide the same ones.
var (
	hiddenNames = []string{"unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp",
		"_start", "__libc_start_main", "PyEval_", "PyObject_", "PyFunction_"}
	hiddenFiles = []string{"core/boxing", "/Register", "/Redispatch", "pythonrun.c",
		"Modules/main.c", "Objects/call.c", "Objects/methodobject.c", "pycore_ceval.h",
		"ceval.c", "cpython/abstract.h"}
	internalSuffixes = []string{".cpp", ".h", ".c", ".cc", ".cu"}
)

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func hidden(f *snapshot.Frame) bool {
	return containsAny(f.Name, hiddenNames) || containsAny(f.Filename, hiddenFiles)
}

// internal reports whether a frame is PyTorch's or the interpreter's rather
// than the user's: C/C++/CUDA sources, unknown files, torch's Python files
// (POSIX and Windows paths) and frozen bootstrap modules.
func internal(f *snapshot.Frame) bool {
	fn := f.Filename
	if fn == "" || fn == "??" {
		return true
	}
	for _, s := range internalSuffixes {
		if strings.HasSuffix(fn, s) {
			return true
		}
	}
	return strings.Contains(fn, "/torch/") || strings.Contains(fn, `\torch\`) ||
		strings.HasPrefix(fn, "torch/") || strings.Contains(fn, "<frozen ")
}

// siteText writes a frame as "name (filename:line)", or "name (filename)"
// when the line is unknown.
func siteText(f *snapshot.Frame) string {
	if f.Line == 0 {
		return f.Name + " (" + f.Filename + ")"
	}
	return f.Name + " (" + f.Filename + ":" + strconv.FormatInt(f.Line, 10) + ")"
}

// siteFrame picks the frame that names a stack's site: the first visible
// frame in user code, else the first visible frame; nil when every frame
// is hidden.
func siteFrame(frames []snapshot.Frame) *snapshot.Frame {
	var first *snapshot.Frame
	for i := range frames {
		f := &frames[i]
		if hidden(f) {
			continue
		}
		if !internal(f) {
			return f
		}
		if first == nil {
			first = f
		}
	}
	return first
}

func siteName(frames []snapshot.Frame) string {
	if f := siteFrame(frames); f != nil {
		return siteText(f)
	}
	return NoStack
}

// keptFrames converts the visible frames of a stack, innermost first. The
// result is never nil, so that JSON shows [] for an empty stack.
func keptFrames(frames []snapshot.Frame) []Frame {
	kept := make([]Frame, 0, len(frames))
	for i := range frames {
		if f := &frames[i]; !hidden(f) {
			kept = append(kept, Frame{Name: f.Name, Filename: f.Filename, Line: f.Line})
		}
	}
	return kept
}

// SiteOf names the allocation site of a stack (innermost frame first): the
// first frame in user code, skipping interpreter and allocator plumbing and
// PyTorch's own files, as "name (filename:line)". kept is the stack without
// the plumbing frames (never nil). A stack with no visible frame is
// NoStack.
func SiteOf(frames []snapshot.Frame) (site string, kept []Frame) {
	return siteName(frames), keptFrames(frames)
}

// siteNames caches the site of each stack of a snapshot: many blocks and
// events share a stack, and naming one scans its frames.
type siteNames struct {
	stacks [][]snapshot.Frame
	names  []string
	done   []bool
}

func newSiteNames(s *snapshot.Snapshot) *siteNames {
	return &siteNames{stacks: s.Stacks}
}

// frames returns a stack's frames; an id outside the table (a damaged
// file) reads as the empty stack.
func (c *siteNames) frames(id snapshot.StackID) []snapshot.Frame {
	if int(id) < len(c.stacks) {
		return c.stacks[id]
	}
	return nil
}

func (c *siteNames) name(id snapshot.StackID) string {
	if int(id) >= len(c.stacks) {
		return NoStack
	}
	if c.names == nil {
		c.names = make([]string, len(c.stacks))
		c.done = make([]bool, len(c.stacks))
	}
	if !c.done[id] {
		c.names[id] = siteName(c.stacks[id])
		c.done[id] = true
	}
	return c.names[id]
}

// siteGroup is the memory of one site.
type siteGroup struct {
	site      string
	bytes     uint64
	count     int
	best      uint64 // size of the largest member, whose stack is shown
	bestStack snapshot.StackID
}

// grouper sums memory by site.
type grouper struct {
	sites  *siteNames
	groups map[string]*siteGroup
}

func newGrouper(sites *siteNames) *grouper {
	return &grouper{sites: sites, groups: map[string]*siteGroup{}}
}

// add counts one allocation. Members are added in a fixed order (segments
// then blocks, or events by index), and only a strictly larger member
// replaces the shown stack, so ties keep the first one met.
func (g *grouper) add(stack snapshot.StackID, size uint64) {
	name := g.sites.name(stack)
	gr := g.groups[name]
	if gr == nil {
		gr = &siteGroup{site: name, best: size, bestStack: stack}
		g.groups[name] = gr
	} else if size > gr.best {
		gr.best, gr.bestStack = size, stack
	}
	gr.bytes += size
	gr.count++
}

// sorted returns the groups, most bytes first, then by site.
func (g *grouper) sorted() []*siteGroup {
	out := make([]*siteGroup, 0, len(g.groups))
	for _, gr := range g.groups {
		out = append(out, gr)
	}
	slices.SortFunc(out, func(x, y *siteGroup) int {
		if c := cmp.Compare(y.bytes, x.bytes); c != 0 {
			return c
		}
		return strings.Compare(x.site, y.site)
	})
	return out
}

// top returns the n largest sites with their shown stacks.
func (g *grouper) top(n int) []Site {
	all := g.sorted()
	out := make([]Site, 0, min(n, len(all)))
	for _, gr := range all[:min(n, len(all))] {
		out = append(out, Site{Site: gr.site, Bytes: gr.bytes, Count: gr.count,
			Frames: keptFrames(g.sites.frames(gr.bestStack))})
	}
	return out
}

// blockSites groups the snapshot's active blocks (all devices) by site.
func (a *analysis) blockSites() *grouper {
	g := newGrouper(a.sites)
	for i := range a.s.Segments {
		sg := &a.s.Segments[i]
		for j := range sg.Blocks {
			if b := &sg.Blocks[j]; b.State.Active() {
				g.add(b.Stack, b.Size)
			}
		}
	}
	return g
}

// topSites is who holds the memory at snapshot time.
func (a *analysis) topSites(n int) []Site {
	return a.blockSites().top(n)
}
