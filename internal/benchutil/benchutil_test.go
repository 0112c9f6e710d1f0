package benchutil

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1GB": 1e9, "50MB": 50e6, "2GiB": 2 << 30, "100MiB": 100 << 20, "4096": 4096, "1.5GB": 15e8,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GB", "-1MB", "x"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q): no error", in)
		}
	}
}
