package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpudx/gpudx/kb"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ChainIn is error_chain's input.
type ChainIn struct {
	ID    string `json:"id" jsonschema:"entry id, domain/slug (e.g. nccl/watchdog-timeout)"`
	Depth int    `json:"depth,omitempty" jsonschema:"how many links to follow each way, 1 to 3 (default 1)"`
}

// ChainOut is error_chain's structured output.
type ChainOut struct {
	ID           string         `json:"id"`
	Title        string         `json:"title"`
	Causes       []ChainLink    `json:"causes" jsonschema:"errors that lead to this one: look for them earlier in the log (the root cause is usually the earliest)"`
	Consequences []ChainLink    `json:"consequences" jsonschema:"errors this one leads to: later lines that are symptoms, not causes"`
	ConfusedWith []kb.Confusion `json:"confused_with" jsonschema:"errors that look alike and how to tell them apart"`
}

// ChainLink is one entry on the chain.
type ChainLink struct {
	ID    string `json:"id"`
	Title string `json:"title,omitempty"`
	Depth int    `json:"depth" jsonschema:"1 for a direct link, 2 for a link of a link, ..."`
	From  string `json:"from" jsonschema:"the entry whose link this is"`
	Via   string `json:"via" jsonschema:"which field states the link: leads_to or preceded_by of the from entry, or of this entry (reverse)"`
	Known bool   `json:"known" jsonschema:"false when the id is named in a graph but no entry has it"`
}

func (h *handlers) addChain(s *mcp.Server) {
	addTool(s, &mcp.Tool{
		Name:  "error_chain",
		Title: "What leads to an error and what follows from it",
		Description: `The error chain around one entry: its causes (errors that lead to it: its preceded_by, and entries whose leads_to names it) and its consequences (its leads_to, and entries whose preceded_by names it), followed up to depth links each way, plus errors it is confused with.
Use it to tell a root cause from its symptoms: when a log shows several known errors, the one that is a cause of the others is where to start.`,
		Annotations: readOnly(),
	}, h.chain)
}

func (h *handlers) chain(_ context.Context, in ChainIn) (*ChainOut, string, error) {
	id := strings.TrimSpace(in.ID)
	if id == "" {
		return nil, "", errors.New("id is empty: give an entry id such as nccl/watchdog-timeout (search_entries finds ids)")
	}
	if in.Depth < 0 || in.Depth > 3 {
		return nil, "", fmt.Errorf("depth %d: want 1 to 3", in.Depth)
	}
	depth := max(in.Depth, 1)
	e := h.svc.Entry(id)
	if e == nil {
		return nil, "", h.notFound(id)
	}
	all := h.svc.Base().Entries()
	out := &ChainOut{ID: e.ID, Title: e.Title, ConfusedWith: nonNil(e.TransitionGraph.FrequentlyConfusedWith)}
	out.Causes = h.walk(e.ID, depth, all, func(x *kb.Entry) []string { return x.TransitionGraph.PrecededBy },
		func(x *kb.Entry) []string { return x.TransitionGraph.LeadsTo }, "preceded_by", "leads_to")
	out.Consequences = h.walk(e.ID, depth, all, func(x *kb.Entry) []string { return x.TransitionGraph.LeadsTo },
		func(x *kb.Entry) []string { return x.TransitionGraph.PrecededBy }, "leads_to", "preceded_by")
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", e.ID, e.Title)
	for _, part := range []struct {
		name  string
		links []ChainLink
	}{{"Caused by (look earlier in the log)", out.Causes}, {"Leads to (symptoms, not causes)", out.Consequences}} {
		fmt.Fprintf(&b, "%s:", part.name)
		if len(part.links) == 0 {
			b.WriteString(" none recorded")
		}
		b.WriteString("\n")
		for _, l := range part.links {
			fmt.Fprintf(&b, "%s- %s %s\n", strings.Repeat("  ", l.Depth), l.ID, l.Title)
		}
	}
	return out, b.String(), nil
}

// walk follows forward edges (fwd of each entry) and reverse ones
// (entries whose rev names it), breadth first, each id once.
func (h *handlers) walk(start string, depth int, all []*kb.Entry, fwd, rev func(*kb.Entry) []string, fwdName, revName string) []ChainLink {
	seen := map[string]bool{start: true}
	links := []ChainLink{}
	frontier := []string{start}
	for d := 1; d <= depth && len(frontier) > 0; d++ {
		var next []string
		for _, from := range frontier {
			fe := h.svc.Entry(from)
			var found []ChainLink
			if fe != nil {
				for _, id := range fwd(fe) {
					found = append(found, ChainLink{ID: id, Depth: d, From: from, Via: fwdName + " of " + from})
				}
			}
			for _, x := range all {
				if slices.Contains(rev(x), from) {
					found = append(found, ChainLink{ID: x.ID, Depth: d, From: from, Via: revName + " of " + x.ID})
				}
			}
			for _, l := range found {
				if seen[l.ID] {
					continue
				}
				seen[l.ID] = true
				if x := h.svc.Entry(l.ID); x != nil {
					l.Title, l.Known = x.Title, true
				}
				links = append(links, l)
				next = append(next, l.ID)
			}
		}
		frontier = next
	}
	return links
}
