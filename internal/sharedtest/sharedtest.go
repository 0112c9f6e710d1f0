// Package sharedtest finds the project's shared material for tests (the
// shared/ folder beside the repository: real snapshots, the deadends corpus,
// the seeds, the evaluation logs). A fresh clone of the repository alone has
// none of it: a test that needs it is skipped there with a message, and
// fails instead when GPUDX_REQUIRE_SHARED=1 (as .ci/run sets), so that CI
// cannot pass by skipping.
package sharedtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Required reports whether tests must fail, not skip, without shared/.
func Required() bool { return os.Getenv("GPUDX_REQUIRE_SHARED") == "1" }

// Dir is the shared/ folder beside the repository, found from the test's
// working directory; "" when there is none.
func Dir() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			s := filepath.Join(dir, "..", "shared")
			if fi, err := os.Stat(s); err == nil && fi.IsDir() {
				return s
			}
			return ""
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// Path is rel inside shared/ when it exists. Otherwise the test is skipped
// with a message, or fails under GPUDX_REQUIRE_SHARED=1.
func Path(t testing.TB, rel string) string {
	t.Helper()
	if d := Dir(); d != "" {
		p := filepath.Join(d, rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	Missing(t, rel)
	return ""
}

// Missing skips the test, or fails it under GPUDX_REQUIRE_SHARED=1, for
// shared material that is not there.
func Missing(t testing.TB, rel string) {
	t.Helper()
	if Required() {
		t.Fatalf("shared/%s is missing beside the repository, and GPUDX_REQUIRE_SHARED=1", rel)
	}
	t.Skipf("shared/%s is not beside the repository (a clone of the repository alone): skipped; GPUDX_REQUIRE_SHARED=1 makes this a failure", rel)
}
