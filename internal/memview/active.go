package memview

import (
	"math"
	"strconv"
	"strings"

	"github.com/gpudx/gpudx/memory"
	"github.com/gpudx/gpudx/snapshot"
)

// paletteSize is the number of site colours (classes c0 … c11); sites past
// it reuse them in turn.
const paletteSize = 12

// palette gives each allocation site a colour class, shared by the tables
// of sites and the active-memory timeline: the holders first, in their
// order, then the sites alive at the peak, then the timeline's bands.
type palette map[string]int

func (p palette) add(site string) {
	if _, ok := p[site]; !ok {
		p[site] = len(p)
	}
}

// class is the CSS class of a site's colour.
func (p palette) class(site string) string {
	i, ok := p[site]
	if !ok {
		return "cother"
	}
	return "c" + strconv.Itoa(i%paletteSize)
}

// Active timeline geometry.
const (
	activeHeight = 300
	activeTop    = 12
	activeBottom = 36
)

// htmlActive is the active-memory timeline as the template draws it.
type htmlActive struct {
	Device               int
	Width, Height        int
	Left, Bottom, Right  int
	Bands                []htmlBand
	Other                string // points of the summed band; "" when none
	OtherCount           int
	Drawn, Columns       int
	Events               int
	YTicks, XTicks       []htmlLabel
	XLabel               string
	PeakX, PeakLabel     string
	OOMX                 string
	PeakY, MarkTop, TopY string
}

// htmlBand is one drawn allocation: its polygon and its colour class.
type htmlBand struct {
	Class  string
	Points string
}

// activeJS is what the page's script knows of a band: size, site, stack
// (index into the page's stacks), alloc and free events.
type activeJS [5]any

// activeChart lays out a device's active-memory timeline: the peak's
// device, else the first trace that allocates or frees.
func activeChart(r *memory.Report, s *snapshot.Snapshot, L map[string]string, pal palette, st *stackTable) (*htmlActive, []activeJS) {
	if r.Peak == nil {
		return nil, nil
	}
	tl := memory.ActiveTimelineOf(s, r.Peak.Device, 0, 0)
	if tl == nil || len(tl.Sample) == 0 {
		return nil, nil
	}
	a := &htmlActive{Device: tl.Device, Width: chartLeft + chartWidth + 16, Height: activeTop + activeHeight + activeBottom,
		Left: chartLeft, Right: chartLeft + chartWidth, Bottom: activeTop + activeHeight,
		OtherCount: tl.OtherCount, Drawn: len(tl.Bands), Columns: len(tl.Sample), Events: tl.Events}
	var ymax uint64 = 1
	for _, v := range tl.Total {
		ymax = max(ymax, v)
	}
	last := max(tl.Events-1, 1)
	xOf := func(ev int) float64 { return chartLeft + float64(ev)/float64(last)*chartWidth }
	yOf := func(b uint64) float64 { return activeTop + activeHeight - float64(b)/float64(ymax)*activeHeight }
	// Half the distance to the neighbouring samples, so that a band alive
	// at one sample still has a width.
	half := func(c int) (float64, float64) {
		x := xOf(tl.Sample[c])
		lo, hi := x, x
		if c > 0 {
			lo = (xOf(tl.Sample[c-1]) + x) / 2
		} else {
			lo = max(chartLeft, x-chartWidth/float64(2*len(tl.Sample)))
		}
		if c+1 < len(tl.Sample) {
			hi = (xOf(tl.Sample[c+1]) + x) / 2
		} else {
			hi = min(chartLeft+chartWidth, x+chartWidth/float64(2*len(tl.Sample)))
		}
		return lo, hi
	}
	// A band's outline: along its top from left to right, then along its
	// bottom back, each column a flat step; a run of columns at the same
	// height is one step, which keeps the page small (bands move only when
	// one below them is freed).
	outline := func(first int, bottom []uint64, size func(int) uint64) string {
		var sb strings.Builder
		pt := func(x, y float64) {
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(fx1(x) + "," + fx1(y))
		}
		edge := func(ys []float64, forward bool) {
			n := len(ys)
			for k := 0; k < n; {
				i := k
				if !forward {
					i = n - 1 - k
				}
				j := k
				for j+1 < n && ys[idx(j+1, n, forward)] == ys[i] {
					j++
				}
				lo, _ := half(first + i)
				_, hi := half(first + idx(j, n, forward))
				if !forward {
					_, hi = half(first + i)
					lo, _ = half(first + idx(j, n, forward))
					pt(hi, ys[i])
					pt(lo, ys[i])
				} else {
					pt(lo, ys[i])
					pt(hi, ys[i])
				}
				k = j + 1
			}
		}
		tops := make([]float64, len(bottom))
		bots := make([]float64, len(bottom))
		for i := range bottom {
			tops[i] = round1(yOf(bottom[i] + size(i)))
			bots[i] = round1(yOf(bottom[i]))
		}
		edge(tops, true)
		edge(bots, false)
		return sb.String()
	}
	var js []activeJS
	for _, b := range tl.Bands {
		pal.add(b.Site)
		k, site := st.get(b.Stack)
		a.Bands = append(a.Bands, htmlBand{Class: pal.class(b.Site), Points: outline(b.First, b.Offset, func(int) uint64 { return b.Size })})
		js = append(js, activeJS{size(b.Size), site, k, b.Alloc, b.Free})
	}
	if tl.OtherCount > 0 {
		// The summed band sits on top of the drawn ones.
		top := make([]uint64, len(tl.Sample))
		for c := range top {
			top[c] = tl.Total[c] - tl.Other[c]
		}
		a.Other = outline(0, top, func(i int) uint64 { return tl.Other[i] })
	}
	for i := 0; i <= 4; i++ {
		b := ymax * uint64(i) / 4
		a.YTicks = append(a.YTicks, htmlLabel{X: fx(chartLeft - 6), Y: fx(yOf(b)), Text: size(b)})
		a.XTicks = append(a.XTicks, htmlLabel{X: fx(chartLeft + float64(i)/4*chartWidth), Y: fx(activeTop + activeHeight + 16), Text: group(last * i / 4), Anchor: tickAnchor(i)})
	}
	a.XLabel = label(L, "pg_x_event")
	pc := tl.PeakColumn
	a.PeakX, a.PeakY, a.MarkTop = fx(xOf(tl.Sample[pc])), fx(yOf(tl.Total[pc])), fx(activeTop)
	a.PeakLabel = label(L, "pg_peakmark", size(tl.Total[pc]), device(tl.Device)) + label(L, "pg_peakmark_event", group(tl.Sample[pc]))
	if tl.OOMEvent >= 0 {
		a.OOMX = fx(xOf(tl.OOMEvent))
	}
	return a, js
}

// idx is the k-th of n in walking order.
func idx(k, n int, forward bool) int {
	if forward {
		return k
	}
	return n - 1 - k
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// fx1 writes a coordinate with one decimal: enough for a band's edge.
func fx1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
