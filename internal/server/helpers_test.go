package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpudx/gpudx/internal/service"
	"github.com/gpudx/gpudx/internal/store"
	"github.com/gpudx/gpudx/internal/syncbuf"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
	"github.com/gpudx/gpudx/outcome"
)

// Inputs the tests read: the bundled logs, the CLI's goldens (what `gpudx
// diagnose --format json` and `gpudx mem --format json` print for them)
// and the snapshot package's hand-made pickles.
const (
	examples  = "../../examples/"
	goldens   = "../cli/testdata/"
	snapshots = "../../snapshot/testdata/"
)

var (
	kbOnce    sync.Once
	kbEntries []*kb.Entry
	kbErr     error
)

// newService loads the built-in knowledge base, as gpudx serve does.
func newService(t *testing.T, st outcome.Store) *service.Service {
	t.Helper()
	kbOnce.Do(func() {
		kbEntries, kbErr = kb.LoadFS(knowledge.FS, ".", "knowledge/")
	})
	if kbErr != nil {
		t.Fatal(kbErr)
	}
	b := kb.NewBase()
	for _, e := range kbEntries {
		b.Add(e)
	}
	svc, err := service.New(b, st)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// newServer is a Server over the built-in knowledge base, logging into
// the returned buffer.
func newServer(t *testing.T, st outcome.Store, opt Options) (*Server, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	if opt.AllowedHosts == nil {
		opt.AllowedHosts = []string{"example.com"} // httptest.NewRequest's Host
	}
	return New(newService(t, st), opt), logs
}

// sqliteStore is a real outcome store in a temporary file.
func sqliteStore(t *testing.T) outcome.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "outcomes.db"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// req describes one request to a handler.
type req struct {
	method, target string
	body           []byte
	header         map[string]string
}

// do sends r to h in-process and returns the answer.
func do(t *testing.T, h http.Handler, r req) *httptest.ResponseRecorder {
	t.Helper()
	hr := httptest.NewRequest(r.method, r.target, bytes.NewReader(r.body))
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, hr)
	return w
}

// apiError checks that w is a JSON error with status and returns its
// message.
func apiError(t *testing.T, w *httptest.ResponseRecorder, status int) string {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d; body %s", w.Code, status, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var e struct {
		Error string `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(w.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Error == "" {
		t.Fatalf("not a JSON error: %s (%v)", w.Body, err)
	}
	return e.Error
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// exampleLogs are the bundled logs, each with the CLI's JSON for it.
func exampleLogs(t *testing.T) []string {
	t.Helper()
	logs, err := filepath.Glob(examples + "*.log")
	if err != nil || len(logs) != 4 {
		t.Fatalf("examples: %v %v", logs, err)
	}
	names := make([]string, len(logs))
	for i, l := range logs {
		names[i] = strings.TrimSuffix(filepath.Base(l), ".log")
	}
	return names
}

func decode(t *testing.T, w *httptest.ResponseRecorder, v any) {
	t.Helper()
	if err := json.Unmarshal(w.Body.Bytes(), v); err != nil {
		t.Fatalf("%v: %s", err, w.Body)
	}
}

// serveLocal starts s on a loopback port, as `gpudx serve` does. cancel
// begins the shutdown (the drain); served gives what Serve returned. At
// the test's end the server is stopped and waited for, whatever the test
// did with them.
func serveLocal(t *testing.T, s *Server) (addr string, cancel context.CancelFunc, served <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out, done := make(chan error, 1), make(chan struct{})
	go func() {
		out <- s.Serve(ctx, ln)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ln.Addr().String(), cancel, out
}
