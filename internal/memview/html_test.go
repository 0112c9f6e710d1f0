package memview

import (
	"bytes"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

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
	return renderLang(t, r, s, "en")
}

// renderLang is renderPage in the language lang.
func renderLang(t *testing.T, r *memory.Report, s *snapshot.Snapshot, lang string) *page {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, r, s, Options{Name: "test.pickle", Lang: lang}); err != nil {
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
	if err := HTML(&b, memory.Analyze(s, memory.Options{RequestDevice: -1}), s, Options{Name: "huge"}); err != nil {
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

// ourText is the text the page writes itself, not data from the snapshot:
// the text of the headings, navigation, legends, table headers, figure
// names, notes, summaries and buttons, and the aria-label and title
// attributes other than the blocks' tooltips (whose words are checked
// apart). Sites, sizes and other data sit in td, dd, code, pre and the
// summary's code.
func ourText(p *page) map[string]bool {
	out := map[string]bool{}
	var visit func(n *html.Node, in bool)
	visit = func(n *html.Node, in bool) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "h1", "h2", "h3", "nav", "th", "dt", "li", "summary", "button", "p", "strong", "span":
				in = attrOr(n, "class") != "mono" // a site
			case "td", "dd", "code", "pre", "script", "style", "title", "text", "rect", "path", "polyline":
				in = false
			}
			for _, a := range n.Attr {
				if (a.Key == "aria-label" || a.Key == "title") && n.Data != "rect" && n.Data != "path" {
					out[strings.TrimSpace(a.Val)] = true
				}
			}
		}
		if n.Type == html.TextNode && in {
			if s := strings.TrimSpace(n.Data); s != "" {
				out[s] = true
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			visit(c, in)
		}
	}
	visit(p.root, false)
	return out
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// TestHTMLZh: --lang zh gives a Chinese page: lang="zh", the Chinese
// headings, the report's reason_zh and fix_zh, Chinese tooltips and axis
// text, and none of the English page's own words.
func TestHTMLZh(t *testing.T) {
	s := oomSnapshot()
	r := analyze(s)
	reason, fix := r.OOM.Reason, r.OOM.Fix
	en := renderLang(t, r, s, "en")
	zh := renderLang(t, r, s, "zh")
	if r.OOM.Reason != reason || r.OOM.Fix != fix {
		t.Error("rendering in Chinese changed the report")
	}
	if !strings.Contains(en.raw, `<html lang="en">`) || !strings.Contains(zh.raw, `<html lang="zh">`) {
		t.Error("the lang attribute does not follow --lang")
	}
	if r.OOM.ReasonZH == "" || r.OOM.FixZH == "" {
		t.Fatal("the report has no Chinese reason or fix")
	}
	for _, want := range []string{
		"显存不足（OOM），设备 cuda:0，跟踪事件 6", "结论：碎片化。", r.OOM.ReasonZH, r.OOM.FixZH,
		">谁占着显存<", ">段分布图<", ">时间线<", ">峰值<", ">各项数据<", "<th scope=\"col\" class=\"n\">字节</th>",
		"失败的请求：<code>attention (/home/me/train/model.py:61)</code>",
		"· 已分配 · 0x", "· 请求 ", "空闲（非活跃）", ">距所示第一个事件的时间</text>", "峰值 ", "设备合计", "碎片率",
		`return "（未记录调用栈）";`,
	} {
		if !strings.Contains(zh.raw, want) && !strings.Contains(zh.raw, html.EscapeString(want)) {
			t.Errorf("zh page lacks %q", want)
		}
	}
	for _, bad := range []string{r.OOM.Reason, r.OOM.Fix, "Verdict", "Who holds the memory", "requested "} {
		if strings.Contains(zh.raw, bad) || strings.Contains(zh.raw, html.EscapeString(bad)) {
			t.Errorf("zh page holds the English %q", bad)
		}
	}
	// Every piece of our own text on the English page is gone from the
	// Chinese one, and the Chinese page's own text is Chinese (or names:
	// devices, sizes, the tool).
	zt := ourText(zh)
	var leaked []string
	for s := range ourText(en) {
		if zt[s] && !hasHan(s) && strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz") && !strings.HasPrefix(s, "cuda:") &&
			s != "gpudx mem" && s != "oom" && s != "large" && s != "small" && !strings.Contains(s, "test.pickle") {
			leaked = append(leaked, s)
		}
	}
	sort.Strings(leaked)
	if len(leaked) > 0 {
		t.Errorf("the zh page keeps English text of the en page: %q", leaked)
	}
	// The structure is the same: as many block shapes, sections, tables.
	if len(zh.blocks) != len(en.blocks) || zh.svgs != en.svgs {
		t.Errorf("zh page draws %d blocks in %d svgs, en %d in %d", len(zh.blocks), zh.svgs, len(en.blocks), en.svgs)
	}
	for _, n := range zh.blocks {
		title := text(n)
		if strings.Contains(title, "allocated") || strings.Contains(title, "free") || strings.Contains(title, "requested") {
			t.Errorf("zh tooltip %q is English", title)
		}
	}
	// An unknown language is English.
	if p := renderLang(t, r, s, "fr"); p.raw != en.raw {
		t.Error("an unknown language does not give the English page")
	}
}

// TestHTMLZhNoOOM: the page without an oom event, and the --request page,
// in Chinese.
func TestHTMLZhNoOOM(t *testing.T) {
	s := oomSnapshot()
	s.Traces = nil
	p := renderLang(t, analyze(s), s, "zh")
	for _, want := range []string{"没有显存不足事件", "跟踪记录中没有 <code>oom</code> 事件", "无峰值："} {
		if !strings.Contains(p.raw, want) {
			t.Errorf("zh page without a trace lacks %q", want)
		}
	}
	s = oomSnapshot()
	r := memory.Analyze(s, memory.Options{Request: 1 << 20, RequestDevice: 0})
	p = renderLang(t, r, s, "zh")
	if !strings.Contains(p.raw, "假设请求 1.00 MiB，设备 cuda:0（按快照时的状态）") || !strings.Contains(p.raw, html.EscapeString(r.OOM.ReasonZH)) {
		t.Errorf("zh --request page lacks its heading or reason:\n%.3000s", p.raw)
	}
}

var tmplKey = regexp.MustCompile(`\{\{(?:t|markup) "([a-z0-9_]+)"`)

// TestHTMLLabels: every label the page uses exists in both languages and
// takes the same arguments in both.
func TestHTMLLabels(t *testing.T) {
	used := map[string]bool{}
	for _, m := range tmplKey.FindAllStringSubmatch(htmlTemplate, -1) {
		used[m[1]] = true
	}
	for k := range labels["en"] {
		if strings.HasPrefix(k, "pg_") {
			used[k] = true
		}
	}
	if len(used) < 50 {
		t.Fatalf("found %d labels in the template", len(used))
	}
	for k := range used {
		for _, lang := range []string{"en", "zh"} {
			if _, ok := labels[lang][k]; !ok {
				t.Errorf("%s lacks the label %s", lang, k)
			}
		}
		if hasHan(labels["en"][k]) {
			t.Errorf("en label %s is Chinese", k)
		}
		if strings.Count(labels["en"][k], "%") != strings.Count(labels["zh"][k], "%") {
			t.Errorf("label %s: en %q and zh %q take different arguments", k, labels["en"][k], labels["zh"][k])
		}
	}
	for k := range labels["zh"] {
		if _, ok := labels["en"][k]; !ok && strings.HasPrefix(k, "pg_") {
			t.Errorf("zh label %s has no English", k)
		}
	}
}

// TestActiveTimelineHTML: the page draws the active-memory timeline as at
// most DefaultActiveBands bands plus the summed one, says what it summed,
// marks the peak, and colours each band like its site's row in the tables.
func TestActiveTimelineHTML(t *testing.T) {
	s, err := snapshot.ReadFile("../../snapshot/testdata/hand-p4.pickle")
	if err != nil {
		t.Fatal(err)
	}
	r := memory.Analyze(s, memory.Options{RequestDevice: -1})
	p := renderPage(t, r, s)
	var bands, swatches []*html.Node
	walk(p.root, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		c, _ := attr(n, "class")
		switch {
		case n.Data == "polygon" && strings.HasPrefix(c, "band "):
			bands = append(bands, n)
		case n.Data == "span" && strings.HasPrefix(c, "sw c"):
			swatches = append(swatches, n)
		}
	})
	tl := memory.ActiveTimelineOf(s, r.Peak.Device, 0, 0)
	want := len(tl.Bands)
	if tl.OtherCount > 0 {
		want++
	}
	if len(bands) != want || want > memory.DefaultActiveBands+1 {
		t.Errorf("%d bands drawn, want %d", len(bands), want)
	}
	if !strings.Contains(p.raw, "are summed in the grey band on top") || !strings.Contains(p.raw, `class="mark peakline"`) {
		t.Error("the page does not say what it summed, or has no peak mark")
	}
	// The first holder's colour is the colour of the bands of its site.
	first := strings.TrimPrefix(attrOr(swatches[0], "class"), "sw ")
	same := 0
	for i, b := range tl.Bands {
		if b.Site != r.TopSites[0].Site {
			continue
		}
		same++
		if attrOr(bands[i], "data-c") != first {
			t.Errorf("band %d of %s is %s, its row %s", i, b.Site, attrOr(bands[i], "data-c"), first)
		}
	}
	if same == 0 {
		t.Errorf("no band of the first holder %s: the check does not run", r.TopSites[0].Site)
	}
}
