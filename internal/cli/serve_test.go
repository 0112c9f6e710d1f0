package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveErr is the server's standard error; it tells the test the URL once
// the server listens.
type serveErr struct {
	mu  sync.Mutex
	b   bytes.Buffer
	url chan string
}

var listening = regexp.MustCompile(`serving on (http://\S+)`)

func (s *serveErr) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	had := listening.MatchString(s.b.String())
	s.b.Write(p)
	if m := listening.FindStringSubmatch(s.b.String()); m != nil && !had {
		s.url <- m[1]
	}
	return len(p), nil
}

func (s *serveErr) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// served is a `gpudx serve` running in this process.
type served struct {
	url    string
	stderr *serveErr
	code   chan int
}

// startServe runs `gpudx serve ARGS...` through Run, as main does, and
// waits until it listens.
func startServe(t *testing.T, env map[string]string, args ...string) *served {
	t.Helper()
	s := &served{stderr: &serveErr{url: make(chan string, 1)}, code: make(chan int, 1)}
	io := &IO{In: strings.NewReader(""), Out: io.Discard, Err: s.stderr,
		Getenv: func(k string) string { return env[k] }, Terminal: func(any) bool { return false }}
	go func() { s.code <- Run(append([]string{"serve"}, args...), io) }()
	select {
	case s.url = <-s.stderr.url:
	case code := <-s.code:
		t.Fatalf("serve exited %d before listening: %s", code, s.stderr)
	}
	return s
}

// stop sends SIGTERM to this process, which serve handles, and returns
// serve's exit code.
func (s *served) stop(t *testing.T) int {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return <-s.code
}

func (s *served) post(t *testing.T, path, ctype string, body []byte) (int, []byte) {
	t.Helper()
	resp, err := http.Post(s.url+path, ctype, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (s *served) get(t *testing.T, path string) (int, string, []byte) {
	t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

// A real `gpudx serve` on a free port answers the CLI's JSON for the
// bundled logs and the snapshot fixture, byte for byte, serves the page
// and MCP, and stops with exit 0 on SIGTERM after finishing the request
// in flight.
func TestServe(t *testing.T) {
	s := startServe(t, nil, "--addr", "127.0.0.1:0", "--no-db")
	if !strings.HasPrefix(s.url, "http://127.0.0.1:") || strings.HasSuffix(s.url, ":0") {
		t.Fatalf("URL %q", s.url)
	}
	if code, _, body := s.get(t, "/healthz"); code != 200 || !strings.Contains(string(body), `"status": "ok"`) {
		t.Errorf("healthz %d %s", code, body)
	}
	logs, _ := filepath.Glob("../../examples/*.log")
	if len(logs) != 4 {
		t.Fatalf("examples %v", logs)
	}
	for _, p := range logs {
		log, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want := run(t, "", nil, "diagnose", "--format", "json", p)
		code, got := s.post(t, "/api/v1/diagnose", "text/plain", log)
		if code != 200 || want.code != 0 || string(got) != want.out {
			t.Errorf("%s: %d; the API's answer differs from `gpudx diagnose --format json` (%d vs %d bytes)", p, code, len(got), len(want.out))
		}
	}
	snap, err := os.ReadFile(handSnap)
	if err != nil {
		t.Fatal(err)
	}
	want := run(t, "", nil, "mem", "--format", "json", "--request", "6MiB", "--capacity", "80GB", handSnap)
	if code, got := s.post(t, "/api/v1/snapshots?request=6MiB&capacity=80GB", "application/octet-stream", snap); code != 200 || string(got) != want.out {
		t.Errorf("snapshot: %d; the API's answer differs from `gpudx mem --format json` (%d vs %d bytes)", code, len(got), len(want.out))
	}
	if code, _ := s.post(t, "/api/v1/outcomes", "application/json", []byte(`{"entry_id": "cuda/illegal-memory-access", "kind": "workaround", "index": 0, "worked": true}`)); code != 503 {
		t.Errorf("outcome without a database: %d", code)
	}
	if code, ct, body := s.get(t, "/"); code != 200 || !strings.HasPrefix(ct, "text/html") || !bytes.Contains(body, []byte("<html")) {
		t.Errorf("web page: %d %q", code, ct)
	}
	// MCP at /mcp: the SDK's client lists the tools over streamable HTTP.
	client := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, nil)
	sess, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	tools, err := sess.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	if !names["diagnose_log"] || !names["search_entries"] {
		t.Errorf("MCP tools %v", names)
	}
	sess.Close()

	// A request in flight when SIGTERM comes is finished: its body is
	// still being sent when the signal arrives.
	log, _ := os.ReadFile("../../examples/ddp-oom.log")
	pr, pw := io.Pipe()
	type result struct {
		code int
		body []byte
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.Post(s.url+"/api/v1/diagnose", "text/plain", pr)
		if err != nil {
			got <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- result{resp.StatusCode, b, err}
	}()
	if _, err := pw.Write(log[:100]); err != nil {
		t.Fatal(err)
	}
	waitInFlight(t, s.url, 2) // this request and the scrape that sees it
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitRefused(t, s.url)
	pw.Write(log[100:])
	pw.Close()
	r := <-got
	if r.err != nil || r.code != 200 || string(r.body) != run(t, "", nil, "diagnose", "--format", "json", "../../examples/ddp-oom.log").out {
		t.Errorf("the request in flight: %d %v %.200s", r.code, r.err, r.body)
	}
	if code := <-s.code; code != 0 || !strings.HasSuffix(s.stderr.String(), "gpudx: stopped\n") {
		t.Errorf("exit %d, stderr %q", code, s.stderr)
	}
}

// waitInFlight polls /metrics until n requests are in flight.
func waitInFlight(t *testing.T, url string, n int) {
	t.Helper()
	want := "\ngpudx_http_requests_in_flight " + itoa(n) + "\n"
	for {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), want) {
			return
		}
		time.Sleep(time.Millisecond) // a poll interval, not an assertion
	}
}

// waitRefused waits until the server no longer accepts connections.
func waitRefused(t *testing.T, url string) {
	t.Helper()
	addr := strings.TrimPrefix(url, "http://")
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(time.Millisecond)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// Outcomes go to the SQLite file named by --db and are there after a
// restart.
func TestServeDB(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sub", "outcomes.db")
	report := []byte(`{"entry_id": "cuda/illegal-memory-access", "kind": "workaround", "index": 0, "worked": true, "request_id": "x1"}`)
	s := startServe(t, nil, "--addr", "127.0.0.1:0", "--db", db)
	if code, body := s.post(t, "/api/v1/outcomes", "application/json", report); code != 201 {
		t.Fatalf("%d %s", code, body)
	}
	if code := s.stop(t); code != 0 {
		t.Fatalf("exit %d: %s", code, s.stderr)
	}
	s = startServe(t, nil, "--addr", "127.0.0.1:0", "--db", db)
	code, body := s.post(t, "/api/v1/outcomes", "application/json", report)
	var a struct {
		Duplicate bool `json:"duplicate"`
		Rate      struct {
			Reports int `json:"reports"`
		} `json:"rate"`
	}
	json.Unmarshal(body, &a)
	if code != 200 || !a.Duplicate || a.Rate.Reports != 1 {
		t.Errorf("after a restart: %d %s", code, body)
	}
	if code := s.stop(t); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// The default database is in the user's data directory.
func TestServeDefaultDB(t *testing.T) {
	home := t.TempDir()
	s := startServe(t, map[string]string{"XDG_DATA_HOME": home}, "--addr", "127.0.0.1:0")
	if code := s.stop(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(home, "gpudx", "outcomes.db")); err != nil {
		t.Error(err)
	}
}

func TestServeErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--addr", "127.0.0.1:0", "--db", filepath.Join(file, "outcomes.db")}, "(start with --no-db to serve without recording outcomes)"},
		{[]string{"--addr", busy.Addr().String(), "--no-db"}, "--addr " + busy.Addr().String() + ": bind: address already in use"},
		{[]string{"--addr", "nonsense", "--no-db"}, "--addr nonsense: "},
		{[]string{"--db", "x.db", "--no-db"}, "--db and --no-db contradict each other"},
		{[]string{"--max-log-bytes", "lots"}, `--max-log-bytes: want a size such as 2GiB, 512MB or a byte count, got "lots"`},
		{[]string{"--max-snapshot-bytes", "0"}, `--max-snapshot-bytes: want a size`},
		{[]string{"--max-concurrent", "-1"}, "--max-concurrent: want 0 (4 per CPU) or more, got -1"},
		{[]string{"--drain-timeout", "0s"}, "--drain-timeout: want a positive duration"},
		{[]string{"--body-timeout", "0s"}, "--body-timeout: want a positive duration"},
		{[]string{"--min-body-rate", "0"}, "--min-body-rate: want a size"},
		{[]string{"--max-snapshot-memory", "much"}, `--max-snapshot-memory: want a size such as 2GiB, 512MB or a byte count, got "much"`},
		{[]string{"--max-uploads", "-1"}, "--max-uploads: want 0 (a quarter of --max-concurrent) or more, got -1"},
		{[]string{"extra"}, `unknown command "extra" for "gpudx serve"`},
	} {
		r := run(t, "", nil, append([]string{"serve"}, tt.args...)...)
		if r.code != 2 || !strings.Contains(r.err, tt.msg) {
			t.Errorf("%v: exit %d, stderr %q", tt.args, r.code, r.err)
		}
	}
}

func TestServeHelp(t *testing.T) {
	r := run(t, "", nil, "serve", "--help")
	for _, want := range []string{"POST /api/v1/diagnose", "GET  /api/v1/openapi.json", "/mcp", "--addr 0.0.0.0:8080",
		"curl -sS --data-binary @train.log http://127.0.0.1:8080/api/v1/diagnose", "--no-db", "--max-concurrent", "SIGTERM"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
	if r.code != 0 {
		t.Errorf("exit %d", r.code)
	}
}

// memoBomb is a pickle that appends one memoised list to another through
// BINGET, 1,000 references per APPENDS, reps times: 2 KB a block, 16 KB
// of decoded list items.
func memoBomb(reps int) []byte {
	b := []byte("\x80\x04]\x94]\x94(")
	b = append(b, bytes.Repeat([]byte("K\x01"), 1000)...)
	b = append(b, "ea"...)
	blk := append(append([]byte("("), bytes.Repeat([]byte("h\x01"), 1000)...), 'e')
	for range reps {
		b = append(b, blk...)
	}
	return append(b, '.')
}

// The hardening flags of a real gpudx serve: the token from the
// environment guards writes and is never printed; a foreign Host or
// another site's page cannot write; the snapshot memory cap refuses a memo
// bomb with 422.
func TestServeHardening(t *testing.T) {
	s := startServe(t, map[string]string{"GPUDX_TOKEN": "env-t0ken"}, "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "o.db"),
		"--max-snapshot-memory", "1MiB", "--allowed-hosts", "gpudx.example.com")
	report := []byte(`{"entry_id": "cuda/illegal-memory-access", "kind": "workaround", "index": 0, "worked": true}`)
	send := func(host string, header map[string]string) (int, string) {
		r, _ := http.NewRequest("POST", s.url+"/api/v1/outcomes", bytes.NewReader(report))
		r.Host = host
		r.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			r.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	self := strings.TrimPrefix(s.url, "http://")
	bearer := map[string]string{"Authorization": "Bearer env-t0ken"}
	for _, tt := range []struct {
		name   string
		host   string
		header map[string]string
		status int
	}{
		{"no token", self, nil, 401},
		{"token", self, bearer, 201},
		{"token, foreign Host", "evil.example", bearer, 403},
		{"token, allowed Host", "gpudx.example.com", bearer, 201},
		{"token, cross-site", self, map[string]string{"Authorization": "Bearer env-t0ken", "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 403},
	} {
		if code, body := send(tt.host, tt.header); code != tt.status || strings.Contains(body, "env-t0ken") {
			t.Errorf("%s: %d %s, want %d", tt.name, code, body, tt.status)
		}
	}
	code, body := s.post(t, "/api/v1/snapshots", "application/octet-stream", memoBomb(1000))
	if code != 422 || !strings.Contains(string(body), "more than the memory cap of 1.0 MiB set for this read") {
		t.Errorf("memo bomb: %d %s", code, body)
	}
	if c := s.stop(t); c != 0 {
		t.Errorf("exit %d", c)
	}
	if strings.Contains(s.stderr.String(), "env-t0ken") {
		t.Errorf("the token is in the log: %s", s.stderr)
	}
}
