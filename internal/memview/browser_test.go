package memview

import (
	"bytes"
	"context"
	"github.com/gpudx/gpudx/internal/browsertest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/gpudx/gpudx/memory"
	"github.com/gpudx/gpudx/snapshot"
)

// TestActiveTimelineBrowser opens the one-file page of a snapshot with a
// trace in Chromium, moves the mouse onto a band of the active-memory
// timeline, and reads its tooltip: the band's size, site and stack. A
// click pins it: hovering another band then leaves the tooltip as it was.
func TestActiveTimelineBrowser(t *testing.T) {
	s, err := snapshot.ReadFile("../../snapshot/testdata/hand-p4.pickle")
	if err != nil {
		t.Fatal(err)
	}
	r := memory.Analyze(s, memory.Options{RequestDevice: -1})
	tl := memory.ActiveTimelineOf(s, r.Peak.Device, 0, 0)
	if tl == nil || len(tl.Bands) < 2 {
		t.Fatalf("the fixture needs at least two bands: %+v", tl)
	}
	var page bytes.Buffer
	if err := HTML(&page, r, s, Options{Name: "hand-p4.pickle"}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "mem.html")
	if err := os.WriteFile(file, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	br := browsertest.Start(t, 2*time.Minute)
	ctx, step, textOf := br.Ctx, br.Step, br.Text
	// mouse moves (and clicks) the real pointer onto band b: the first
	// point of a grid over the chart (scrolled into view) where the
	// element under the pointer is that band.
	mouse := func(b int, click bool) {
		t.Helper()
		step("pointer on band", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			xy, err := chromedp.Evaluate[[]float64](`(function(b){
				var svg = document.getElementById("active-svg");
				svg.scrollIntoView({block: "center"});
				var r = svg.getBoundingClientRect();
				for (var y = r.top + 1; y < r.bottom; y += 1) {
					for (var x = r.left + 1; x < r.right; x += 2) {
						var el = document.elementFromPoint(x, y);
						if (el && el.getAttribute("data-b") === String(b)) { return [x, y]; }
					}
				}
				return [];
			})(`+strconv.Itoa(b)+`)`)(ctx, tg)
			if err != nil {
				return err
			}
			if len(xy) != 2 {
				t.Fatalf("band %d is nowhere on the chart", b)
			}
			types := []input.DispatchMouseEventType{input.DispatchMouseEventTypeMouseMoved}
			if click {
				types = append(types, input.DispatchMouseEventTypeMousePressed, input.DispatchMouseEventTypeMouseReleased)
			}
			for _, typ := range types {
				p := input.DispatchMouseEventParams{Type: typ, X: xy[0], Y: xy[1]}
				if typ != input.DispatchMouseEventTypeMouseMoved {
					p.Button, p.ClickCount = input.MouseButtonLeft, 1
				}
				if _, err := cdp.Call(ctx, tg, input.DispatchMouseEvent, p); err != nil {
					return err
				}
			}
			return nil
		}))
	}

	step("open the page", chromedp.Navigate("file://"+file), chromedp.WaitVisible(chromedp.CSS("#active-svg")))
	b := len(tl.Bands) - 1 // the last band: on top, so never hidden
	mouse(b, false)
	tip := textOf("#tl-tip")
	band := tl.Bands[b]
	_, site := newStackTable(s, lang(Options{})).get(band.Stack)
	for _, want := range []string{size(band.Size) + " · " + site, "alive from"} {
		if !strings.Contains(tip, want) {
			t.Errorf("tooltip lacks %q:\n%s", want, tip)
		}
	}
	// The stack's innermost kept frame is shown.
	if _, kept := memory.SiteOf(s.Stacks[band.Stack]); len(kept) > 0 && !strings.Contains(tip, frameText(kept[0])) {
		t.Errorf("tooltip lacks the stack's frame %q:\n%s", frameText(kept[0]), tip)
	}
	// The bands of the hovered band's site are highlighted, the others not.
	sctx, done := context.WithTimeout(ctx, 30*time.Second)
	defer done()
	hl, err := chromedp.Run(sctx, chromedp.Evaluate[[]string](`Array.prototype.map.call(document.querySelectorAll(".band.hl"), function (x) { return x.getAttribute("data-c"); })`))
	if err != nil {
		t.Fatal(err)
	}
	if len(hl) == 0 {
		t.Error("no band highlighted")
	}
	for _, c := range hl {
		if c != hl[0] {
			t.Errorf("highlighted bands of different sites: %v", hl)
		}
	}

	// Click pins the band: moving onto another leaves the tooltip.
	mouse(b, true)
	mouse(0, false)
	if got := textOf("#tl-tip"); got != tip {
		t.Errorf("pinned tooltip changed:\n%s\nwas\n%s", got, tip)
	}
}
