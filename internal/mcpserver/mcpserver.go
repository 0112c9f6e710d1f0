// Package mcpserver exposes gpudx to AI coding agents over the Model
// Context Protocol: diagnose a log, look an error up, read an entry, search,
// analyze a memory snapshot and report an outcome.
package mcpserver

import (
	"net/http"

	"github.com/gpudx/gpudx/internal/service"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// New returns an MCP server with gpudx's tools, answering from svc.
func New(svc *service.Service, version string) *mcp.Server {
	return mcp.NewServer(&mcp.Implementation{Name: "gpudx", Version: version}, nil)
}

// HTTPHandler serves the tools over streamable HTTP (mounted at /mcp by
// gpudx serve).
func HTTPHandler(svc *service.Service, version string) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return New(svc, version) }, nil)
}
