// Package web serves gpudx's web page: paste or drop a log and read the
// diagnosis, drop a memory snapshot and see the memory view, and browse
// the knowledge base, in English or Chinese, with no outside network.
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

// New returns the page's handler, to be mounted at "/".
func New(svc *service.Service, opt Options) http.Handler {
	return http.NotFoundHandler()
}
