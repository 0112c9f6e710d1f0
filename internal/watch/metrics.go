package watch

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are gpudx watch's Prometheus metrics. Names start with gpudx_,
// apart from dcgm-exporter's DCGM_FI_* names; label values are entry ids,
// domains, severities and GPU ids, never text from the log.
type Metrics struct {
	reg       *prometheus.Registry
	diagnoses *prometheus.CounterVec
	drain     *prometheus.GaugeVec
	events    *prometheus.CounterVec
	Lines     prometheus.Counter
	Bytes     prometheus.Counter

	mu      sync.Mutex
	repeats map[[2]string]int // (entry, gpu) -> occurrences, for drain "if_repeats"
	gpus    map[string]bool
}

// maxGPULabels bounds the distinct gpu label values; a log naming more
// GPUs than a node has is counted under gpu="other".
const maxGPULabels = 64

// NewMetrics makes the metrics in a registry of their own.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		diagnoses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpudx_diagnoses_total",
			Help: "Log lines diagnosed as a known GPU error, by knowledge-base entry, its domain, its operator severity (none for application errors) and the GPU the line names (PCI bus id or index; empty when it names none).",
		}, []string{"entry", "domain", "severity", "gpu"}),
		drain: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpudx_gpu_drain_recommended",
			Help: "1 when an error seen on this GPU says to drain the node (the entry's operator block: drain yes, or if_repeats and seen twice on it); gpu is empty when the line names no GPU.",
		}, []string{"gpu"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpudx_watch_events_total",
			Help: "Events reported: new (a diagnosis first seen in an incident) or repeated (a summary of its repeats).",
		}, []string{"event"}),
		Lines: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpudx_watch_lines_total",
			Help: "Lines read from all sources.",
		}),
		Bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpudx_watch_read_bytes_total",
			Help: "Bytes of whole lines read from all sources.",
		}),
		repeats: map[[2]string]int{},
		gpus:    map[string]bool{},
	}
	m.reg.MustRegister(m.diagnoses, m.drain, m.events, m.Lines, m.Bytes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Hit counts one occurrence.
func (m *Metrics) Hit(h Hit) {
	m.mu.Lock()
	defer m.mu.Unlock()
	gpu := h.GPU
	if gpu != "" && !m.gpus[gpu] {
		if len(m.gpus) >= maxGPULabels {
			gpu = "other"
		} else {
			m.gpus[gpu] = true
		}
	}
	op := h.Entry.Operator
	sev := "none"
	if op != nil && op.Severity != "" {
		sev = op.Severity
	}
	m.diagnoses.WithLabelValues(h.Entry.ID, h.Entry.Domain, sev, gpu).Inc()
	if op == nil {
		return
	}
	k := [2]string{h.Entry.ID, gpu}
	m.repeats[k]++
	if op.Drain == "yes" || op.Drain == "if_repeats" && m.repeats[k] >= 2 {
		m.drain.WithLabelValues(gpu).Set(1)
	}
}

// Event counts one event.
func (m *Metrics) Event(e Event) { m.events.WithLabelValues(e.Event).Inc() }

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}
