package main

import "testing"

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
