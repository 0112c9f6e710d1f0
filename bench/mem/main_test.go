package main

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1GB": 1e9, "50MB": 50e6, "2GiB": 2 << 30, "100MiB": 100 << 20, "4096": 4096, "1.5GB": 15e8,
	} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GB", "-1MB", "x"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q): no error", in)
		}
	}
}

func TestCompareJSON(t *testing.T) {
	want := decode([]byte(`{"a":1,"b":[{"c":0.5}],"d":null}`))
	got := decode([]byte(`{"a":1,"b":[{"c":0.5,"x":2}],"d":null,"e":3}`))
	var m []string
	if n := compareJSON(&m, "r", want, got); n != 3 || len(m) != 0 {
		t.Errorf("equal: n=%d mismatches %v", n, m)
	}
	bad := decode([]byte(`{"a":2,"b":[],"d":1}`))
	m = nil
	compareJSON(&m, "r", want, bad)
	if len(m) != 3 {
		t.Errorf("want 3 mismatches, got %q", m)
	}
}
