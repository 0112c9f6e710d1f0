package server

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A body of exactly the limit is read; one byte more is 413, whether the
// size is announced (Content-Length) or not (chunked), and whether the
// excess is on the wire or only after gzip decoding.
func TestBodyLimits(t *testing.T) {
	log := readFile(t, examples+"ddp-oom.log")
	snap := readFile(t, snapshots+"hand-p4.pickle")
	n, sn := int64(len(log)), int64(len(snap))
	s, _ := newServer(t, nil, Options{MaxLogBytes: n, MaxSnapshotBytes: sn})
	over := append(append([]byte{}, log...), '\n')
	bomb := gzipped(t, bytes.Repeat([]byte("loss 0.1\n"), 1000)) // 9000 bytes decoded
	for _, tt := range []struct {
		name    string
		target  string
		body    []byte
		chunked bool
		header  map[string]string
		status  int
		msg     string
	}{
		{"log at the limit", "/api/v1/diagnose", log, false, nil, 200, ""},
		{"log at the limit, chunked", "/api/v1/diagnose", log, true, nil, 200, ""},
		{"log one byte over", "/api/v1/diagnose", over, false, nil, 413, "the log is larger than this server's limit of 3.76 KiB (3848 bytes)"},
		{"log one byte over, chunked", "/api/v1/diagnose", over, true, nil, 413, "the log is larger than this server's limit of 3.76 KiB (3848 bytes)"},
		{"JSON log over", "/api/v1/diagnose", []byte(`{"log": "` + strings.Repeat("x", int(n)) + `"}`), true,
			map[string]string{"Content-Type": "application/json"}, 413, "the JSON body is larger than this server's limit of 3.76 KiB (3848 bytes)"},
		{"JSON body at the limit", "/api/v1/diagnose", []byte(`{"log": "` + strings.Repeat("x", int(n)-11) + `"}`), false,
			map[string]string{"Content-Type": "application/json"}, 200, ""},
		{"JSON body one byte over", "/api/v1/diagnose", []byte(`{"log": "` + strings.Repeat("x", int(n)-10) + `"}`), false,
			map[string]string{"Content-Type": "application/json"}, 413, "the JSON body is larger than this server's limit of 3.76 KiB (3848 bytes)"},
		{"gzip bomb", "/api/v1/diagnose", bomb, true, map[string]string{"Content-Encoding": "gzip"}, 413,
			"the log is larger once decompressed than this server's limit of 3.76 KiB (3848 bytes)"},
		{"gzip bomb sniffed", "/api/v1/diagnose", bomb, true, nil, 413, "the log is larger once decompressed"},
		{"snapshot at the limit", "/api/v1/snapshots", snap, true, nil, 200, ""},
		{"gzip snapshot at the limit", "/api/v1/snapshots", gzipped(t, snap), true, nil, 200, ""},
		{"gzip snapshot bomb sniffed", "/api/v1/snapshots", gzipped(t, append(append([]byte{}, snap...), make([]byte, 1<<20)...)), true, nil, 413,
			"the snapshot is larger once decompressed than this server's limit of 1.97 KiB (2014 bytes)"},
		{"snapshot one byte over", "/api/v1/snapshots", append(append([]byte{}, snap...), 0), false, nil, 413, "the snapshot is larger than this server's limit of 1.97 KiB (2014 bytes)"},
		{"snapshot one byte over, chunked", "/api/v1/snapshots", append(append([]byte{}, snap...), 0), true, nil, 413, "the snapshot is larger than this server's limit of 1.97 KiB (2014 bytes)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", tt.target, bytes.NewReader(tt.body))
			if tt.chunked {
				r.ContentLength = -1
			}
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if tt.status == 200 {
				if w.Code != 200 {
					t.Fatalf("%d %s", w.Code, w.Body)
				}
				return
			}
			if msg := apiError(t, w, tt.status); !strings.Contains(msg, tt.msg) {
				t.Errorf("%q, want %q in it", msg, tt.msg)
			}
			if w.Header().Get("Connection") != "close" {
				t.Errorf("no Connection: close on a 413")
			}
		})
	}
}

// A client that announces a huge body and sends little gets 413 at once,
// over a real connection; so does a truncated chunked body get 400.
func TestHostileConnections(t *testing.T) {
	s, _ := newServer(t, nil, Options{})
	ts := httptest.NewServer(s)
	defer ts.Close()
	for _, tt := range []struct {
		name, raw string
		status    string
		msg       string
	}{
		{"huge Content-Length", "POST /api/v1/diagnose HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999\r\n\r\nabc",
			"HTTP/1.1 413 Request Entity Too Large", `"error": "the log is larger than this server's limit of 64.00 MiB (67108864 bytes)"`},
		{"truncated chunked body", "POST /api/v1/diagnose HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n10\r\nCUDA error: ",
			"HTTP/1.1 400 Bad Request", `"error": "reading the log: unexpected EOF"`},
		{"short body", "POST /api/v1/diagnose HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nCUDA error: ",
			"HTTP/1.1 400 Bad Request", `"error": "reading the log: unexpected EOF"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", ts.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, tt.raw); err != nil {
				t.Fatal(err)
			}
			if tt.name == "truncated chunked body" || tt.name == "short body" {
				c.(*net.TCPConn).CloseWrite()
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if got := resp.Proto + " " + resp.Status; got != tt.status || !strings.Contains(string(body), tt.msg) {
				t.Errorf("%s %s, want %s with %s", got, body, tt.status, tt.msg)
			}
		})
	}
}

// blocker is a handler that holds its requests until released, and says
// when one has entered.
type blocker struct {
	entered chan struct{}
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *blocker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.entered <- struct{}{}
	select {
	case <-b.release:
	case <-r.Context().Done():
		return
	}
	io.WriteString(w, "page done")
}

// With every slot taken, a request is refused at once with 503 and
// Retry-After; health and metrics still answer; once a slot frees up,
// requests are served again.
func TestConcurrencyLimit(t *testing.T) {
	b := newBlocker()
	s, _ := newServer(t, nil, Options{MaxConcurrent: 2, Web: b})
	done := make(chan *httptest.ResponseRecorder, 2)
	for range 2 {
		go func() { done <- do(t, s, req{method: "GET", target: "/"}) }()
		<-b.entered
	}
	w := do(t, s, req{method: "GET", target: "/api/v1/domains"})
	if msg := apiError(t, w, 503); msg != "the server is busy (2 requests running); retry in a second" || w.Header().Get("Retry-After") != "1" {
		t.Errorf("%q, Retry-After %q", msg, w.Header().Get("Retry-After"))
	}
	apiError(t, do(t, s, req{method: "GET", target: "/some/page"}), 503)
	if w := do(t, s, req{method: "GET", target: "/healthz"}); w.Code != 200 {
		t.Errorf("healthz %d", w.Code)
	}
	m := do(t, s, req{method: "GET", target: "/metrics"}).Body.String()
	for _, line := range []string{
		"gpudx_http_requests_rejected_total 2",
		"gpudx_http_requests_in_flight 3", // the two held requests and this scrape
	} {
		if !strings.Contains(m, "\n"+line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}
	close(b.release)
	for range 2 {
		if w := <-done; w.Code != 200 || w.Body.String() != "page done" {
			t.Errorf("held request: %d %q", w.Code, w.Body)
		}
	}
	if w := do(t, s, req{method: "GET", target: "/api/v1/domains"}); w.Code != 200 {
		t.Errorf("after release: %d", w.Code)
	}
}

// A panic in a handler is a logged 500 with a JSON message, and the
// server goes on.
func TestPanic(t *testing.T) {
	web := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic("page exploded") })
	s, logs := newServer(t, nil, Options{Web: web})
	msg := apiError(t, do(t, s, req{method: "GET", target: "/"}), 500)
	if msg != "internal error: the server failed on this request (it is logged)" {
		t.Errorf("%q", msg)
	}
	if l := logs.String(); !strings.Contains(l, "panic in handler") || !strings.Contains(l, "page exploded") || !strings.Contains(l, "path=/") {
		t.Errorf("log %q", l)
	}
	if w := do(t, s, req{method: "GET", target: "/healthz"}); w.Code != 200 {
		t.Errorf("after the panic: %d", w.Code)
	}
	m := do(t, s, req{method: "GET", target: "/metrics"}).Body.String()
	if !strings.Contains(m, `gpudx_http_requests_total{code="500",route="web"} 1`) {
		t.Errorf("the 500 is not counted:\n%s", m)
	}
}

// Unknown API paths are JSON 404s and wrong methods JSON 405s with Allow,
// even with a web page mounted at /; the page and /mcp get the rest.
func TestRouting(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page "+r.URL.Path) })
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "mcp "+r.Method) })
	for _, mounted := range []bool{false, true} {
		opt := Options{}
		if mounted {
			opt.Web, opt.MCP = page, mcp
		}
		s, _ := newServer(t, nil, opt)
		for _, tt := range []struct {
			method, target string
			status         int
			allow, msg     string
		}{
			{"GET", "/api/v1/nope", 404, "", "no such endpoint: GET /api/v1/nope (the API is described at /api/v1/openapi.json)"},
			{"GET", "/api", 404, "", "no such endpoint: GET /api"},
			{"GET", "/api/v1/diagnose", 405, "POST", "GET is not allowed on /api/v1/diagnose; allowed: POST"},
			{"DELETE", "/api/v1/entries", 405, "GET, HEAD", "DELETE is not allowed on /api/v1/entries; allowed: GET, HEAD"},
			{"PUT", "/api/v1/entries/cuda/x", 405, "GET, HEAD", "PUT is not allowed"},
			{"POST", "/healthz", 405, "GET, HEAD", "POST is not allowed on /healthz"},
			{"POST", "/metrics", 405, "GET, HEAD", "POST is not allowed on /metrics"},
		} {
			w := do(t, s, req{method: tt.method, target: tt.target})
			if msg := apiError(t, w, tt.status); !strings.HasPrefix(msg, tt.msg) || w.Header().Get("Allow") != tt.allow {
				t.Errorf("mounted %v: %s %s: %q, Allow %q", mounted, tt.method, tt.target, msg, w.Header().Get("Allow"))
			}
		}
		for _, tt := range []struct{ method, target, want string }{
			{"GET", "/", "page /"},
			{"GET", "/entries/cuda/x", "page /entries/cuda/x"},
			{"POST", "/mcp", "mcp POST"},
			{"GET", "/mcp", "mcp GET"},
			{"DELETE", "/mcp", "mcp DELETE"},
		} {
			w := do(t, s, req{method: tt.method, target: tt.target})
			if !mounted {
				if msg := apiError(t, w, 404); !strings.HasPrefix(msg, "no such endpoint") {
					t.Errorf("%s %s without a page: %q", tt.method, tt.target, msg)
				}
				continue
			}
			if w.Code != 200 || w.Body.String() != tt.want {
				t.Errorf("%s %s: %d %q", tt.method, tt.target, w.Code, w.Body)
			}
		}
	}
}

// The metrics after a known series of requests, exactly.
func TestMetrics(t *testing.T) {
	s, _ := newServer(t, nil, Options{})
	var logBytes int
	for _, name := range []string{"ddp-oom", "xid79-dmesg"} {
		log := readFile(t, examples+name+".log")
		logBytes += len(log)
		do(t, s, req{method: "POST", target: "/api/v1/diagnose", body: gzipped(t, log), header: map[string]string{"Content-Encoding": "gzip"}})
	}
	do(t, s, req{method: "GET", target: "/api/v1/search"})
	do(t, s, req{method: "GET", target: "/api/v1/search?q=nccl"})
	do(t, s, req{method: "GET", target: "/api/v1/entries/cuda/illegal-memory-access"})
	do(t, s, req{method: "GET", target: "/api/v1/nope"})
	do(t, s, req{method: "GET", target: "/api/v1/diagnose"})
	do(t, s, req{method: "GET", target: "/healthz"})
	m := do(t, s, req{method: "GET", target: "/metrics"}).Body.String()
	for _, line := range []string{
		`gpudx_http_requests_total{code="200",route="POST /api/v1/diagnose"} 2`,
		`gpudx_http_requests_total{code="400",route="GET /api/v1/search"} 1`,
		`gpudx_http_requests_total{code="200",route="GET /api/v1/search"} 1`,
		`gpudx_http_requests_total{code="200",route="GET /api/v1/entries/{domain}/{slug}"} 1`,
		`gpudx_http_requests_total{code="404",route="unmatched"} 1`,
		`gpudx_http_requests_total{code="405",route="unmatched"} 1`,
		`gpudx_http_requests_total{code="200",route="GET /healthz"} 1`,
		`gpudx_http_request_duration_seconds_count{route="POST /api/v1/diagnose"} 2`,
		`gpudx_http_requests_in_flight 1`,
		`gpudx_http_requests_rejected_total 0`,
		"gpudx_diagnosed_bytes_total 4389",
	} {
		if !strings.Contains(m, "\n"+line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}
	if logBytes != 4389 {
		t.Errorf("the two logs hold %d bytes", logBytes)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if !strings.Contains(m, "\n"+name+" ") {
			t.Errorf("no %s", name)
		}
	}
	// The scrape itself is counted once it is answered.
	m = do(t, s, req{method: "GET", target: "/metrics"}).Body.String()
	if !strings.Contains(m, `gpudx_http_requests_total{code="200",route="GET /metrics"} 1`+"\n") {
		t.Errorf("the first scrape is not counted")
	}
}

// Serve stops accepting when its context ends, lets the request in flight
// finish with its full answer, and returns nil.
func TestGracefulShutdown(t *testing.T) {
	b := newBlocker()
	s, _ := newServer(t, nil, Options{Web: b})
	draining := make(chan struct{})
	s.onShutdown = func() { close(draining) }
	addr, cancel, served := serveLocal(t, s)

	type result struct {
		code int
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- result{resp.StatusCode, string(body), err}
	}()
	<-b.entered
	cancel()
	<-draining
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("a new connection was accepted while draining")
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned before the request in flight finished: %v", err)
	default:
	}
	close(b.release)
	if r := <-got; r.err != nil || r.code != 200 || r.body != "page done" {
		t.Errorf("the request in flight got %+v", r)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// A request that outlives the drain timeout is cut off and Serve says so.
func TestDrainTimeout(t *testing.T) {
	b := newBlocker()
	s, _ := newServer(t, nil, Options{Web: b, DrainTimeout: time.Nanosecond})
	addr, cancel, served := serveLocal(t, s)
	clientErr := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		clientErr <- err
	}()
	<-b.entered
	cancel()
	if err := <-served; err == nil || !strings.Contains(err.Error(), "requests were still running at the end of the drain timeout") {
		t.Errorf("Serve: %v", err)
	}
	if err := <-clientErr; err == nil {
		t.Error("the cut-off request got a whole answer")
	}
	close(b.release)
}

// MCP's event stream (a GET on /mcp) is not counted against the limit
// and ends when the server shuts down, so it does not hold the drain.
func TestMCPStreamEndsAtShutdown(t *testing.T) {
	streaming := make(chan struct{})
	ended := make(chan error, 1)
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		close(streaming)
		<-r.Context().Done()
		ended <- r.Context().Err()
	})
	s, _ := newServer(t, nil, Options{MCP: mcp, MaxConcurrent: 1, DrainTimeout: time.Minute})
	addr, cancel, served := serveLocal(t, s)
	base := "http://" + addr
	resp, err := http.Get(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-streaming
	// The only slot is free: the stream does not hold it.
	if r, err := http.Get(base + "/api/v1/domains"); err != nil || r.StatusCode != 200 {
		t.Fatalf("with a stream open: %v %v", r, err)
	} else {
		r.Body.Close()
	}
	cancel()
	if err := <-ended; err != context.Canceled {
		t.Errorf("stream context: %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func TestDefaults(t *testing.T) {
	s, _ := newServer(t, nil, Options{})
	hs := s.HTTPServer()
	if s.opt.MaxLogBytes != 64<<20 || s.opt.MaxSnapshotBytes != 4<<30 || cap(s.slots) < 4 ||
		hs.ReadHeaderTimeout != 10*time.Second || hs.ReadTimeout != 10*time.Minute ||
		hs.WriteTimeout != 15*time.Minute || hs.IdleTimeout != 2*time.Minute || s.opt.DrainTimeout != 30*time.Second {
		t.Errorf("options %+v, server %+v", s.opt, hs)
	}
	w := do(t, s, req{method: "GET", target: "/healthz"})
	if w.Code != 200 || w.Body.String() != "{\n  \"status\": \"ok\",\n  \"entries\": "+strconv.Itoa(s.svc.Base().Len())+"\n}\n" {
		t.Errorf("healthz %d %q", w.Code, w.Body)
	}
}
