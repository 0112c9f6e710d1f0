// Package server is gpudx's HTTP API: diagnose a log, browse and search
// the knowledge base, analyze a memory snapshot, record outcomes, with
// health, metrics and an OpenAPI document, behind size, time and
// concurrency limits.
package server

import (
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/gpudx/gpudx/internal/service"
)

// Defaults of Options. The timeouts are sized for the largest request,
// a 4 GiB snapshot upload: about 35 s on a 1 Gbit/s LAN, 6 min on
// 100 Mbit/s, then the analysis.
const (
	DefaultMaxLogBytes       = 64 << 20
	DefaultMaxSnapshotBytes  = 4 << 30
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 10 * time.Minute
	DefaultWriteTimeout      = 15 * time.Minute
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultDrainTimeout      = 30 * time.Second
	// A body must start within DefaultBodyTimeout and then arrive at
	// DefaultMinBodyRate (128 kbit/s): a 64 MiB log may take 68 minutes,
	// but a client sending a byte now and then is cut off in seconds.
	DefaultBodyTimeout = 10 * time.Second
	DefaultMinBodyRate = 16 << 10
)

// maxOutcomeBytes bounds an outcome report's body: its fields are limited
// to a few KiB (outcome.Report.Validate).
const maxOutcomeBytes = 64 << 10

// Options configure a Server. Zero values take the documented defaults.
type Options struct {
	// Web serves the page at "/" (nil: none). MCP serves /mcp (nil: none).
	Web http.Handler
	MCP http.Handler

	// MaxLogBytes bounds a log sent to /api/v1/diagnose, before and after
	// gzip decoding (default 64 MiB). MaxSnapshotBytes bounds a snapshot
	// upload the same way (default 4 GiB). Larger bodies get 413.
	MaxLogBytes      int64
	MaxSnapshotBytes int64

	// MaxConcurrent is how many requests run at once (default
	// 4×GOMAXPROCS); beyond it a request gets 503 with Retry-After at once.
	// /healthz, /metrics and MCP's event streams are not counted. A body
	// of up to 1 MiB is read before its request takes a slot; a larger one
	// takes one of MaxUploads slots instead (default MaxConcurrent/4, at
	// least 2), so that slow uploads cannot hold every slot.
	MaxConcurrent int
	MaxUploads    int

	// BodyTimeout and MinBodyRate (bytes per second) bound how slowly a
	// request body may arrive: after n bytes, reading it times out (408)
	// at BodyTimeout + n/MinBodyRate from the request's start.
	BodyTimeout time.Duration
	MinBodyRate int64

	// Requests that change state (POST /api/v1/outcomes, MCP calls) are
	// refused from other sites' web pages (Origin, Sec-Fetch-Site), without
	// a JSON Content-Type, and with a Host that is not this server's
	// address, localhost or this machine's name, unless it is in
	// AllowedHosts ("*": any). With Token set they need "Authorization:
	// Bearer Token" too.
	AllowedHosts []string
	Token        string

	// Timeouts of the http.Server that Serve runs (see net/http), and how
	// long Serve waits for in-flight requests when it is stopped.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	DrainTimeout      time.Duration

	// Logger receives panics, internal errors and the http.Server's own
	// messages (default: text on standard error).
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.MaxLogBytes <= 0 {
		o.MaxLogBytes = DefaultMaxLogBytes
	}
	if o.MaxSnapshotBytes <= 0 {
		o.MaxSnapshotBytes = DefaultMaxSnapshotBytes
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 4 * runtime.GOMAXPROCS(0)
	}
	if o.MaxUploads <= 0 {
		o.MaxUploads = max(2, o.MaxConcurrent/4)
	}
	if o.MinBodyRate <= 0 {
		o.MinBodyRate = DefaultMinBodyRate
	}
	def(&o.BodyTimeout, DefaultBodyTimeout)
	def(&o.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&o.ReadTimeout, DefaultReadTimeout)
	def(&o.WriteTimeout, DefaultWriteTimeout)
	def(&o.IdleTimeout, DefaultIdleTimeout)
	def(&o.DrainTimeout, DefaultDrainTimeout)
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return o
}

// Server is the HTTP API over one Service.
type Server struct {
	svc     *service.Service
	opt     Options
	api     *http.ServeMux
	routes  []route
	slots   chan struct{} // one per running limited request
	uploads chan struct{} // one per limited request with a body over preReadMax
	guard   *writeGuard
	writes  map[string]bool // route patterns that change state
	metrics *metrics
	// stopping is closed when Serve begins to shut down; long-lived MCP
	// event streams end then instead of holding the drain to its timeout.
	stopping chan struct{}
	// onShutdown, when set (tests), runs once Serve has closed its
	// listener and is draining.
	onShutdown func()
}

// route is one API operation; the OpenAPI document lists the same set.
type route struct {
	method, path string
	h            http.HandlerFunc
	writes       bool // changes state: guarded by writeGuard
}

// New returns a Server for svc.
func New(svc *service.Service, opt Options) *Server {
	opt = opt.withDefaults()
	s := &Server{
		svc:      svc,
		opt:      opt,
		api:      http.NewServeMux(),
		slots:    make(chan struct{}, opt.MaxConcurrent),
		uploads:  make(chan struct{}, opt.MaxUploads),
		guard:    newWriteGuard(opt),
		writes:   map[string]bool{},
		metrics:  newMetrics(),
		stopping: make(chan struct{}),
	}
	s.routes = []route{
		{"POST", "/api/v1/diagnose", s.diagnose, false},
		{"GET", "/api/v1/entries", s.entries, false},
		{"GET", "/api/v1/entries/{domain}/{slug}", s.entry, false},
		{"GET", "/api/v1/domains", s.domains, false},
		{"GET", "/api/v1/search", s.search, false},
		{"POST", "/api/v1/snapshots", s.snapshot, false},
		{"POST", "/api/v1/outcomes", s.outcomes, true},
		{"GET", "/api/v1/openapi.json", s.openapi, false},
		{"GET", "/healthz", s.healthz, false},
		{"GET", "/metrics", s.metrics.handler().ServeHTTP, false},
	}
	for _, r := range s.routes {
		s.api.HandleFunc(r.method+" "+r.path, r.h)
		s.writes[r.method+" "+r.path] = r.writes
	}
	return s
}

// Handler returns the whole HTTP surface: the API, /healthz, /metrics,
// and the web page and /mcp when set.
func (s *Server) Handler() http.Handler { return s }

// unlimited are the routes that answer even when every slot is taken: a
// probe or a scrape must see an overloaded server, not a 503.
var unlimited = map[string]bool{"GET /healthz": true, "GET /metrics": true}

// ServeHTTP routes a request, counts it, bounds how many run at once and
// turns a panic into a 500.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	label, h, limited := s.dispatch(r)
	s.pace(w, r, time.Now())
	rec := &recorder{ResponseWriter: w}
	m := s.metrics
	m.inflight.Inc()
	start := time.Now()
	defer func() {
		p := recover()
		if p != nil {
			if p == http.ErrAbortHandler {
				m.inflight.Dec()
				panic(p)
			}
			s.opt.Logger.Error("panic in handler", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", stack())
			if !rec.wrote {
				writeError(rec, http.StatusInternalServerError, "internal error: the server failed on this request (it is logged)")
			}
		}
		m.inflight.Dec()
		m.observe(label, rec.status(), time.Since(start))
	}()
	// MCP's POSTs call tools, and report_outcome writes.
	if w := s.writes[label]; w || (label == "mcp" && r.Method == http.MethodPost) {
		if !s.guard.allow(rec, r, w) {
			return
		}
	}
	if limited {
		slots, what, whole := s.slots, "requests", preRead(r)
		if !whole {
			slots, what = s.uploads, "uploads"
		}
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		default:
			m.rejected.Inc()
			rec.Header().Set("Retry-After", "1")
			if !whole {
				rec.Header().Set("Connection", "close") // the rest of the body is not read
			}
			writeError(rec, http.StatusServiceUnavailable, "the server is busy (%d %s running); retry in a second", cap(slots), what)
			return
		}
	}
	h.ServeHTTP(rec, r)
}

// dispatch picks the handler of a request and the label its metrics carry:
// the API route's pattern, "web", "mcp" or "unmatched".
func (s *Server) dispatch(r *http.Request) (label string, h http.Handler, limited bool) {
	p := r.URL.Path
	switch {
	case p == "/api" || strings.HasPrefix(p, "/api/") || p == "/healthz" || p == "/metrics":
		if _, pat := s.api.Handler(r); pat != "" {
			return pat, s.api, !unlimited[pat]
		}
		return "unmatched", http.HandlerFunc(s.unmatched), true
	case s.opt.MCP != nil && (p == "/mcp" || strings.HasPrefix(p, "/mcp/")):
		if r.Method == http.MethodGet {
			// A GET opens the session's event stream, which stays open:
			// it would hold a slot for good, and Shutdown must end it.
			return "mcp", s.stream(s.opt.MCP), false
		}
		return "mcp", s.opt.MCP, true
	case s.opt.Web != nil:
		return "web", s.opt.Web, true
	}
	return "unmatched", http.HandlerFunc(s.unmatched), true
}

// unmatched answers a request no API route takes: the mux's 404, 405 (with
// its Allow header) or redirect, with a JSON body for the errors.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request) {
	h, _ := s.api.Handler(r)
	hr := &headerRecorder{h: http.Header{}}
	h.ServeHTTP(hr, r)
	switch hr.code {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", hr.h.Get("Allow"))
		writeError(w, http.StatusMethodNotAllowed, "%s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, hr.h.Get("Allow"))
	case http.StatusNotFound, 0:
		writeError(w, http.StatusNotFound, "no such endpoint: %s %s (the API is described at /api/v1/openapi.json)", r.Method, r.URL.Path)
	default: // a redirect to the cleaned path
		for k, v := range hr.h {
			if k != "Content-Type" && k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(hr.code)
	}
}

// stream runs a long-lived request with a context that also ends when
// Serve begins to shut down.
func (s *Server) stream(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := contextUntil(r.Context(), s.stopping)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
