package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const goodReport = `{"entry_id": "cuda/illegal-memory-access", "kind": "workaround", "index": 0, "worked": true}`

// Writes come only from where they should: not from another site's page,
// not through a foreign Host (DNS rebinding), only as JSON, and with the
// token when one is set; the token appears in no answer and no log.
func TestWriteGuard(t *testing.T) {
	plain, _ := newServer(t, sqliteStore(t), Options{AllowedHosts: []string{}})
	named, _ := newServer(t, sqliteStore(t), Options{AllowedHosts: []string{"gpudx.example.com"}})
	tok, tokLogs := newServer(t, sqliteStore(t), Options{Token: "s3cret-t0ken", AllowedHosts: []string{}})
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "mcp") })
	withMCP, _ := newServer(t, nil, Options{MCP: mcp, AllowedHosts: []string{}})
	js := "application/json"
	for _, tt := range []struct {
		name   string
		s      *Server
		method string
		target string
		host   string
		header map[string]string
		status int
		msg    string
	}{
		{"loopback", plain, "POST", "/api/v1/outcomes", "127.0.0.1:8080", map[string]string{"Content-Type": js}, 201, ""},
		{"localhost", plain, "POST", "/api/v1/outcomes", "localhost:8080", map[string]string{"Content-Type": js}, 201, ""},
		{"IPv6 loopback", plain, "POST", "/api/v1/outcomes", "[::1]:8080", map[string]string{"Content-Type": js}, 201, ""},
		{"the page itself (same origin)", plain, "POST", "/api/v1/outcomes", "127.0.0.1:8080",
			map[string]string{"Content-Type": js, "Origin": "http://127.0.0.1:8080", "Sec-Fetch-Site": "same-origin"}, 201, ""},
		{"no Content-Type", plain, "POST", "/api/v1/outcomes", "127.0.0.1:8080", nil, 415, `Content-Type "": send the body as application/json`},
		{"text/plain", plain, "POST", "/api/v1/outcomes", "127.0.0.1:8080", map[string]string{"Content-Type": "text/plain"}, 415, `Content-Type "text/plain"`},
		{"form", plain, "POST", "/api/v1/outcomes", "127.0.0.1:8080", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "send the body as application/json"},
		{"cross-site", plain, "POST", "/api/v1/outcomes", "127.0.0.1:8080",
			map[string]string{"Content-Type": js, "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 403,
			`cross-site request refused: a web page of another site may not write here (Origin "http://evil.example", Sec-Fetch-Site "cross-site")`},
		{"cross-site, no Content-Type", plain, "POST", "/api/v1/outcomes", "127.0.0.1:8080",
			map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 403, "cross-site request refused"},
		{"same-site", plain, "POST", "/api/v1/outcomes", "127.0.0.1:8080",
			map[string]string{"Content-Type": js, "Sec-Fetch-Site": "same-site"}, 403, "cross-site request refused"},
		{"Origin only", plain, "POST", "/api/v1/outcomes", "127.0.0.1:8080",
			map[string]string{"Content-Type": js, "Origin": "http://evil.example"}, 403, "cross-site request refused"},
		{"foreign Host", plain, "POST", "/api/v1/outcomes", "evil.example",
			map[string]string{"Content-Type": js}, 403, `Host "evil.example" is not this server's name or address, so writes are refused (a defence against DNS rebinding); start gpudx serve with --allowed-hosts to accept it`},
		{"foreign Host and Origin", plain, "POST", "/api/v1/outcomes", "evil.example",
			map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 403, `Host "evil.example"`},
		{"allowed host", named, "POST", "/api/v1/outcomes", "GPUdx.example.com:443", map[string]string{"Content-Type": js}, 201, ""},
		{"other host", named, "POST", "/api/v1/outcomes", "other.example.com", map[string]string{"Content-Type": js}, 403, "is not this server's name"},
		{"reads take any Host", plain, "GET", "/api/v1/entries?q=illegal", "evil.example", nil, 200, ""},
		{"no token", tok, "POST", "/api/v1/outcomes", "127.0.0.1", map[string]string{"Content-Type": js}, 401,
			"this server requires a bearer token for /api/v1/outcomes: send Authorization: Bearer TOKEN (the token gpudx serve was started with)"},
		{"wrong token", tok, "POST", "/api/v1/outcomes", "127.0.0.1", map[string]string{"Content-Type": js, "Authorization": "Bearer s3cret"}, 401, "requires a bearer token"},
		{"basic auth", tok, "POST", "/api/v1/outcomes", "127.0.0.1", map[string]string{"Content-Type": js, "Authorization": "Basic s3cret-t0ken"}, 401, "requires a bearer token"},
		{"token", tok, "POST", "/api/v1/outcomes", "127.0.0.1", map[string]string{"Content-Type": js, "Authorization": "Bearer s3cret-t0ken"}, 201, ""},
		{"reads need no token", tok, "GET", "/api/v1/entries/cuda/illegal-memory-access", "127.0.0.1", nil, 200, ""},
		{"MCP cross-site", withMCP, "POST", "/mcp", "127.0.0.1", map[string]string{"Content-Type": js, "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 403, "cross-site request refused"},
		{"MCP foreign Host", withMCP, "POST", "/mcp", "evil.example", map[string]string{"Content-Type": js}, 403, `Host "evil.example"`},
		{"MCP", withMCP, "POST", "/mcp", "127.0.0.1", map[string]string{"Content-Type": js}, 200, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.method == "POST" {
				body = strings.NewReader(goodReport)
			}
			r := httptest.NewRequest(tt.method, tt.target, body)
			r.Host = tt.host
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			tt.s.ServeHTTP(w, r)
			if strings.Contains(w.Body.String(), "s3cret") || strings.Contains(fmt.Sprint(w.Header()), "s3cret") {
				t.Errorf("the answer shows the token: %v %s", w.Header(), w.Body)
			}
			if tt.status/100 == 2 {
				if w.Code != tt.status {
					t.Fatalf("%d %s", w.Code, w.Body)
				}
				return
			}
			if msg := apiError(t, w, tt.status); !strings.Contains(msg, tt.msg) {
				t.Errorf("%q, want %q in it", msg, tt.msg)
			}
			if tt.status == 401 && w.Header().Get("WWW-Authenticate") != `Bearer realm="gpudx"` {
				t.Errorf("WWW-Authenticate %q", w.Header().Get("WWW-Authenticate"))
			}
		})
	}
	if strings.Contains(tokLogs.String(), "s3cret") {
		t.Errorf("the log shows the token: %s", tokLogs)
	}
}

// A client's report time from before 2000 or more than a day ahead is
// refused; none, or a sane one, is stored.
func TestOutcomeTime(t *testing.T) {
	s, _ := newServer(t, sqliteStore(t), Options{})
	now := time.Now().UTC()
	for _, tt := range []struct {
		time   string
		status int
		msg    string
	}{
		{"0001-01-01T00:00:01Z", 400, "time 0001-01-01T00:00:01Z is out of range: give a time from 2000-01-01 to one day from now, or none (the server's clock is used)"},
		{"9999-12-31T23:59:59Z", 400, "time 9999-12-31T23:59:59Z is out of range"},
		{"1999-12-31T23:59:59Z", 400, "is out of range"},
		{now.Add(49 * time.Hour).Format(time.RFC3339), 400, "is out of range"},
		{now.Add(-time.Hour).Format(time.RFC3339), 201, ""},
		{now.Add(time.Hour).Format(time.RFC3339), 201, ""},
		{"2000-01-01T00:00:00Z", 201, ""},
	} {
		body := strings.Replace(goodReport, "}", `, "time": "`+tt.time+`"}`, 1)
		w := do(t, s, req{method: "POST", target: "/api/v1/outcomes", body: []byte(body), header: map[string]string{"Content-Type": "application/json"}})
		if tt.status == 201 {
			if w.Code != 201 {
				t.Errorf("%s: %d %s", tt.time, w.Code, w.Body)
			}
			continue
		}
		if msg := apiError(t, w, tt.status); !strings.Contains(msg, tt.msg) {
			t.Errorf("%s: %q, want %q", tt.time, msg, tt.msg)
		}
	}
}

// slowUpload opens a connection that announces a body of length bytes and
// sends one byte every gap; the returned channel gets the status line of
// the answer (or the error that ended the connection) and the time it
// came.
func slowUpload(t *testing.T, addr string, length int, gap time.Duration) <-chan string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /api/v1/diagnose HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", addr, length)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(gap):
			}
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
		}
	}()
	answer := make(chan string, 1)
	go func() {
		defer close(done)
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			answer <- "error: " + err.Error()
			return
		}
		answer <- strings.TrimSpace(line)
	}()
	return answer
}

// While 8 clients trickle bodies (one byte every 500 ms: the probe's attack
// at ten times its rate), other requests are answered at once, and the slow
// clients are cut off after the body timeout with 408. Before, the 8
// trickles held every slot until the 10-minute read timeout, and every
// limited route answered 503.
func TestSlowClients(t *testing.T) {
	for _, tt := range []struct {
		name   string
		length int // Content-Length of the slow uploads
		busy   int // how many of the 8 get 503 at once (no upload slot)
	}{
		{"small bodies (read before a slot)", 100_000, 0},
		{"large bodies (upload slots)", 10 << 20, 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const grace = 2 * time.Second
			s, _ := newServer(t, nil, Options{MaxConcurrent: 8, BodyTimeout: grace})
			addr, _, _ := serveLocal(t, s)
			start := time.Now()
			var answers []<-chan string
			for range 8 {
				answers = append(answers, slowUpload(t, addr, tt.length, 500*time.Millisecond))
			}
			time.Sleep(300 * time.Millisecond) // the uploads have begun

			client := &http.Client{Timeout: 30 * time.Second}
			for _, r := range []func() (*http.Response, error){
				func() (*http.Response, error) { return client.Get("http://" + addr + "/api/v1/entries?q=illegal") },
				func() (*http.Response, error) {
					return client.Post("http://"+addr+"/api/v1/diagnose", "text/plain", strings.NewReader("CUDA error: out of memory\n"))
				},
			} {
				t0 := time.Now()
				resp, err := r()
				if err != nil {
					t.Fatalf("a normal request while 8 uploads trickle: %v", err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("%s %s: %d while 8 uploads trickle", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode)
				}
				t.Logf("%s %s: %d in %v", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, time.Since(t0).Round(time.Millisecond))
			}

			counts := map[string]int{}
			var mu sync.Mutex
			var last time.Duration
			for _, a := range answers {
				select {
				case line := <-a:
					mu.Lock()
					counts[line]++
					last = max(last, time.Since(start))
					mu.Unlock()
				case <-time.After(grace + 10*time.Second):
					t.Fatalf("a slow upload still holds its connection %v after it began", time.Since(start).Round(time.Second))
				}
			}
			t.Logf("slow uploads: %v, the last answered %v after they began", counts, last.Round(time.Millisecond))
			want := map[string]int{"HTTP/1.1 408 Request Timeout": 8 - tt.busy}
			if tt.busy > 0 {
				want["HTTP/1.1 503 Service Unavailable"] = tt.busy
			}
			if fmt.Sprint(counts) != fmt.Sprint(want) {
				t.Errorf("slow uploads got %v, want %v", counts, want)
			}
		})
	}
}

// The body's deadline ends with the body: a handler that works on after
// reading it, past the body timeout, keeps its request's context.
func TestBodyDeadlineEnds(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(1500 * time.Millisecond):
		}
		fmt.Fprint(w, "context: ", r.Context().Err())
	})
	s, _ := newServer(t, nil, Options{Web: page, BodyTimeout: 500 * time.Millisecond})
	addr, _, _ := serveLocal(t, s)
	resp, err := http.Post("http://"+addr+"/", "text/plain", strings.NewReader("some body"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "context: <nil>" {
		t.Errorf("%d %q", resp.StatusCode, b)
	}
}
