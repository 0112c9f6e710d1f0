package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BatchLookupIn is lookup_errors' input.
type BatchLookupIn struct {
	Messages []string `json:"messages" jsonschema:"error names, codes or lines to look up, one per item (at most 100; each at most 64 KiB)"`
	Limit    int      `json:"limit,omitempty" jsonschema:"matches per message, 1 to 5 (default 3)"`
}

// BatchLookupOut is lookup_errors' structured output.
type BatchLookupOut struct {
	Results []BatchResult `json:"results" jsonschema:"one per message, in the order given"`
}

// BatchResult is the lookup of one message.
type BatchResult struct {
	Message string  `json:"message"`
	Matches []Match `json:"matches" jsonschema:"best first; empty when nothing matched"`
}

const maxBatch = 100

func (h *handlers) addBatchLookup(s *mcp.Server) {
	addTool(s, &mcp.Tool{
		Name:  "lookup_errors",
		Title: "Look up many GPU errors at once",
		Description: `Look up many errors in one call: a list of error names, codes or message lines (up to 100), for example every distinct error line of a failed job's ranks.
Each message gets the entries lookup_error would give it (up to limit, default 3), with regex_matched telling a real match from a match on words, the root cause, dead ends and workarounds. A message that matches nothing gets an empty list; an empty message is an error naming its position.`,
		Annotations: readOnly(),
	}, h.batchLookup)
}

func (h *handlers) batchLookup(ctx context.Context, in BatchLookupIn) (*BatchLookupOut, string, error) {
	switch {
	case len(in.Messages) == 0:
		return nil, "", errors.New("messages is empty: give one or more error names or lines")
	case len(in.Messages) > maxBatch:
		return nil, "", fmt.Errorf("%d messages; lookup_errors takes at most %d per call", len(in.Messages), maxBatch)
	case in.Limit < 0 || in.Limit > lookupResults:
		return nil, "", fmt.Errorf("limit %d: want 1 to %d", in.Limit, lookupResults)
	}
	limit := in.Limit
	if limit == 0 {
		limit = 3
	}
	out := &BatchLookupOut{Results: make([]BatchResult, 0, len(in.Messages))}
	var text strings.Builder
	for i, raw := range in.Messages {
		msg := strings.TrimSpace(raw)
		switch {
		case msg == "":
			return nil, "", fmt.Errorf("messages[%d] is empty", i)
		case len(msg) > maxMessageText:
			return nil, "", fmt.Errorf("messages[%d] is %d bytes; at most %d: give a whole log to diagnose_log", i, len(msg), maxMessageText)
		}
		r := BatchResult{Message: msg, Matches: []Match{}}
		for _, res := range h.svc.Search(msg, limit) {
			m, err := h.match(ctx, res, msg)
			if err != nil {
				return nil, "", err
			}
			r.Matches = append(r.Matches, m)
		}
		out.Results = append(out.Results, r)
		fmt.Fprintf(&text, "%d. %s\n", i+1, firstLine(msg, 100))
		if len(r.Matches) == 0 {
			text.WriteString("   no known error\n")
		}
		for _, m := range r.Matches {
			how := "words only"
			if m.RegexMatched {
				how = "message matched"
			}
			fmt.Fprintf(&text, "   %s (%s)\n", m.ID, how)
		}
	}
	return out, text.String(), nil
}

func firstLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}
