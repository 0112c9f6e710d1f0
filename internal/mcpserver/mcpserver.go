// Package mcpserver exposes gpudx to AI coding agents over the Model
// Context Protocol: diagnose a log, look an error up, read an entry, search,
// analyze a memory snapshot and report an outcome.
package mcpserver

import (
	"net/http"

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

// New returns an MCP server with gpudx's tools, answering from svc.
func New(svc *service.Service, opt Options) *mcp.Server {
	return mcp.NewServer(&mcp.Implementation{Name: "gpudx", Version: opt.Version}, nil)
}

// HTTPHandler serves the tools over streamable HTTP (mounted at /mcp by
// gpudx serve).
func HTTPHandler(svc *service.Service, opt Options) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return New(svc, opt) }, nil)
}
