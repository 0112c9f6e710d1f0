package literal

import (
	"fmt"
	"testing"
)

// A pattern's literal set: what any match must contain, lower-cased.
func TestRequired(t *testing.T) {
	tests := []struct {
		re   string
		want []string // nil: none usable
	}{
		{`CUDA error: out of memory`, []string{"cuda error: out of memory"}},
		{`CUDA out of memory\. Tried to allocate (?P<req>[0-9.]+ [KMG]iB)`, []string{"cuda out of memory. tried to allocate "}},
		{`(?i)nccl (timeout|watchdog)`, []string{"timeout", "watchdog"}}, // longer than "nccl "
		{`Xid.*: (79|74)`, []string{"xid"}},
		{`(illegal memory access|misaligned address)`, []string{"illegal memory access", "misaligned address"}},
		{`(illegal memory access|ab)`, nil}, // one alternative too short
		{`(?i)kernel`, []string{"ernel"}},   // k folds to the Kelvin sign
		{`(?i)SIGSEGV`, []string{"egv"}},    // S folds to the long s
		{`(?i)微信支付`, []string{"微信支付"}},      // no case variants: kept
		{`(?i)straße`, nil}, // s, ß fold beyond ASCII; "tra" 3 bytes... see below
		{`a.*b`, nil},
		{"GPU name: \uFFFD failed", []string{"gpu name: "}}, // U+FFFD also matches an invalid byte
		{`(foo)?barbaz`, []string{"barbaz"}},
		{`(abc)+`, []string{"abc"}},
		{`x{2,}yz`, nil}, // xx+yz: no piece of 3 bytes
		{`^$`, nil},
	}
	for _, tt := range tests {
		got, ok := Required(tt.re)
		if tt.re == `(?i)straße` {
			// "tra" survives (s and ß cut): three bytes is enough.
			if !ok || len(got) != 1 || got[0] != "tra" {
				t.Errorf("%s: %q %v", tt.re, got, ok)
			}
			continue
		}
		if ok != (tt.want != nil) || fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("Required(%q) = %q %v, want %q", tt.re, got, ok, tt.want)
		}
	}
}
