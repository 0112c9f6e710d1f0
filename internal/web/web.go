// Package web serves gpudx's web page: paste or drop a log and read the
// diagnosis, drop a memory snapshot and see the memory view, and browse
// the knowledge base, in English or Chinese, with no outside network.
//
// Every page is plain html/template output that works with JavaScript off
// (forms that POST, links that GET); one small script from /static only
// adds drag and drop and keyboard shortcuts. Nothing is loaded from
// another site, and the Content-Security-Policy says so.
package web

import (
	"net/http"

	"github.com/gpudx/gpudx/internal/service"
)

// Options configure the page. Zero sizes take the defaults of gpudx serve
// (64 MiB for a log, 4 GiB for a snapshot).
type Options struct {
	MaxLogBytes      int64
	MaxSnapshotBytes int64
	Version          string
}

// Default limits, as gpudx serve documents them.
const (
	DefaultMaxLogBytes      = 64 << 20
	DefaultMaxSnapshotBytes = 4 << 30
)

// handler serves every page; it holds no per-request state.
type handler struct {
	svc *service.Service
	opt Options
	mux *http.ServeMux
}

// New returns the page's handler, to be mounted at "/".
func New(svc *service.Service, opt Options) http.Handler {
	if opt.MaxLogBytes <= 0 {
		opt.MaxLogBytes = DefaultMaxLogBytes
	}
	if opt.MaxSnapshotBytes <= 0 {
		opt.MaxSnapshotBytes = DefaultMaxSnapshotBytes
	}
	h := &handler{svc: svc, opt: opt, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /{$}", h.index)
	h.mux.HandleFunc("POST /diagnose", h.diagnose)
	h.mux.HandleFunc("GET /diagnose", redirectTo("/"))
	h.mux.HandleFunc("GET /memory", h.memoryForm)
	h.mux.HandleFunc("POST /memory", h.memory)
	h.mux.HandleFunc("GET /entries", h.entries)
	h.mux.HandleFunc("GET /entries/{id...}", h.entry)
	h.mux.HandleFunc("GET /static/", h.static(staticFiles()))
	h.mux.HandleFunc("GET /favicon.ico", redirectTo(staticURL("icon.svg")))
	h.mux.HandleFunc("/", h.notFound)
	return h
}

// ServeHTTP sets the headers every answer carries, then routes.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", pageCSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	h.mux.ServeHTTP(w, r)
}

// pageCSP allows only this server's own files: the stylesheet and the
// script under /static, and forms that post back here. The memory page,
// which memview writes with its style and script inline, gets its own
// policy naming their hashes (memory.go).
const pageCSP = "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func redirectTo(path string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, path, http.StatusSeeOther)
	}
}
