package memview

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpudx/gpudx/memory"
	"github.com/gpudx/gpudx/snapshot"
)

// MaxDrawnBlocks caps the blocks the HTML segment map draws: the largest
// segments are drawn whole until their blocks reach the cap; the page says
// what was left out.
const MaxDrawnBlocks = 20000

//go:embed html.tmpl
var htmlTemplate string

// pageTmpl is never executed itself: HTML executes a clone whose label
// functions speak the page's language.
var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"size":   size,
	"pct":    percent,
	"group":  group,
	"when":   when,
	"device": device,
	"frame":  frameText,
	"stream": stream,
	"inc":    func(i int) int { return i + 1 },
	"deref":  func(b *bool) bool { return b != nil && *b },
	"derefu": func(n *uint64) uint64 { return *n },
	// okverdict: a --request answer that needs no fix.
	"okverdict": func(v string) bool {
		return v == memory.VerdictFits || v == memory.VerdictNewSegment || v == memory.VerdictAfterRelease
	},
	"t":       func(string, ...any) string { return "" },
	"markup":  func(string) template.HTML { return "" },
	"verdict": func(string) string { return "" },
	"site":    func(string) string { return "" },
	"sitecls": func(string) string { return "" },
}).Parse(htmlTemplate))

// labelFuncs are the template functions that write the fixed words of the
// page in L's language: t formats a label (fmt verbs, the arguments given),
// markup writes a label that holds markup (a key ending in _html; the
// labels are constants of this package, never data from the snapshot),
// verdict names a verdict, and site writes a site (memory.NoStack in L's
// words).
func labelFuncs(L map[string]string) template.FuncMap {
	return template.FuncMap{
		"t": func(key string, args ...any) string {
			return label(L, key, args...)
		},
		"markup": func(key string) template.HTML {
			if !strings.HasSuffix(key, "_html") {
				panic("memview: markup of label " + key + ", which is not an _html label")
			}
			return template.HTML(label(L, key))
		},
		"verdict": func(v string) string { return verdictName(v, L) },
		"site":    func(s string) string { return siteName(s, L) },
	}
}

// siteName writes a site, the placeholder for a block without a stack in
// L's words.
func siteName(s string, L map[string]string) string {
	if s == memory.NoStack || s == "" {
		return label(L, "nostack")
	}
	return s
}

// label is L's label for key, formatted with args; English where L lacks it.
func label(L map[string]string, key string, args ...any) string {
	f, ok := L[key]
	if !ok {
		if f, ok = labels["en"][key]; !ok {
			panic("memview: no label " + key)
		}
	}
	if len(args) == 0 {
		return f
	}
	return fmt.Sprintf(f, args...)
}

// Map geometry, in SVG user units (pixels).
const (
	mapLeft   = 84  // room for the row offset labels
	mapWidth  = 900 // width of one row
	rowHeight = 18
	rowGap    = 6
	mapTop    = 4
	maxRows   = 48
)

type htmlPage struct {
	Lang     string // the lang attribute of the page: en or zh
	Title    string
	R        *memory.Report
	Summary  string
	Devices  []htmlDevice
	Chart    *htmlChart
	Stacks   [][]int  // stacks as indices in Frames, indexed by htmlBlock.K
	Frames   []string // distinct frames, as text
	Drawn    int      // blocks drawn in all maps
	Omitted  omitted
	MaxDrawn int
	Settings *snapshot.Settings
	Mismatch []string // the trace and the segments disagree: one sentence per device
	Active   *htmlActive
	ActiveJS []activeJS
}

type omitted struct {
	Segments, Blocks int
	Bytes            uint64
}

type htmlDevice struct {
	D        memory.Device
	Cols     []figCol
	Rows     []figRow
	Map      *htmlMap
	Segments []htmlSegment // the largest drawn segments, for the table
}

type figCol struct{ Name string }

type figRow struct {
	Name   string
	Help   string
	Values []string
}

type htmlMap struct {
	Width, Height int
	BytesPerRow   string
	Blocks        []htmlBlock
	Edges         []htmlEdge
	Labels        []htmlLabel
	DrawnSegments int
	Omitted       omitted
}

type htmlBlock struct {
	Rect       bool
	X, Y, W, H string
	D          string // path for a block that spans rows
	Class      string // a (allocated), p (pending free), f (free)
	Title      string
	Bytes      uint64
	Seg        int // index of the segment in the page
	K          int // index in htmlPage.Stacks; -1 for none
}

type htmlEdge struct{ X, Y1, Y2 string }

type htmlLabel struct {
	X, Y   string
	Text   string
	Anchor string // text-anchor; "" for the default of its place
}

type htmlSegment struct {
	Seg                          int
	Address                      string
	Size, Allocated, Free, Large string
	Pool, Stream                 string
	Blocks                       int
	Expandable                   bool
	Site                         string
}

type htmlChart struct {
	Width, Height int
	Series        []htmlSeries
	YTicks        []htmlLabel
	XTicks        []htmlLabel
	XLabel        string
	Peak          *htmlPeakMark
	Left, Bottom  int
}

type htmlSeries struct {
	Device int
	Class  string
	Points string
	N      int
}

type htmlPeakMark struct {
	X, Y, LX, LY string
	Label        string
	Anchor       string
}

// HTML writes the report as one self-contained page (no network: the CSS,
// the script and the pictures are inline): the OOM explained, who holds the
// memory, the segment map of each device drawn from s's blocks (to scale,
// coloured by state, every block with a tooltip), the timeline of the trace
// with its peak, and the figures per device and pool. o.Name titles the
// page and o.Lang picks its language (en, the default, or zh); the other
// options shape the text view only.
func HTML(w io.Writer, r *memory.Report, s *snapshot.Snapshot, o Options) error {
	if s == nil {
		s = &snapshot.Snapshot{}
	}
	L := lang(o)
	lng := "en"
	if _, ok := labels[o.Lang]; ok {
		lng = o.Lang
	}
	tmpl, err := pageTmpl.Clone()
	if err != nil {
		return err
	}
	tmpl.Funcs(labelFuncs(L))
	pg := &htmlPage{Lang: lng, Title: o.Name, R: r, MaxDrawn: MaxDrawnBlocks, Settings: s.Settings}
	for _, m := range r.TraceMismatch {
		if lng == "zh" && m.TextZH != "" {
			pg.Mismatch = append(pg.Mismatch, m.TextZH)
		} else {
			pg.Mismatch = append(pg.Mismatch, m.Text)
		}
	}
	pg.Summary = strings.TrimSuffix(strings.TrimPrefix(header(r, Options{Name: o.Name}, L, 1<<20), "gpudx mem: "), "\n")
	if r.OOM != nil && lng == "zh" {
		// The template writes the report's reason and fix; a copy keeps
		// the caller's report as it was.
		oom := *r.OOM
		if oom.ReasonZH != "" {
			oom.Reason = oom.ReasonZH
		}
		if oom.FixZH != "" {
			oom.Fix = oom.FixZH
		}
		oom.Path = slices.Clone(oom.Path)
		for i := range oom.Path {
			if oom.Path[i].TextZH != "" {
				oom.Path[i].Text = oom.Path[i].TextZH
			}
		}
		rc := *r
		rc.OOM = &oom
		r = &rc
		pg.R = r
	}
	st := newStackTable(s, L)
	drawn := chooseSegments(s, MaxDrawnBlocks)
	byDev := map[int][]int{}
	for i := range s.Segments {
		d := s.Segments[i].Device
		byDev[d] = append(byDev[d], i)
	}
	for _, d := range r.Devices {
		hd := htmlDevice{D: d}
		hd.Cols, hd.Rows = figureTable(&d, L)
		hd.Map, hd.Segments = segmentMap(s, byDev[d.Device], drawn, st)
		pg.Drawn += len(hd.Map.Blocks)
		pg.Omitted.Segments += hd.Map.Omitted.Segments
		pg.Omitted.Blocks += hd.Map.Omitted.Blocks
		pg.Omitted.Bytes += hd.Map.Omitted.Bytes
		pg.Devices = append(pg.Devices, hd)
	}
	pal := palette{}
	for _, x := range r.TopSites {
		pal.add(x.Site)
	}
	if r.Peak != nil {
		for _, x := range r.Peak.TopSites {
			pal.add(x.Site)
		}
	}
	pg.Active, pg.ActiveJS = activeChart(r, s, L, pal, st)
	tmpl.Funcs(template.FuncMap{"sitecls": pal.class})
	pg.Stacks, pg.Frames = st.stacks, st.frames
	pg.Chart = timelineChart(r, L)
	return tmpl.Execute(w, pg)
}

// stackTable names the stacks of the drawn blocks: the site for the
// tooltip, the kept frames for the details panel.
type stackTable struct {
	s      *snapshot.Snapshot
	L      map[string]string // the page's labels, for the tooltips
	index  map[snapshot.StackID]int
	site   []string
	stacks [][]int // frame indices, innermost first
	frames []string
	fIndex map[string]int
}

func newStackTable(s *snapshot.Snapshot, L map[string]string) *stackTable {
	return &stackTable{s: s, L: L, index: map[snapshot.StackID]int{}, fIndex: map[string]int{}}
}

func (t *stackTable) get(id snapshot.StackID) (int, string) {
	if k, ok := t.index[id]; ok {
		return k, t.site[k]
	}
	var frames []snapshot.Frame
	if int(id) < len(t.s.Stacks) {
		frames = t.s.Stacks[id]
	}
	site, kept := memory.SiteOf(frames)
	site = siteName(site, t.L)
	ids := make([]int, len(kept))
	for i, f := range kept {
		txt := frameText(f)
		j, ok := t.fIndex[txt]
		if !ok {
			j = len(t.frames)
			t.fIndex[txt] = j
			t.frames = append(t.frames, txt)
		}
		ids[i] = j
	}
	k := len(t.site)
	t.index[id] = k
	t.site = append(t.site, site)
	t.stacks = append(t.stacks, ids)
	return k, site
}

// chooseSegments picks the segments whose blocks are drawn: the largest
// first, each whole, until the blocks reach limit (a segment that does not
// fit is skipped and smaller ones are tried).
func chooseSegments(s *snapshot.Snapshot, limit int) []bool {
	order := make([]int, len(s.Segments))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return s.Segments[order[a]].TotalSize > s.Segments[order[b]].TotalSize
	})
	drawn := make([]bool, len(s.Segments))
	n := 0
	for _, i := range order {
		if k := len(s.Segments[i].Blocks); n+k <= limit {
			drawn[i] = true
			n += k
		}
	}
	return drawn
}

// blockClass gives a block's CSS class and the label key of its state.
func blockClass(st snapshot.BlockState) (string, string) {
	switch st {
	case snapshot.ActiveAllocated:
		return "a", "pg_st_allocated"
	case snapshot.ActivePendingFree:
		return "p", "pg_st_pending"
	}
	return "f", "pg_st_free"
}

func poolName(sg *snapshot.Segment) string {
	kind := "large"
	if sg.Small {
		kind = "small"
	}
	if sg.Pool.Private() {
		return fmt.Sprintf("private %d,%d %s", sg.Pool[0], sg.Pool[1], kind)
	}
	return kind
}

func fx(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// segmentMap lays a device's drawn segments out in address order, end to
// end, in rows of a fixed number of bytes (a power of two chosen so that the
// device fits in maxRows rows); each block is one shape whose width is
// proportional to its size: a rect, or a path of several rectangles when it
// runs over the end of a row.
func segmentMap(s *snapshot.Snapshot, segIdx []int, drawn []bool, st *stackTable) (*htmlMap, []htmlSegment) {
	m := &htmlMap{Width: mapLeft + mapWidth + 8}
	idx := make([]int, 0, len(segIdx))
	var total uint64
	for _, i := range segIdx {
		sg := &s.Segments[i]
		if !drawn[i] {
			m.Omitted.Segments++
			m.Omitted.Blocks += len(sg.Blocks)
			m.Omitted.Bytes += sg.TotalSize
			continue
		}
		idx = append(idx, i)
		// Saturate: hand-built snapshots can claim any size.
		total = min(total+sg.TotalSize, 1<<62)
		if total < sg.TotalSize {
			total = 1 << 62
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return s.Segments[idx[a]].Address < s.Segments[idx[b]].Address })
	m.DrawnSegments = len(idx)
	bpr := uint64(1 << 20)
	for bpr < 1<<56 && bpr*maxRows < total {
		bpr <<= 1
	}
	m.BytesPerRow = size(bpr)
	rows := int((total + bpr - 1) / bpr)
	if rows == 0 {
		rows = 1
	}
	m.Height = mapTop + rows*(rowHeight+rowGap)
	scale := float64(mapWidth) / float64(bpr)
	rowY := func(r uint64) float64 { return float64(mapTop) + float64(r)*(rowHeight+rowGap) }
	for r := 0; r < rows; r++ {
		m.Labels = append(m.Labels, htmlLabel{X: fx(mapLeft - 6), Y: fx(rowY(uint64(r)) + rowHeight*0.75), Text: size(uint64(r) * bpr)})
	}
	var off uint64
	var segs []htmlSegment
	for _, i := range idx {
		sg := &s.Segments[i]
		r0 := off / bpr
		x0 := float64(mapLeft) + float64(off%bpr)*scale
		m.Edges = append(m.Edges, htmlEdge{X: fx(x0), Y1: fx(rowY(r0) - 2), Y2: fx(rowY(r0) + rowHeight + 2)})
		var alloc, free, largest uint64
		boff := off
		segEnd := off + min(sg.TotalSize, total-off)
		for j := range sg.Blocks {
			b := &sg.Blocks[j]
			cls, state := blockClass(b.State)
			if b.State == snapshot.Inactive {
				free += b.Size
				largest = max(largest, b.Size)
			} else if b.State == snapshot.ActiveAllocated {
				alloc += b.Size
			}
			k, site := st.get(b.Stack)
			title := fmt.Sprintf("%s · %s · 0x%x", size(b.Size), label(st.L, state), b.Address)
			if b.State.Active() {
				title += label(st.L, "pg_tip_requested", size(b.RequestedSize))
			}
			title += "\n" + site
			hb := htmlBlock{Class: cls, Title: title, Bytes: b.Size, Seg: i, K: k}
			// Blocks are drawn inside their segment only, however large a
			// (hand-built) snapshot says they are.
			start, end := min(boff, segEnd), min(boff+b.Size, segEnd)
			if end < start {
				end = start
			}
			if end == start || start/bpr == (end-1)/bpr {
				r := start / bpr
				hb.Rect = true
				hb.X = fx(float64(mapLeft) + float64(start%bpr)*scale)
				hb.Y = fx(rowY(r))
				hb.W = fx(float64(end-start) * scale)
				hb.H = fx(rowHeight)
			} else {
				var d strings.Builder
				for p := start; p < end; {
					r := p / bpr
					e := min(end, (r+1)*bpr)
					x := float64(mapLeft) + float64(p%bpr)*scale
					fmt.Fprintf(&d, "M%s %sh%sv%dh-%sZ", fx(x), fx(rowY(r)), fx(float64(e-p)*scale), rowHeight, fx(float64(e-p)*scale))
					p = e
				}
				hb.D = d.String()
			}
			m.Blocks = append(m.Blocks, hb)
			boff = end
		}
		off = segEnd
		k, site := st.get(sg.Stack)
		_ = k
		segs = append(segs, htmlSegment{
			Seg: i, Address: fmt.Sprintf("0x%x", sg.Address), Size: size(sg.TotalSize),
			Allocated: size(alloc), Free: size(free), Large: size(largest),
			Pool: poolName(sg), Stream: stream(sg.Stream), Blocks: len(sg.Blocks),
			Expandable: sg.Expandable, Site: site,
		})
	}
	// The table lists the largest drawn segments.
	sort.SliceStable(segs, func(a, b int) bool {
		return s.Segments[segs[a].Seg].TotalSize > s.Segments[segs[b].Seg].TotalSize
	})
	if len(segs) > 50 {
		segs = segs[:50]
	}
	return m, segs
}

// figureTable lays out the figures of a device and its pools: one column
// each, one row per figure, named and explained in L's language.
func figureTable(d *memory.Device, L map[string]string) ([]figCol, []figRow) {
	cols := []figCol{{label(L, "pg_total")}}
	figs := []*memory.Figures{&d.Figures}
	for i := range d.Pools {
		cols = append(cols, figCol{d.Pools[i].Pool})
		figs = append(figs, &d.Pools[i].Figures)
	}
	// key names the row's labels: pg_f_KEY its name, pg_fh_KEY its help.
	row := func(key string, f func(*memory.Figures) string) figRow {
		r := figRow{Name: label(L, "pg_f_"+key), Help: label(L, "pg_fh_"+key)}
		for _, x := range figs {
			r.Values = append(r.Values, f(x))
		}
		return r
	}
	return cols, []figRow{
		row("reserved", func(f *memory.Figures) string { return size(f.ReservedBytes) }),
		row("allocated", func(f *memory.Figures) string { return size(f.AllocatedBytes) }),
		row("active", func(f *memory.Figures) string { return size(f.ActiveBytes) }),
		row("inactive", func(f *memory.Figures) string { return size(f.InactiveBytes) }),
		row("releasable", func(f *memory.Figures) string { return size(f.ReleasableBytes) }),
		row("stranded", func(f *memory.Figures) string { return size(f.StrandedBytes) }),
		row("requested", func(f *memory.Figures) string { return size(f.RequestedBytes) }),
		row("rounding", func(f *memory.Figures) string { return size(f.RoundingBytes) }),
		row("largest", func(f *memory.Figures) string { return size(f.LargestFreeBlockBytes) }),
		row("frag", func(f *memory.Figures) string { return percent(f.Fragmentation) }),
		row("typical", func(f *memory.Figures) string {
			if f.TypicalRequestBytes == 0 {
				return "—" // nothing allocated: no median
			}
			return size(f.TypicalRequestBytes)
		}),
		row("small", func(f *memory.Figures) string { return group(f.SmallFreeBlocks) }),
		row("segments", func(f *memory.Figures) string {
			return fmt.Sprintf("%s (%s / %s / %s)", group(f.Segments), group(f.SegmentStates.Full), group(f.SegmentStates.Mixed), group(f.SegmentStates.Free))
		}),
		row("blocks", func(f *memory.Figures) string {
			b := f.BlockStates
			return fmt.Sprintf("%s (%s / %s / %s)", group(f.Blocks), group(b.ActiveAllocated.Count), group(b.ActivePendingFree.Count), group(b.Inactive.Count))
		}),
		row("expandable", func(f *memory.Figures) string {
			return fmt.Sprintf("%s (%s)", group(f.ExpandableSegments), size(f.ExpandableBytes))
		}),
	}
}

// Chart geometry.
const (
	chartLeft   = 84
	chartWidth  = 880
	chartHeight = 240
	chartTop    = 12
	chartBottom = 36
)

// timelineChart draws memory in use over the trace: one line per device,
// x by time when every point has one, else by event index; the peak is
// marked; its words are in L's language.
func timelineChart(r *memory.Report, L map[string]string) *htmlChart {
	if r.Timeline == nil {
		return nil
	}
	var pts int
	byTime := true
	var t0, t1 int64
	var e1 int
	var ymax uint64
	first := true
	for _, d := range r.Timeline.Devices {
		for _, p := range d.Points {
			pts++
			if p.TimeUS <= 0 {
				byTime = false
			}
			if first || p.TimeUS < t0 {
				t0 = p.TimeUS
			}
			if first || p.TimeUS > t1 {
				t1 = p.TimeUS
			}
			first = false
			e1 = max(e1, p.Event)
			ymax = max(ymax, p.Bytes)
		}
	}
	if pts == 0 {
		return nil
	}
	byTime = byTime && t1 > t0 // one instant: the events tell the order
	if r.Peak != nil {
		ymax = max(ymax, r.Peak.Bytes)
	}
	if ymax == 0 {
		ymax = 1
	}
	c := &htmlChart{Width: chartLeft + chartWidth + 16, Height: chartTop + chartHeight + chartBottom, Left: chartLeft, Bottom: chartTop + chartHeight}
	xOf := func(ev int, t int64) float64 {
		if byTime {
			if t1 == t0 {
				return chartLeft
			}
			return chartLeft + float64(t-t0)/float64(t1-t0)*chartWidth
		}
		if e1 == 0 {
			return chartLeft
		}
		return chartLeft + float64(ev)/float64(e1)*chartWidth
	}
	yOf := func(b uint64) float64 {
		return chartTop + chartHeight - float64(b)/float64(ymax)*chartHeight
	}
	for i, d := range r.Timeline.Devices {
		var sb strings.Builder
		for j, p := range d.Points {
			if j > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(fx(xOf(p.Event, p.TimeUS)) + "," + fx(yOf(p.Bytes)))
		}
		c.Series = append(c.Series, htmlSeries{Device: d.Device, Class: fmt.Sprintf("s%d", i%6), Points: sb.String(), N: len(d.Points)})
	}
	for i := 0; i <= 4; i++ {
		b := ymax * uint64(i) / 4
		c.YTicks = append(c.YTicks, htmlLabel{X: fx(chartLeft - 6), Y: fx(yOf(b)), Text: size(b)})
	}
	if byTime {
		c.XLabel = label(L, "pg_x_time")
		for i := 0; i <= 4; i++ {
			dt := (t1 - t0) * int64(i) / 4
			c.XTicks = append(c.XTicks, htmlLabel{X: fx(chartLeft + float64(i)/4*chartWidth), Y: fx(chartTop + chartHeight + 16), Text: seconds(dt), Anchor: tickAnchor(i)})
		}
	} else {
		c.XLabel = label(L, "pg_x_event")
		for i := 0; i <= 4; i++ {
			c.XTicks = append(c.XTicks, htmlLabel{X: fx(chartLeft + float64(i)/4*chartWidth), Y: fx(chartTop + chartHeight + 16), Text: group(e1 * i / 4), Anchor: tickAnchor(i)})
		}
	}
	if p := r.Peak; p != nil {
		t := p.TimeUS
		if byTime && t <= 0 {
			t = t1
		}
		ev := p.Event
		if ev < 0 {
			ev = e1
		}
		x, y := xOf(ev, t), yOf(p.Bytes)
		ly := y - 10
		if ly < chartTop+12 { // no room above the point: write below it
			ly = y + 20
		}
		mk := &htmlPeakMark{X: fx(x), Y: fx(y), LY: fx(ly), Anchor: "start", LX: fx(x + 8)}
		if x > chartLeft+chartWidth*0.7 {
			mk.Anchor, mk.LX = "end", fx(x-8)
		}
		mk.Label = label(L, "pg_peakmark", size(p.Bytes), device(p.Device))
		if p.Event >= 0 {
			mk.Label += label(L, "pg_peakmark_event", group(p.Event))
		}
		c.Peak = mk
	}
	return c
}

// tickAnchor keeps the first and last x labels inside the chart.
func tickAnchor(i int) string {
	switch i {
	case 0:
		return "start"
	case 4:
		return "end"
	}
	return "middle"
}

// seconds writes a span of microseconds: "0 s", "40 µs", "250 ms", "1.25 s", "3 min 2.0 s".
func seconds(us int64) string {
	switch s := float64(us) / 1e6; {
	case us == 0:
		return "0 s"
	case us < 1000:
		return fmt.Sprintf("%d µs", us)
	case s < 1:
		return fmt.Sprintf("%.0f ms", s*1e3)
	case s < 60:
		return fmt.Sprintf("%.2f s", s)
	default:
		return fmt.Sprintf("%d min %.1f s", int(s)/60, s-float64(int(s)/60*60))
	}
}
