package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus metrics, in a registry of its own
// (two servers in one process, as in tests, do not share counters).
type metrics struct {
	reg            *prometheus.Registry
	requests       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	inflight       prometheus.Gauge
	rejected       prometheus.Counter
	diagnosedBytes prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpudx_http_requests_total",
			Help: "HTTP requests answered, by route pattern and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gpudx_http_request_duration_seconds",
			Help: "Time from a request's arrival to the end of its answer, by route pattern.",
			// From a search (under a millisecond) to a large snapshot upload.
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"route"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpudx_http_requests_in_flight",
			Help: "Requests being answered now.",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpudx_http_requests_rejected_total",
			Help: "Requests answered 503 because the concurrency limit was reached.",
		}),
		diagnosedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpudx_diagnosed_bytes_total",
			Help: "Bytes of logs read by /api/v1/diagnose (after gzip decoding).",
		}),
	}
	m.reg.MustRegister(m.requests, m.duration, m.inflight, m.rejected, m.diagnosedBytes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observe(route string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
