package mcpserver

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpudx/gpudx/internal/service"
	"github.com/gpudx/gpudx/internal/store"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
	"github.com/gpudx/gpudx/outcome"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	baseOnce sync.Once
	baseErr  error
	entries  []*kb.Entry
)

// newService loads the built-in knowledge base, as gpudx does.
func newService(t *testing.T, st outcome.Store) *service.Service {
	t.Helper()
	baseOnce.Do(func() {
		entries, baseErr = kb.LoadFS(knowledge.FS, ".", "knowledge/")
	})
	if baseErr != nil {
		t.Fatal(baseErr)
	}
	b := kb.NewBase()
	for _, e := range entries {
		b.Add(e)
	}
	s, err := service.New(b, st)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sqliteStore opens a fresh SQLite outcome store in the test's temp dir.
func sqliteStore(t *testing.T) outcome.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "outcomes.db"), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// connectHTTP serves the tools over streamable HTTP on loopback and
// connects the SDK's client to them.
func connectHTTP(t *testing.T, svc *service.Service, opt Options) *mcp.ClientSession {
	t.Helper()
	srv := httptest.NewServer(HTTPHandler(svc, opt))
	t.Cleanup(srv.Close)
	return connect(t, &mcp.StreamableClientTransport{Endpoint: srv.URL})
}

// connectMem connects a client to the tools in memory.
func connectMem(t *testing.T, svc *service.Service, opt Options) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := New(svc, opt).Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return connect(t, ct)
}

func connect(t *testing.T, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "gpudx-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool that must succeed and decodes its structured content
// into out; it returns the text content.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	text := textOf(t, res)
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, text)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: structured content: %v\n%s", name, err, b)
	}
	return text
}

// callErr calls a tool that must fail with a tool error (not a protocol
// error) and returns the error's text.
func callErr(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error, want a tool error: %v", name, err)
	}
	text := textOf(t, res)
	if !res.IsError {
		t.Fatalf("%s: succeeded, want a tool error; text:\n%s", name, text)
	}
	return text
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("want one content item, got %d", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// readFile reads a repository file, relative to this package.
func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// before checks that a comes before b in s, both present.
func before(t *testing.T, s, a, b string) {
	t.Helper()
	i, j := strings.Index(s, a), strings.Index(s, b)
	if i < 0 || j < 0 || i > j {
		t.Errorf("want %q before %q in:\n%s", a, b, s)
	}
}
