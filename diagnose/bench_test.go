package diagnose

import (
	"bytes"
	"testing"

	"github.com/gpudx/gpudx/internal/loggen"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
	"github.com/gpudx/gpudx/scan"
)

// BenchmarkDiagnoseLog is a diagnosis of 64 MiB of generated training log
// with one planted error in 10,000 lines (the bench/scan density): the
// collector's gate (Plan) against showing it every line (Gate.All).
func BenchmarkDiagnoseLog(b *testing.B) {
	es, _ := kb.LoadFS(knowledge.FS, ".", "knowledge/")
	var planted []string
	for _, e := range es {
		planted = append(planted, e.Examples.Match...)
	}
	data := loggen.Bytes(64<<20, planted, 10000, 5)
	s, _ := scan.New(es)
	for _, kind := range []string{"gated", "every-line"} {
		b.Run(kind, func(b *testing.B) {
			p := Plan(s)
			if kind == "every-line" {
				p = s.Plan(scan.Gate{All: true})
			}
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				c := NewCollector(s.Entries())
				if _, err := p.Visit(bytes.NewReader(data), c); err != nil {
					b.Fatal(err)
				}
				c.Report()
			}
		})
	}
}
