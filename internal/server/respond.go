package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"

	"github.com/gpudx/gpudx/internal/render"
)

// errorBody is every API error: {"error": "message"}.
type errorBody struct {
	Error string `json:"error"`
}

// writeError answers with status and a JSON message.
func writeError(w http.ResponseWriter, status int, format string, a ...any) {
	writeJSON(w, status, errorBody{fmt.Sprintf(format, a...)})
}

// writeJSON answers with status and v as indented JSON, written the way
// the CLI writes it (render.WriteJSON), so the bytes are the same.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	render.WriteJSON(w, v) // the client may be gone; nothing to do then
}

// recorder remembers the status a handler wrote, for the metrics and the
// panic handler. Flush and Unwrap keep streaming (MCP's event streams) and
// http.ResponseController working through it.
type recorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if !r.wrote {
		r.code, r.wrote = http.StatusOK, true
	}
	return r.ResponseWriter.Write(p)
}

func (r *recorder) Flush() {
	if !r.wrote {
		r.code, r.wrote = http.StatusOK, true
	}
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// status is what the client got: 200 when the handler wrote nothing.
func (r *recorder) status() int {
	if !r.wrote {
		return http.StatusOK
	}
	return r.code
}

// headerRecorder keeps the header and status of the mux's own answers
// (404, 405, redirects) and drops their plain-text bodies.
type headerRecorder struct {
	h    http.Header
	code int
}

func (h *headerRecorder) Header() http.Header { return h.h }
func (h *headerRecorder) WriteHeader(code int) {
	if h.code == 0 {
		h.code = code
	}
}
func (h *headerRecorder) Write(p []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	return len(p), nil
}

func stack() string { return string(debug.Stack()) }

// contextUntil is ctx, also cancelled when stop is closed.
func contextUntil(ctx context.Context, stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// decodeJSON reads one JSON value into v, refusing unknown fields and
// anything after the value.
func decodeJSON(body io.Reader, v any) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		return errors.New("unexpected data after the JSON object")
	}
	return nil
}
