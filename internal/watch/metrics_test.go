package watch

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// series returns each series of the collector's metrics as
// name{label="value",...} -> value, labels in name order.
func series(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			out[mf.GetName()+"{"+strings.Join(ls, ",")+"}"] = v
		}
	}
	return out
}

// TestMetrics: counters by entry, domain, severity and GPU; the drain
// gauge from the operator blocks (yes at once, if_repeats on the second
// occurrence on one GPU); names in Prometheus' conventions.
func TestMetrics(t *testing.T) {
	m := NewMetrics()
	d := NewDetector(scanner(t), time.Minute)
	d.OnHit = m.Hit
	now := time.Now()
	d.Feed("kern.log", []byte(lineXid13), now)
	if n := len(series(t, m.drain)); n != 0 {
		t.Errorf("drain gauge has %d series after one Xid 13, want 0", n)
	}
	d.Feed("kern.log", []byte(lineXid79+lineXid79+lineXid13+lineOOM), now)

	want := map[string]float64{
		`gpudx_gpu_drain_recommended{gpu="0000:3b:00"}`:                                                                            1, // Xid 79: drain yes
		`gpudx_gpu_drain_recommended{gpu="0000:86:00"}`:                                                                            1, // Xid 13 twice: if_repeats
		`gpudx_diagnoses_total{domain="driver",entry="driver/xid-79-fallen-off-bus",gpu="0000:3b:00",severity="critical"}`:         2,
		`gpudx_diagnoses_total{domain="driver",entry="driver/xid-13-graphics-engine-exception",gpu="0000:86:00",severity="error"}`: 2,
		`gpudx_diagnoses_total{domain="pytorch",entry="pytorch/cuda-out-of-memory",gpu="0",severity="none"}`:                       1,
	}
	got := series(t, m.drain)
	for k, v := range series(t, m.diagnoses) {
		got[k] = v
	}
	if len(got) != len(want) {
		t.Errorf("%d series, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "DCGM_") || line != "" && !strings.HasPrefix(line, "#") &&
			!strings.HasPrefix(line, "gpudx_") && !strings.HasPrefix(line, "go_") && !strings.HasPrefix(line, "process_") && !strings.HasPrefix(line, "promhttp_") {
			t.Errorf("metric outside gpudx_ (and the Go client library's): %s", line)
		}
	}
}

// TestMetricsGPUBound: a log naming more GPUs than a node has does not
// grow the label set without bound.
func TestMetricsGPUBound(t *testing.T) {
	m := NewMetrics()
	e := scanner(t).Entries()[0]
	for i := range 200 {
		m.Hit(Hit{Entry: e, GPU: strings.Repeat("0", 4) + ":" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ":00"})
	}
	if n := len(series(t, m.diagnoses)); n != maxGPULabels+1 {
		t.Errorf("%d series, want %d (%d GPUs and \"other\")", n, maxGPULabels+1, maxGPULabels)
	}
}
