package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/internal/service"
)

// diagnoseRequest is the JSON form of POST /api/v1/diagnose.
type diagnoseRequest struct {
	Log *string `json:"log"`
	Env string  `json:"env"`
}

// headBytes is how much of a log is checked for NUL bytes, as the CLI does.
const headBytes = 8 << 10

// diagnose answers POST /api/v1/diagnose: the body is the log itself, or
// JSON {"log", "env"}; the answer is `gpudx diagnose --format json`'s.
func (s *Server) diagnose(w http.ResponseWriter, r *http.Request) {
	// The limit applies to the body; in JSON form the body is the log and
	// its wrapping, and a refusal must not say the log was too large.
	what := "log"
	if isJSON(mediaType(r)) {
		what = "JSON body"
	}
	b := s.openBody(w, r, what, s.opt.MaxLogBytes, true)
	if b == nil {
		return
	}
	var (
		rep *diagnose.Report
		err error
	)
	if isJSON(mediaType(r)) {
		var req diagnoseRequest
		if err := decodeJSON(b, &req); err != nil {
			if !s.bodyFailed(w, b) {
				writeError(w, http.StatusBadRequest, `invalid JSON body: %v (want {"log": "...", "env": "..."})`, err)
			}
			return
		}
		switch {
		case req.Log == nil:
			writeError(w, http.StatusBadRequest, `the JSON body has no "log" field`)
			return
		case *req.Log == "":
			writeError(w, http.StatusBadRequest, `"log" is empty`)
			return
		case !s.textLog(w, head(*req.Log)):
			return
		}
		s.metrics.diagnosedBytes.Add(float64(len(*req.Log)))
		rep, err = s.svc.DiagnoseText(r.Context(), *req.Log, req.Env)
	} else {
		h, perr := b.Peek(headBytes)
		if perr != nil && perr != io.EOF && perr != bufio.ErrBufferFull {
			if !s.bodyFailed(w, b) {
				writeError(w, http.StatusBadRequest, "reading the log: %v", perr)
			}
			return
		}
		if len(h) == 0 {
			writeError(w, http.StatusBadRequest, "the request body is empty: send the log as the body, or JSON {\"log\": \"...\"} with Content-Type: application/json")
			return
		}
		if !s.textLog(w, h) {
			return
		}
		rep, err = s.svc.Diagnose(r.Context(), b, "")
		s.metrics.diagnosedBytes.Add(float64(b.bytes()))
		if err != nil && s.bodyFailed(w, b) {
			return
		}
	}
	if err != nil {
		s.serviceFailed(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func head(s string) []byte {
	if len(s) > headBytes {
		s = s[:headBytes]
	}
	return []byte(s)
}

// textLog answers 415 and returns false when the head of a log shows it is
// not text.
func (s *Server) textLog(w http.ResponseWriter, h []byte) bool {
	switch {
	case len(h) >= 2 && h[0] == 0x80 && h[1] >= 2 && h[1] <= 5:
		writeError(w, http.StatusUnsupportedMediaType, "the body is a Python pickle, not a log; if it is a PyTorch memory snapshot, POST it to /api/v1/snapshots")
	case service.LooksBinary(h):
		writeError(w, http.StatusUnsupportedMediaType, "the body is binary (NUL bytes in its first 8 KiB), not a log")
	default:
		return true
	}
	return false
}

// serviceFailed answers for an error of the service: 400 for a request to
// change, 404 for an unknown entry, 503 without a store or when the
// request was cancelled, else 500 (logged).
func (s *Server) serviceFailed(w http.ResponseWriter, r *http.Request, err error) {
	var inv *service.InvalidError
	switch {
	case errors.As(err, &inv):
		writeError(w, http.StatusBadRequest, "%s", inv.Msg)
	case errors.Is(err, service.ErrNotFound):
		writeError(w, http.StatusNotFound, "%v", err)
	case errors.Is(err, service.ErrNoStore):
		writeError(w, http.StatusServiceUnavailable, "%v (start gpudx serve with --db, or without --no-db)", err)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || r.Context().Err() != nil:
		writeError(w, http.StatusServiceUnavailable, "the request was cancelled")
	default:
		s.opt.Logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal error: %v", err)
	}
}
