package loggen

import (
	"bytes"
	"testing"
)

// The output is reproducible, reaches the size, and plants the given lines
// at the given rate.
func TestWrite(t *testing.T) {
	planted := []string{"RuntimeError: CUDA error: an illegal memory access was encountered"}
	a := Bytes(1<<20, planted, 100, 7)
	b := Bytes(1<<20, planted, 100, 7)
	if !bytes.Equal(a, b) {
		t.Fatal("same arguments, different output")
	}
	if len(a) < 1<<20 || len(a) > 1<<20+512 {
		t.Errorf("%d bytes for 1 MiB", len(a))
	}
	lines := bytes.Count(a, []byte("\n"))
	got := bytes.Count(a, []byte(planted[0]))
	// One planted line per 100 generated ones (a traceback entry is two
	// lines, so there are more lines than steps).
	if got < lines/130 || got > lines/100 {
		t.Errorf("%d planted lines in %d lines", got, lines)
	}
	if n := bytes.Count(Bytes(1<<16, nil, 0, 1), []byte("illegal")); n != 0 {
		t.Errorf("%d planted lines without any to plant", n)
	}
}
