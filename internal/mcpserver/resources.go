package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Entry resources: each knowledge-base entry is readable at
// gpudx://entries/{domain}/{slug}, its id in URI form, as the JSON of
// its entry file; gpudx://entries lists them.
const (
	entryURIPrefix   = "gpudx://entries/"
	entryURITemplate = "gpudx://entries/{domain}/{slug}"
	entryIndexURI    = "gpudx://entries"
)

// IndexItem is one entry in the gpudx://entries index.
type IndexItem struct {
	ID     string `json:"id"`
	URI    string `json:"uri"`
	Title  string `json:"title"`
	Domain string `json:"domain"`
}

func (h *handlers) addResources(s *mcp.Server) {
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "entry",
		Title:       "Knowledge-base entry",
		URITemplate: entryURITemplate,
		MIMEType:    "application/json",
		Description: "One knowledge-base entry as JSON (its file in the knowledge tree): signature, regex, root cause, dead ends, workarounds with sources and conditions, version table, error graph and, for Xid events, the operator block. The id domain/slug is the URI's path.",
	}, h.readEntry)
	s.AddResource(&mcp.Resource{
		Name:        "entries",
		Title:       "Index of knowledge-base entries",
		URI:         entryIndexURI,
		MIMEType:    "application/json",
		Description: "Every entry's id, resource URI, title and domain.",
	}, h.readIndex)
}

func (h *handlers) readEntry(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := strings.CutPrefix(uri, entryURIPrefix)
	e := h.svc.Entry(id)
	if !ok || e == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", id, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

func (h *handlers) readIndex(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	items := []IndexItem{}
	for _, e := range h.svc.Base().Entries() {
		items = append(items, IndexItem{ID: e.ID, URI: entryURIPrefix + e.ID, Title: e.Title, Domain: e.Domain})
	}
	b, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: entryIndexURI, MIMEType: "application/json", Text: string(b)}}}, nil
}
