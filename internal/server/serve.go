package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
)

// healthz answers GET /healthz: the server is up and its knowledge base
// is loaded.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Status  string `json:"status"`
		Entries int    `json:"entries"`
	}{"ok", s.svc.Base().Len()})
}

// HTTPServer returns an http.Server for this Server with its timeouts.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.opt.ReadHeaderTimeout,
		ReadTimeout:       s.opt.ReadTimeout,
		WriteTimeout:      s.opt.WriteTimeout,
		IdleTimeout:       s.opt.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.opt.Logger.Handler(), slog.LevelWarn),
	}
}

// ErrDrain is returned by Serve when requests were still running at the
// end of the drain timeout (they were cut off).
var ErrDrain = errors.New("requests were still running at the end of the drain timeout")

// Serve answers requests on ln until ctx is done, then stops accepting
// connections, lets the requests in flight finish (at most DrainTimeout)
// and returns nil. A Server serves once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := s.HTTPServer()
	var once sync.Once
	hs.RegisterOnShutdown(func() {
		once.Do(func() { close(s.stopping) })
		if s.onShutdown != nil {
			s.onShutdown()
		}
	})
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	dctx, cancel := context.WithTimeout(context.Background(), s.opt.DrainTimeout)
	defer cancel()
	err := hs.Shutdown(dctx)
	<-errc // http.ErrServerClosed, now that Shutdown has begun
	if err != nil {
		hs.Close()
		return fmt.Errorf("%w (%v)", ErrDrain, s.opt.DrainTimeout)
	}
	return nil
}
