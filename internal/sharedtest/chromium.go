package sharedtest

import (
	"os"
	"testing"
)

// Chromium returns the browser a browser test drives ($GPUDX_CHROMIUM,
// else Debian's /usr/bin/chromium). Without one the test is skipped with a
// message, or fails under GPUDX_REQUIRE_SERVICES=1 (.ci/run installs
// Debian's chromium and sets it).
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
