package web

import (
	"context"
	"github.com/gpudx/gpudx/internal/browsertest"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowser drives a real Chromium through the page as a person would:
// paste a log, submit it with the keyboard, read the root cause, open its
// entry, switch to Chinese. Each step leaves a screenshot.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a real Chromium for a minute or more; runs without -short (.ci/run)")
	}
	srv := httptest.NewServer(New(newService(t, nil), Options{Version: "test"}))
	defer srv.Close()
	log := string(readFile(t, "../../examples/ddp-oom.log"))
	snapPath, err := filepath.Abs("../../snapshot/testdata/hand-p4.pickle")
	if err != nil {
		t.Fatal(err)
	}

	shots := t.TempDir()
	br := browsertest.Start(t, 3*time.Minute)
	ctx, step, textOf := br.Ctx, br.Step, br.Text
	n := 0
	shot := func(name string) {
		t.Helper()
		sctx, done := context.WithTimeout(ctx, 30*time.Second)
		defer done()
		png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		n++
		path := filepath.Join(shots, name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %d: %s", n, path)
		if dir := os.Getenv("GPUDX_WEB_SHOTS"); dir != "" {
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
		}
	}

	// 1. The start page in English; paste the log and press Ctrl+Enter.
	step("open the start page",
		chromedp.Navigate(srv.URL+"/?lang=en"),
		chromedp.WaitVisible(chromedp.CSS("#diag-log")),
		chromedp.SetValue(chromedp.CSS("#diag-log"), log),
		chromedp.Focus(chromedp.CSS("#diag-log")),
	)
	shot("1-start")
	step("submit with Ctrl+Enter",
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS("article.card.root")),
	)
	if got := textOf("article.card.root h2 a.id code"); got != "pytorch/cuda-out-of-memory" {
		t.Errorf("root cause card: %q, want pytorch/cuda-out-of-memory", got)
	}
	if got := textOf(".summary .headline"); got != "4 known errors found" {
		t.Errorf("headline: %q", got)
	}
	shot("2-diagnosis")

	// 2. The root cause's entry, through the card's link.
	step("open the entry",
		chromedp.Click(chromedp.CSS("article.card.root h2 a.id")),
		chromedp.WaitVisible(chromedp.CSS("#dead-h")),
	)
	if got := textOf("h1 code"); got != "pytorch/cuda-out-of-memory" {
		t.Errorf("entry page title: %q", got)
	}
	if got := textOf("#what-h"); got != "What went wrong" {
		t.Errorf("English heading: %q", got)
	}
	shot("3-entry")

	// 3. Switch to Chinese with the header's switch.
	step("switch to Chinese",
		chromedp.Click(chromedp.CSS(`ul.langs a[hreflang="zh-CN"]`)),
		chromedp.WaitVisible(chromedp.CSS(`html[lang="zh-CN"] #what-h`)),
	)
	if got := textOf("#what-h"); got != "出了什么问题" {
		t.Errorf("Chinese heading: %q, want 出了什么问题", got)
	}
	if got := textOf("#dead-h"); got != "先别试这些" {
		t.Errorf("Chinese dead-end heading: %q", got)
	}
	shot("4-entry-zh")

	// 4. The language is remembered: the start page is now Chinese, and a
	// snapshot read there gives memview's Chinese page.
	step("open the memory page",
		chromedp.Navigate(srv.URL+"/memory"),
		chromedp.WaitVisible(chromedp.CSS("#mem-file")),
		chromedp.SetUploadFiles(chromedp.CSS("#mem-file"), []string{snapPath}),
	)
	if got := textOf("h1"); got != "读取 PyTorch 显存快照" {
		t.Errorf("memory form title in Chinese: %q", got)
	}
	shot("5-memory-form-zh")
	step("read the snapshot",
		chromedp.Focus(chromedp.CSS("#mem-file")),
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS("#oom-h")),
	)
	if got := textOf("#oom-h"); !strings.HasPrefix(got, "显存不足（OOM），设备 cuda:0") {
		t.Errorf("memory page heading: %q", got)
	}
	// memview's inline script runs under the page's policy (its hash is
	// allowed): a click on a block opens the details panel.
	step("click a block of the segment map",
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`document.querySelector("rect.blk").dispatchEvent(new MouseEvent("click", {bubbles: true}))`)(ctx, tg)
			return err
		}),
		chromedp.WaitVisible(chromedp.CSS("#details-body")),
	)
	shot("6-memory-zh")

	// 5. The result page's switch keeps the result: it posts the log again.
	step("diagnose in Chinese, then switch back to English",
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#diag-log")),
		chromedp.SetValue(chromedp.CSS("#diag-log"), log),
		chromedp.Click(chromedp.CSS("#diag button.primary")),
		chromedp.WaitVisible(chromedp.CSS("article.card.root")),
	)
	if got := textOf("article.card.root .badge"); got != "根本原因" {
		t.Errorf("Chinese badge: %q", got)
	}
	shot("7-diagnosis-zh")
	step("switch the result to English",
		chromedp.Click(chromedp.CSS(`ul.langs button[value="en"]`)),
		chromedp.WaitVisible(chromedp.CSS(`html[lang="en"] article.card.root`)),
	)
	if got := textOf("article.card.root .badge"); got != "ROOT CAUSE" {
		t.Errorf("English badge after the switch: %q", got)
	}

	// 6. A log file dropped on the paste area becomes the file to read.
	logPath, err := filepath.Abs("../../examples/ddp-oom.log")
	if err != nil {
		t.Fatal(err)
	}
	step("drop a log file on the paste area",
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#diag-log")),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			xy, err := chromedp.Evaluate[[]float64](`(function(){var r=document.getElementById("diag-log").getBoundingClientRect();return [r.x+r.width/2, r.y+r.height/2]})()`)(ctx, tg)
			if err != nil {
				return err
			}
			data := &input.DragData{Items: []*input.DragDataItem{}, Files: []string{logPath}, DragOperationsMask: 1}
			for _, typ := range []input.DispatchDragEventType{input.DispatchDragEventTypeDragEnter, input.DispatchDragEventTypeDragOver, input.DispatchDragEventTypeDrop} {
				if _, err := cdp.Call(ctx, tg, input.DispatchDragEvent, input.DispatchDragEventParams{Type: typ, X: xy[0], Y: xy[1], Data: data}); err != nil {
					return err
				}
			}
			return nil
		}),
		chromedp.WaitVisible(chromedp.CSS(`p.dropped[data-file-name="diag-file"]`)),
	)
	if got := textOf(`p.dropped[data-file-name="diag-file"]`); got != "File to read: ddp-oom.log" {
		t.Errorf("after the drop: %q", got)
	}
	shot("8-dropped")
	step("submit the dropped file",
		chromedp.Focus(chromedp.CSS("#diag-log")),
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.WaitVisible(chromedp.CSS("article.card.root")),
	)
	if got := textOf(".summary .meta"); !strings.HasSuffix(got, "· from ddp-oom.log") {
		t.Errorf("source of the diagnosis: %q", got)
	}

	// 7. "/" jumps to the search box from any page; Enter searches.
	step("search from an entry page with /",
		chromedp.Navigate(srv.URL+"/entries/nccl/watchdog-timeout"),
		chromedp.WaitVisible(chromedp.CSS("#site-q")),
		chromedp.KeyEvent("/"),
		chromedp.KeyEvent("Xid 79"),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitVisible(chromedp.CSS("ul.entries")),
	)
	if got := textOf("ul.entries li:first-child a.id code"); got != "driver/xid-79-fallen-off-bus" {
		t.Errorf("first result for Xid 79: %q", got)
	}
	sctx, done := context.WithTimeout(ctx, 30*time.Second)
	q, err := chromedp.Run(sctx, chromedp.Value(chromedp.CSS("#q")))
	done()
	if err != nil || q != "Xid 79" {
		t.Errorf("search box after / and typing: %q, %v; want Xid 79", q, err)
	}
	shot("9-search")

	// 8. A phone-sized window in dark mode: the diagnosis still reads.
	step("dark mode on a narrow screen",
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
			})
			return err
		}),
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#diag-log")),
		chromedp.SetValue(chromedp.CSS("#diag-log"), log),
		chromedp.Click(chromedp.CSS("#diag button.primary")),
		chromedp.WaitVisible(chromedp.CSS("article.card.root")),
	)
	shot("10-diagnosis-narrow-dark")
}
