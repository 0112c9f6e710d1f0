// Package mcpserver exposes gpudx to AI coding agents over the Model
// Context Protocol: diagnose a log, look one error or many up, read an
// entry, follow its error chain, check installed versions, search, list
// the domains, analyze a memory snapshot and report an outcome; entries are
// resources (gpudx://entries/{domain}/{slug}) and the common tasks prompts.
//
// Every tool answers twice: structured content an agent can read field by
// field (its schema is the tool's output schema), and a short text that
// puts what not to try first, then what to try. Bad input is a tool error
// (IsError) with a message the agent can act on, never a protocol error.
package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/gpudx/gpudx/internal/service"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure the tools.
type Options struct {
	Version string
	// AllowFiles lets tools read files named by path (stdio, where the
	// agent runs on the same machine as gpudx). Over HTTP it is false:
	// content travels in the request.
	AllowFiles bool
}

// Limits on what a request may carry inline.
const (
	// MaxLogBytes bounds diagnose_log's log text. A bigger log is read by
	// path (stdio), which streams it.
	MaxLogBytes = 64 << 20
	// MaxSnapshotBase64 bounds analyze_memory_snapshot's base64 text
	// (48 MiB of snapshot).
	MaxSnapshotBase64 = 64 << 20
	// MaxMessageBytes bounds one JSON-RPC message: a log at its limit,
	// escaped, with room to spare. HTTPHandler and gpudx mcp apply it.
	MaxMessageBytes = 160 << 20
	// maxMessageText bounds lookup_error's text: an error line or a few.
	maxMessageText = 64 << 10
)

// instructions tell the agent how the tools fit together.
const instructions = `gpudx diagnoses GPU job failures (CUDA errors, out-of-memory, NCCL timeouts, Xid events) from logs against a curated knowledge base.
Start with diagnose_log on the failing job's output, or lookup_error for one error line or name. Each answer lists the root cause first, then dead ends (fixes that people try and that do not help; do not try them first) and then workarounds with success rates and whether their condition holds for this log.
For an out-of-memory error with a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot), analyze_memory_snapshot says why the request could not fit and which code holds the memory.
For many error lines at once use lookup_errors; error_chain tells causes from symptoms; check_versions says which known problems the installed versions (gpudx env --format json, nvidia-smi, collect_env) have. Entries are also resources at gpudx://entries/{domain}/{slug}.
After trying a workaround or a dead end, call report_outcome with the entry id, kind and index from the answer, so that the rates improve.`

// New returns an MCP server with gpudx's tools, answering from svc.
func New(svc *service.Service, opt Options) *mcp.Server {
	version := opt.Version
	if version == "" {
		version = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "gpudx", Title: "gpudx: GPU failure diagnosis", Version: version},
		&mcp.ServerOptions{Instructions: instructions})
	h := &handlers{svc: svc, opt: opt}
	h.addDiagnose(s)
	h.addLookup(s)
	h.addGetEntry(s)
	h.addSearch(s)
	h.addDomains(s)
	h.addSnapshot(s)
	h.addReport(s)
	h.addBatchLookup(s)
	h.addChain(s)
	h.addVersions(s)
	h.addResources(s)
	h.addPrompts(s)
	return s
}

// HTTPHandler serves the tools over streamable HTTP (mounted at /mcp by
// gpudx serve). One server answers every session; idle sessions end after
// half an hour.
func HTTPHandler(svc *service.Service, opt Options) http.Handler {
	s := New(svc, opt)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{MaxRequestBodyBytes: MaxMessageBytes, SessionTimeout: 30 * time.Minute})
}

type handlers struct {
	svc *service.Service
	opt Options
}

// addTool registers a tool whose handler returns its structured output and
// the short text for the content. A panic becomes a tool error: one bad
// request must not end the session (over stdio, the whole server).
func addTool[In, Out any](s *mcp.Server, t *mcp.Tool, h func(context.Context, In) (Out, string, error)) {
	mcp.AddTool(s, t, func(ctx context.Context, _ *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, out Out, err error) {
		defer func() {
			if p := recover(); p != nil {
				res, err = nil, fmt.Errorf("internal error in %s: %v (please report this with the input)", t.Name, p)
			}
		}()
		out, text, err := h(ctx, in)
		if err != nil {
			return nil, out, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
	})
}

func readOnly() *mcp.ToolAnnotations {
	f := false
	return &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &f}
}

// inputSchema is the schema AddTool would infer for In, for a tool that
// adds to it.
func inputSchema[In any]() *jsonschema.Schema {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(err) // a programming error in the In type, caught by every test
	}
	return s
}

// fileSchema is In's schema, with the path argument marked unavailable
// when the server cannot read files.
func (h *handlers) fileSchema(s *jsonschema.Schema) *jsonschema.Schema {
	if !h.opt.AllowFiles {
		s.Properties["path"].Description = "not available on this server (reached over HTTP, it cannot see your files): send the content instead"
	}
	return s
}
