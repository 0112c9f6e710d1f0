package memview

import (
	"bytes"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/gpudx/gpudx/memory"
	"github.com/gpudx/gpudx/snapshot"
)

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return b.String()
}

type page struct {
	root   *html.Node
	blocks []*html.Node // the map's block shapes
	svgs   int
	raw    string
}

// renderPage writes the HTML and checks what every page must be: parseable,
// self-contained (no reference to the network or another file), with the
// SVG pictures inline.
func renderPage(t *testing.T, r *memory.Report, s *snapshot.Snapshot) *page {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, r, s, "test.pickle"); err != nil {
		t.Fatal(err)
	}
	root, err := html.Parse(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	p := &page{root: root, raw: b.String()}
	net := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|url\(|@import`)
	walk(root, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		switch n.Data {
		case "link", "img", "iframe", "object", "embed", "video", "audio", "source":
			t.Errorf("<%s> element: the page must not load anything", n.Data)
		case "svg":
			p.svgs++
		case "script":
			if _, ok := attr(n, "src"); ok {
				t.Error("<script src>: the page must be self-contained")
			}
		case "style":
			if net.MatchString(text(n)) {
				t.Errorf("style refers outside the page: %s", net.FindString(text(n)))
			}
		}
		for _, a := range n.Attr {
			if net.MatchString(a.Val) || strings.HasPrefix(strings.ToLower(a.Val), "javascript:") {
				t.Errorf("<%s %s=%q> refers outside the page", n.Data, a.Key, a.Val)
			}
			if (a.Key == "href" || a.Key == "src") && !strings.HasPrefix(a.Val, "#") {
				t.Errorf("<%s %s=%q>: only in-page links", n.Data, a.Key, a.Val)
			}
		}
		if c, _ := attr(n, "class"); strings.HasPrefix(c, "blk ") && (n.Data == "rect" || n.Data == "path") {
			p.blocks = append(p.blocks, n)
		}
	})
	return p
}

func countBlocks(s *snapshot.Snapshot) int {
	n := 0
	for _, sg := range s.Segments {
		n += len(sg.Blocks)
	}
	return n
}

var hRE = regexp.MustCompile(`h([0-9.]+)v`)

// drawnWidth is a block shape's total width: a rect's, or the sum of the
// row pieces of a path.
func drawnWidth(t *testing.T, n *html.Node) float64 {
	if n.Data == "rect" {
		w, _ := attr(n, "width")
		v, err := strconv.ParseFloat(w, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	d, _ := attr(n, "d")
	sum := 0.0
	for _, m := range hRE.FindAllStringSubmatch(d, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		sum += v
	}
	return sum
}

func TestHTML(t *testing.T) {
	s := oomSnapshot()
	r := analyze(s)
	p := renderPage(t, r, s)
	if p.svgs < 3 { // a map per device and the timeline
		t.Errorf("%d svg elements", p.svgs)
	}
	if len(p.blocks) != countBlocks(s) {
		t.Errorf("%d block shapes, want one per block (%d)", len(p.blocks), countBlocks(s))
	}
	// To scale: width per byte is the same for every block of a device,
	// and every block's tooltip gives its size, state and site.
	scale := map[string]float64{}
	states := map[string]int{}
	for _, n := range p.blocks {
		bs, _ := attr(n, "data-b")
		nb, _ := strconv.ParseFloat(bs, 64)
		seg, _ := attr(n, "data-s")
		si, _ := strconv.Atoi(seg)
		dev := strconv.Itoa(s.Segments[si].Device)
		w := drawnWidth(t, n)
		pieces := float64(max(1, strings.Count(attrOr(n, "d"), "M")))
		if k, ok := scale[dev]; !ok {
			scale[dev] = w / nb
		} else if math.Abs(w-k*nb) > 0.006*pieces+0.005 {
			t.Errorf("block of %s bytes drawn %.2f wide, not to the scale of the others (%.2f)", bs, w, k*nb)
		}
		c, _ := attr(n, "class")
		states[c]++
		title := ""
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			if ch.Type == html.ElementNode && ch.Data == "title" {
				title = text(ch)
			}
		}
		if !strings.Contains(title, size(uint64(nb))) || !strings.Contains(title, " · ") {
			t.Errorf("tooltip %q lacks the size", title)
		}
		if c != "blk f" && !strings.Contains(title, "requested ") {
			t.Errorf("tooltip %q of an active block lacks the requested size", title)
		}
	}
	if states["blk a"] != 4 || states["blk p"] != 1 || states["blk f"] != 3 {
		t.Errorf("block states drawn %v", states)
	}
	for _, want := range []string{
		`id="oom"`, "Verdict: fragmentation", r.OOM.Fix[:20], "attention (/home/me/train/model.py:61)",
		`id="holders"`, "forward (/home/me/train/model.py:42)", `<polyline class="series`, `class="peak"`,
		`id="figures"`, "stranded", "fragmentation",
	} {
		if !strings.Contains(p.raw, html.EscapeString(want)) && !strings.Contains(p.raw, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(p.raw, "Not drawn") {
		t.Error("says blocks were left out when none were")
	}
	// Keyboard: the segment rows and the peak can be focused.
	focusable := 0
	walk(p.root, func(n *html.Node) {
		if v, ok := attr(n, "tabindex"); ok && v == "0" {
			focusable++
		}
	})
	if focusable < 4 { // 3 segments + the peak
		t.Errorf("%d focusable elements", focusable)
	}
}

func attrOr(n *html.Node, k string) string { v, _ := attr(n, k); return v }

// TestHTMLCap: a snapshot with more blocks than the cap draws the largest
// segments whole up to it and says what it left out.
func TestHTMLCap(t *testing.T) {
	s := &snapshot.Snapshot{Stacks: [][]snapshot.Frame{{}}}
	const nseg, per = 30, 1000
	addr := uint64(0x7f00_0000_0000)
	for i := 0; i < nseg; i++ {
		bs := uint64(i+1) * 512
		sg := snapshot.Segment{Address: addr, TotalSize: bs * per}
		for j := 0; j < per; j++ {
			st := snapshot.Inactive
			if j%2 == 0 {
				st = snapshot.ActiveAllocated
			}
			sg.Blocks = append(sg.Blocks, snapshot.Block{Address: addr + uint64(j)*bs, Size: bs, RequestedSize: bs, State: st})
		}
		s.Segments = append(s.Segments, sg)
		addr += sg.TotalSize
	}
	p := renderPage(t, analyze(s), s)
	if len(p.blocks) != MaxDrawnBlocks {
		t.Fatalf("%d blocks drawn, want the cap %d", len(p.blocks), MaxDrawnBlocks)
	}
	// The 20 largest segments (10..29) are the ones drawn.
	for _, n := range p.blocks {
		seg, _ := attr(n, "data-s")
		if i, _ := strconv.Atoi(seg); i < 10 {
			t.Fatalf("segment %d drawn; the largest ones should be", i)
		}
	}
	if !strings.Contains(p.raw, "10 smaller segments (10,000 blocks") {
		t.Errorf("the page does not say what it left out")
	}
}

func TestHTMLNoTrace(t *testing.T) {
	s := oomSnapshot()
	s.Traces = nil
	p := renderPage(t, analyze(s), s)
	if strings.Contains(p.raw, "<polyline") || !strings.Contains(p.raw, "No out-of-memory event") {
		t.Error("a snapshot without a trace has no timeline and no OOM")
	}
	// Empty snapshot: still a page.
	renderPage(t, analyze(&snapshot.Snapshot{}), nil)
}

// Sizes near the top of uint64 (a hand-built snapshot, or one whose blocks
// claim more than their segment) give a bounded page and non-negative pprof
// values instead of a loop that never ends.
func TestHugeSizes(t *testing.T) {
	s := &snapshot.Snapshot{
		Segments: []snapshot.Segment{
			{Address: 0, TotalSize: 1 << 63, Blocks: []snapshot.Block{{Size: 1 << 63, State: snapshot.ActiveAllocated}}},
			{Address: 1 << 63, TotalSize: 2 << 20, Blocks: []snapshot.Block{{Address: 1 << 63, Size: 1 << 50, State: snapshot.ActiveAllocated}}},
			{Address: 3 << 62, TotalSize: 1 << 63, Blocks: []snapshot.Block{{Address: 3 << 62, Size: 1 << 63, State: snapshot.ActiveAllocated}}},
		},
		Stacks: [][]snapshot.Frame{nil},
	}
	var b strings.Builder
	if err := HTML(&b, memory.Analyze(s, memory.Options{RequestDevice: -1}), s, "huge"); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 1<<20 {
		t.Errorf("page of %d bytes", b.Len())
	}
	p := Profile(s, "huge")
	for _, smp := range p.Sample {
		if smp.Value[0] < 0 {
			t.Errorf("negative sample value %d", smp.Value[0])
		}
	}
}
