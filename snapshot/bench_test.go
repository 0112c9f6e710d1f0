package snapshot

import (
	"os"
	"testing"
)

// BenchmarkReadFile decodes the file named by GPUDX_BENCH_SNAPSHOT (for
// example one written by bench/mem's generator); it is skipped without one.
func BenchmarkReadFile(b *testing.B) {
	p := os.Getenv("GPUDX_BENCH_SNAPSHOT")
	if p == "" {
		b.Skip("set GPUDX_BENCH_SNAPSHOT to a snapshot file")
	}
	st, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	for b.Loop() {
		if _, err := ReadFile(p); err != nil {
			b.Fatal(err)
		}
	}
}
