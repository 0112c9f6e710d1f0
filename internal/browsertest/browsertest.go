// Package browsertest starts Debian's Chromium for the browser tests of the
// web page and of the one-file memory page, with the flags this machine's
// closed network needs, and gives each test steps that fail instead of
// hanging. Without Chromium a test is skipped with a message, or fails
// under GPUDX_REQUIRE_SERVICES=1 (.ci/run installs Chromium and sets it).
package browsertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium returns the browser to drive: $GPUDX_CHROMIUM, else Debian's
// /usr/bin/chromium.
func Chromium(t testing.TB) string {
	t.Helper()
	path := os.Getenv("GPUDX_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		msg := "no Chromium at " + path + " (set GPUDX_CHROMIUM; .ci/run installs Debian's chromium)"
		if os.Getenv("GPUDX_REQUIRE_SERVICES") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// Browser is a headless Chromium with one blank tab.
type Browser struct {
	Ctx context.Context // the tab; cancelled when the test ends or the watchdog fires
	Exe string
	t   testing.TB
}

// Start starts Chromium (or skips the test) and bounds the whole test by
// watchdog. The first action starts the browser and must not carry a
// timeout of its own (it would stop the browser), hence the watchdog.
func Start(t testing.TB, watchdog time.Duration) *Browser {
	t.Helper()
	exe := Chromium(t)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	dog := time.AfterFunc(watchdog, cancel)
	t.Cleanup(func() { dog.Stop(); cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return &Browser{Ctx: ctx, Exe: exe, t: t}
}

// Step runs actions with a deadline of their own, so a broken page fails
// the test instead of hanging it.
func (b *Browser) Step(name string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, done := context.WithTimeout(b.Ctx, 30*time.Second)
	defer done()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", name, err)
	}
}

// Text is the text of the first element sel selects, trimmed.
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	ctx, done := context.WithTimeout(b.Ctx, 30*time.Second)
	defer done()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("reading %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}
