package cli

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gpudx/gpudx/internal/mcpserver"
	"github.com/gpudx/gpudx/internal/syncbuf"
)

// asGpudx, set in a child's environment, makes the test binary run the
// command line instead of the tests (TestMain): the stdio tests start a
// real gpudx process without building one.
const asGpudx = "GPUDX_TEST_AS_GPUDX"

func TestMain(m *testing.M) {
	if os.Getenv(asGpudx) == "1" {
		os.Exit(Run(os.Args[1:], StdIO())) // what cmd/gpudx does
	}
	os.Exit(m.Run())
}

// gpudxBinary is the test binary itself, which is gpudx in a child
// started with asGpudx set (startMCP sets it).
func gpudxBinary(t *testing.T) string {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// startMCP starts `gpudx mcp ARGS...` and connects the SDK's client to it
// over its standard input and output.
func startMCP(t *testing.T, bin string, args ...string) (*mcp.ClientSession, *syncbuf.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), "GPUDX_KB=", asGpudx+"=1")
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "gpudx-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content items", name, len(res.Content))
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		if out != nil {
			t.Fatalf("%s: tool error: %s", name, text)
		}
		return text
	}
	if out == nil {
		t.Fatalf("%s: succeeded, want an error; text:\n%s", name, text)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return text
}

// TestMCPStdio runs gpudx in its own process as an agent does, over a
// stdio pipe.
func TestMCPStdio(t *testing.T) {
	tmp := t.TempDir()
	bin := gpudxBinary(t)
	t.Run("tools", func(t *testing.T) { testStdioTools(t, bin, filepath.Join(tmp, "outcomes.db")) })
	t.Run("no database", func(t *testing.T) { testStdioNoDB(t, bin) })
}

// testStdioTools calls every tool with real inputs.
func testStdioTools(t *testing.T, bin, db string) {
	cs, stderr := startMCP(t, bin, "--db", db)
	ctx := context.Background()

	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		in, _ := tool.InputSchema.(map[string]any)
		if in["type"] != "object" || tool.OutputSchema == nil {
			t.Errorf("%s: input schema %v", tool.Name, tool.InputSchema)
		}
	}
	slices.Sort(names)
	want := []string{"analyze_memory_snapshot", "check_versions", "diagnose_log", "error_chain", "get_entry", "list_domains", "lookup_error", "lookup_errors", "report_outcome", "search_entries"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	logPath, err := filepath.Abs("../../examples/ddp-oom.log")
	if err != nil {
		t.Fatal(err)
	}
	logText, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("diagnose_log", func(t *testing.T) {
		var byPath, byText mcpserver.DiagnoseOut
		pathText := mcpCall(t, cs, "diagnose_log", map[string]any{"path": logPath}, &byPath)
		textText := mcpCall(t, cs, "diagnose_log", map[string]any{"log": string(logText)}, &byText)
		if !reflect.DeepEqual(byPath, byText) || pathText != textText {
			t.Errorf("by path and by text differ:\n%s\n%s", pathText, textText)
		}
		if byPath.Summary != "4 known error(s) found; root cause: pytorch/cuda-out-of-memory" || byPath.Lines != 29 {
			t.Errorf("summary %q, lines %d", byPath.Summary, byPath.Lines)
		}
		d := byPath.Diagnoses[0]
		if d.ID != "pytorch/cuda-out-of-memory" || !d.Root || d.FirstLine != 21 || d.Memory == nil || d.Memory.Verdict != "fragmentation" || d.Memory.Requested != 4294967296 {
			t.Errorf("root %s line %d memory %+v", d.ID, d.FirstLine, d.Memory)
		}
		if r := byPath.Ranks; r == nil || r.FirstFailed == nil || *r.FirstFailed != 2 {
			t.Errorf("ranks %+v", byPath.Ranks)
		}
		i, j := strings.Index(pathText, "Do not try first"), strings.Index(pathText, "Try (best first)")
		if i < 0 || j < i {
			t.Errorf("text does not put what not to try before what to try:\n%s", pathText)
		}
	})
	t.Run("lookup_error", func(t *testing.T) {
		var out mcpserver.LookupOut
		mcpCall(t, cs, "lookup_error", map[string]any{"message": "CUBLAS_STATUS_ALLOC_FAILED"}, &out)
		if m := out.Matches[0]; m.ID != "cuda/cublas-alloc-failed" || m.RegexMatched || m.ErrorCode != "CUBLAS_STATUS_ALLOC_FAILED" {
			t.Errorf("best %+v", m)
		}
		mcpCall(t, cs, "lookup_error", map[string]any{"message": "NCCL WARN ... unhandled system error"}, &out)
		if m := out.Matches[0]; m.ID != "nccl/unhandled-system-error" || !m.RegexMatched {
			t.Errorf("best %s regex %v", m.ID, m.RegexMatched)
		}
	})
	t.Run("search_entries and list_domains", func(t *testing.T) {
		var s mcpserver.SearchOut
		mcpCall(t, cs, "search_entries", map[string]any{"query": "GPU has fallen off the bus", "limit": 1}, &s)
		if len(s.Results) != 1 || s.Results[0].ID != "driver/xid-79-fallen-off-bus" {
			t.Errorf("results %+v", s.Results)
		}
		var d mcpserver.DomainsOut
		mcpCall(t, cs, "list_domains", map[string]any{}, &d)
		total := 0
		for _, x := range d.Domains {
			total += x.Entries
		}
		if total != d.Entries || len(d.Domains) < 5 || d.Domains[2].Name != "cuda" {
			t.Errorf("domains %+v", d)
		}
	})
	t.Run("analyze_memory_snapshot", func(t *testing.T) {
		snapPath, _ := filepath.Abs("../../snapshot/testdata/hand-p4.pickle")
		raw, err := os.ReadFile(snapPath)
		if err != nil {
			t.Fatal(err)
		}
		var byPath, byB64 mcpserver.SnapshotOut
		pathText := mcpCall(t, cs, "analyze_memory_snapshot", map[string]any{"path": snapPath}, &byPath)
		b64Text := mcpCall(t, cs, "analyze_memory_snapshot", map[string]any{"snapshot_base64": base64.StdEncoding.EncodeToString(raw)}, &byB64)
		if !reflect.DeepEqual(byPath, byB64) || pathText != b64Text {
			t.Errorf("by path and by base64 differ")
		}
		o := byPath.OOM
		if o == nil || o.Verdict != "live_tensors" || o.RequestedBytes != 40<<20 || o.LargestFreeBlockBytes != 8<<20 || o.ReservedBytes != 20<<20 {
			t.Fatalf("oom %+v", o)
		}
		if d := byPath.Devices[0]; d.AllocatedBytes != 10<<20 || d.ReservedBytes != 20<<20 || d.StrandedBytes != 8<<20 {
			t.Errorf("cuda:0 %+v", d)
		}
		if s := byPath.TopSites[0]; s.Site != "forward (model.py:54)" || s.Bytes != 10486272 || s.Blocks != 2 {
			t.Errorf("top site %+v", s)
		}
	})
	t.Run("report_outcome then get_entry", func(t *testing.T) {
		var rep mcpserver.ReportOut
		mcpCall(t, cs, "report_outcome", map[string]any{"entry_id": "nccl/watchdog-timeout", "kind": "workaround", "index": 3, "worked": true, "request_id": "stdio-1"}, &rep)
		if !rep.Stored || rep.Reports != 1 || rep.Worked != 1 {
			t.Errorf("report %+v", rep)
		}
		var e mcpserver.EntryOut
		mcpCall(t, cs, "get_entry", map[string]any{"id": "nccl/watchdog-timeout"}, &e)
		// Workarounds 0 to 2 of the entry are checks, 3 is a fix.
		w := e.Workarounds[3]
		if w.Reports != 1 || w.Worked != 1 || w.Rate != (w.Curated*10+1)/11 || w.Rate != rep.Rate ||
			w.Kind != "fix" || w.Basis != "estimate" || w.Label != "≈64%, estimate + 1 report" {
			t.Errorf("workaround 3 after the report: %+v (report said %v)", w, rep.Rate)
		}
		if c := e.Workarounds[1]; c.Kind != "check" || c.Label != "to find out" || c.Basis != "" || c.Rate != 0 {
			t.Errorf("workaround 1, a check: %+v", c)
		}
		if msg := mcpCall(t, cs, "get_entry", map[string]any{"id": "nccl/watchdog"}, nil); !strings.HasPrefix(msg, `no entry "nccl/watchdog"; close ids: nccl/watchdog-timeout`) {
			t.Errorf("unknown id: %q", msg)
		}
	})
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if got := stderr.String(); !strings.HasPrefix(got, "gpudx mcp: serving ") || strings.Contains(got, "warning") {
		t.Errorf("stderr %q", got)
	}

	// The report outlives the process: a new server on the same file
	// counts it, and a repeated request id is not counted again.
	cs2, _ := startMCP(t, bin, "--db", db)
	var rep mcpserver.ReportOut
	mcpCall(t, cs2, "report_outcome", map[string]any{"entry_id": "nccl/watchdog-timeout", "kind": "workaround", "index": 3, "worked": true, "request_id": "stdio-1"}, &rep)
	if rep.Stored || !rep.Duplicate || rep.Reports != 1 {
		t.Errorf("repeated report %+v", rep)
	}
}

// testStdioNoDB: without a database gpudx mcp still serves, says so on
// stderr, and report_outcome answers a tool error.
func testStdioNoDB(t *testing.T, bin string) {
	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"--no-db", []string{"--no-db"}, "gpudx mcp: --no-db: serving without an outcome database; report_outcome will answer with an error\n"},
		// A database that cannot be created: its folder is a file.
		{"unopenable", []string{"--db", filepath.Join(bin, "outcomes.db")}, "gpudx mcp: warning: no outcome database ("},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs, stderr := startMCP(t, bin, tt.args...)
			msg := mcpCall(t, cs, "report_outcome", map[string]any{"entry_id": "pytorch/cuda-out-of-memory", "kind": "workaround", "index": 0, "worked": true}, nil)
			if !strings.HasPrefix(msg, "this server runs without an outcome database") {
				t.Errorf("report_outcome: %q", msg)
			}
			var e mcpserver.EntryOut
			mcpCall(t, cs, "get_entry", map[string]any{"id": "pytorch/cuda-out-of-memory"}, &e)
			if e.Workarounds[0].Rate != 0.6 || e.Workarounds[0].Reports != 0 {
				t.Errorf("workaround 0 %+v", e.Workarounds[0])
			}
			if got := stderr.String(); !strings.HasPrefix(got, tt.stderr) {
				t.Errorf("stderr %q, want it to start %q", got, tt.stderr)
			}
		})
	}
}

// TestMCPHelp shows how to register the server with an agent.
func TestMCPHelp(t *testing.T) {
	r := run(t, "", nil, "mcp", "--help")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	i := strings.Index(r.out, "{\n    \"mcpServers\"")
	if i < 0 {
		t.Fatalf("no mcpServers snippet in:\n%s", r.out)
	}
	// The snippet is JSON an agent's configuration accepts as it is.
	dec := json.NewDecoder(strings.NewReader(r.out[i:]))
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	if s := cfg.MCPServers["gpudx"]; s.Command != "gpudx" || !slices.Equal(s.Args, []string{"mcp"}) {
		t.Errorf("snippet %+v", cfg)
	}
	if r := run(t, "", nil, "mcp", "--no-db", "--db", "x.db"); r.code != ExitUsage || r.err != "gpudx: --db and --no-db contradict each other: give one\n" {
		t.Errorf("--db with --no-db: exit %d, %q", r.code, r.err)
	}
}

// TestMCPInProcess serves requests over the IO streams Run is given and
// exits 0 when its input ends; stdout holds only protocol messages.
func TestMCPInProcess(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb syncbuf.Buffer
	env := &IO{In: inR, Out: outW, Err: &errb, Getenv: func(string) string { return "" }, Terminal: func(any) bool { return false }}
	code := make(chan int, 1)
	go func() {
		code <- Run([]string{"mcp", "--no-db"}, env)
		outW.Close()
	}()
	out := bufio.NewReader(outR)
	send := func(msg string) {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	recv := func() string {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("reading a response: %v (stderr %q)", err, errb.String())
		}
		return line
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if init := recv(); !strings.HasPrefix(init, `{"jsonrpc":"2.0","id":1,"result":{`) {
		t.Fatalf("initialize: %s", init)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup_error","arguments":{"message":"CUBLAS_STATUS_ALLOC_FAILED"}}}`)
	var resp struct {
		ID     int `json:"id"`
		Result struct {
			StructuredContent mcpserver.LookupOut `json:"structuredContent"`
		} `json:"result"`
	}
	line := recv()
	if err := json.Unmarshal([]byte(line), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.ID != 2 || len(resp.Result.StructuredContent.Matches) == 0 || resp.Result.StructuredContent.Matches[0].ID != "cuda/cublas-alloc-failed" {
		t.Errorf("response %s", line)
	}
	inW.Close()
	if c := <-code; c != 0 {
		t.Errorf("exit %d, stderr %q", c, errb.String())
	}
	if rest, _ := io.ReadAll(out); len(rest) != 0 {
		t.Errorf("more on stdout: %q", rest)
	}
	if !strings.Contains(errb.String(), "gpudx mcp: serving ") {
		t.Errorf("stderr %q", errb.String())
	}
}
