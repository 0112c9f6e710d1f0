package memview

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/gpudx/gpudx/memory"
	"github.com/gpudx/gpudx/snapshot"
)

// FuzzViews runs whatever the reader accepts through the analysis and every
// view: none may panic or hang (go test -fuzz FuzzViews ./internal/memview).
func FuzzViews(f *testing.F) {
	for _, p := range []string{"../../snapshot/testdata/hand-p4.pickle", "../../snapshot/testdata/legacy-p4.pickle", "../../snapshot/testdata/list-p4.pickle"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint32(0))
		f.Add(b, uint32(3<<20))
	}
	f.Fuzz(func(t *testing.T, b []byte, req uint32) {
		s, err := snapshot.Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		r := memory.Analyze(s, memory.Options{RequestDevice: -1, Request: uint64(req), Capacity: 80 << 30})
		if err := Text(io.Discard, r, Options{Lang: "zh", Stacks: true}); err != nil {
			t.Fatal(err)
		}
		if err := HTML(io.Discard, r, s, Options{Name: "fuzz", Lang: "zh"}); err != nil {
			t.Fatal(err)
		}
		if err := Pprof(io.Discard, s, "fuzz"); err != nil {
			t.Fatal(err)
		}
	})
}
