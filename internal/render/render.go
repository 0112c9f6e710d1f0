// Package render writes diagnosis reports for people (terminal text,
// markdown to paste into an issue) and for machines (JSON), in English or
// Chinese. It computes nothing: it lays out the language-resolved view of
// a report that internal/view builds, which the web page and the MCP tools
// read too.
package render

import (
	"encoding/json"
	"io"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/internal/view"
)

// Options shape the human-readable outputs.
type Options struct {
	Lang    string // "en" (default) or "zh"
	Color   bool   // ANSI colours for a terminal
	Explain bool   // say why each diagnosis is ranked where it is
	// Width wraps terminal prose to this many columns and cuts log lines
	// and commands to it; 0 leaves lines whole.
	Width int
	All   bool // list the items whose condition does not hold here too
}

func (o Options) lang() string {
	if view.ValidLang(o.Lang) {
		return o.Lang
	}
	return "en"
}

// JSON writes the report as one indented JSON object (docs/json-output.md).
func JSON(w io.Writer, r *diagnose.Report) error { return WriteJSON(w, r) }

// WriteJSON writes v as indented JSON, with <, > and & left as they are
// (messages quote them).
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
