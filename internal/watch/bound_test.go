package watch

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestBoundedState: a long run of errors and noise keeps the context and
// the incident state within their bounds, and the heap does not grow
// with the lines read.
func TestBoundedState(t *testing.T) {
	d := NewDetector(scanner(t), time.Minute)
	t0 := time.Now()
	var batch bytes.Buffer
	for i := range 50 {
		batch.WriteString(fmt.Sprintf("step %d loss 0.5\n", i))
		batch.WriteString(strings.Replace(lineXid13, "pid=2211", fmt.Sprintf("pid=%d", i), 1))
		batch.WriteString(lineIllegal)
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var h10 uint64
	for i := range 60 {
		d.Feed("kern.log", batch.Bytes(), t0.Add(time.Duration(i)*time.Second))
		if i == 10 {
			h10 = heap()
		}
	}
	s := d.sources["kern.log"]
	if len(s.context) > maxContextLines || s.ctxBytes > maxContextBytes {
		t.Errorf("context: %d lines, %d bytes; bounds %d, %d", len(s.context), s.ctxBytes, maxContextLines, maxContextBytes)
	}
	if len(s.seen) != 2 || s.line != 60*150 {
		t.Errorf("%d diagnoses in the incident, %d lines read; want 2, %d", len(s.seen), s.line, 60*150)
	}
	if h := heap(); h > h10+4<<20 {
		t.Errorf("heap grew from %d to %d bytes over 50 more batches", h10, h)
	}
}

// BenchmarkFeed: lines a second through the detector, for a log that is
// mostly noise with an error every hundred lines.
func BenchmarkFeed(b *testing.B) {
	d := NewDetector(scanner(&testing.T{}), time.Minute)
	var batch bytes.Buffer
	for i := range 1000 {
		if i%100 == 99 {
			batch.WriteString(lineXid13)
		} else {
			batch.WriteString(fmt.Sprintf("[rank0]: step %d loss 0.51234 lr 3e-4 tokens/s 151234 grad_norm 1.02\n", i))
		}
	}
	b.SetBytes(int64(batch.Len()))
	t0 := time.Now()
	for i := 0; b.Loop(); i++ {
		d.Feed("train.log", batch.Bytes(), t0.Add(time.Duration(i)*time.Millisecond))
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "lines/s")
}
