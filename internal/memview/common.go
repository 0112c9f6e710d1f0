// Package memview renders a memory.Report as text, HTML and pprof.
//
// It computes no figure of its own: every number comes from the report
// (memory.Analyze, memory.Compare), except the block-level pictures (the
// HTML segment map, the pprof samples), which are drawn from the snapshot's
// blocks directly.
package memview

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/internal/termwidth"
	"github.com/gpudx/gpudx/internal/view"
	"github.com/gpudx/gpudx/memory"
)

// Options shape the text view.
type Options struct {
	Lang   string // "en" (default) or "zh"
	Stacks bool   // print the full stacks of the top sites and of the OOM request
	Name   string // the file named in the header ("-" for standard input)
	Width  int    // wrap width in columns; 0 means 100
}

func (o Options) width() int {
	if o.Width <= 0 {
		return 100
	}
	return o.Width
}

// JSON writes v (a *memory.Report or a *memory.Diff) as one indented JSON
// object, with <, > and & left as they are.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func size(n uint64) string { return facts.FormatBytes(float64(n)) }

// signedSize writes a change with its sign: "+1.00 GiB", "-512 B", "0 B".
func signedSize(d int64) string {
	switch {
	case d > 0:
		return "+" + facts.FormatBytes(float64(d))
	case d < 0:
		return "-" + facts.FormatBytes(-float64(d))
	}
	return "0 B"
}

func percent(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

// group writes n with thousands separators (view.Group).
func group(n int) string { return view.Group(int64(n)) }

// when writes a trace time (microseconds since the Unix epoch) in UTC; ""
// when the trace did not record it.
func when(us int64) string {
	if us <= 0 {
		return ""
	}
	return time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.000 UTC")
}

func device(d int) string { return fmt.Sprintf("cuda:%d", d) }

// frameText writes one frame as "name (file:line)", like a site.
func frameText(f memory.Frame) string {
	switch {
	case f.Filename == "":
		return f.Name
	case f.Line == 0:
		return fmt.Sprintf("%s (%s)", f.Name, f.Filename)
	}
	return fmt.Sprintf("%s (%s:%d)", f.Name, f.Filename, f.Line)
}

// Display width: East Asian wide runes take two columns.

// width and runeWidth count terminal columns (package termwidth).
var (
	width     = termwidth.String
	runeWidth = termwidth.Rune
)

func padRight(s string, w int) string {
	if d := w - width(s); d > 0 {
		return s + strings.Repeat(" ", d)
	}
	return s
}

func padLeft(s string, w int) string {
	if d := w - width(s); d > 0 {
		return strings.Repeat(" ", d) + s
	}
	return s
}

// clip shortens s to at most w columns. A site "name (path:line)" keeps its
// name and the end of its path; anything else keeps its start.
func clip(s string, w int) string {
	if width(s) <= w || w < 8 {
		return s
	}
	if i := strings.Index(s, " ("); i > 0 && strings.HasSuffix(s, ")") && width(s[:i])+6 < w {
		head := s[:i] + " (…"
		room := w - width(head)
		tail := s[i+2:]
		for width(tail) > room {
			_, n := utf8.DecodeRuneInString(tail)
			tail = tail[n:]
		}
		return head + tail
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n+runeWidth(r) > w-1 {
			break
		}
		b.WriteRune(r)
		n += runeWidth(r)
	}
	return b.String() + "…"
}

// wrap breaks text into lines of at most w columns: the first line starts
// with first, the others with rest. Words are kept whole where they fit;
// Chinese breaks between characters (never before closing punctuation).
func wrap(text, first, rest string, w int) string {
	var b strings.Builder
	line, lineW, empty := first, width(first), true
	flush := func() {
		b.WriteString(strings.TrimRight(line, " "))
		b.WriteByte('\n')
		line, lineW, empty = rest, width(rest), true
	}
	for _, u := range wrapUnits(text) {
		uw := width(u.text)
		sep := 0
		if u.space && !empty {
			sep = 1
		}
		switch {
		case lineW+sep+uw <= w:
		case !empty && width(rest)+uw <= w:
			flush()
			sep = 0
		default: // longer than a line: break it between runes
			if sep == 1 {
				line += " "
				lineW++
				sep = 0
			}
			for _, r := range u.text {
				if rw := runeWidth(r); lineW+rw > w && !empty {
					flush()
				}
				line += string(r)
				lineW += runeWidth(r)
				empty = false
			}
			continue
		}
		if sep == 1 {
			line += " "
		}
		line += u.text
		lineW += sep + uw
		empty = false
	}
	if !empty || b.Len() == 0 {
		flush()
	}
	return b.String()
}

type wrapUnit struct {
	text  string
	space bool // a space separates it from the unit before
}

// noBreakBefore are the closing marks a line must not start with.
const noBreakBefore = "，。、：；！？）》」』】,.:;!?)"

// wrapUnits splits text at spaces, and wide (CJK) characters into units of
// their own, closing punctuation staying with the character before it.
func wrapUnits(text string) []wrapUnit {
	var out []wrapUnit
	for _, word := range strings.Fields(text) {
		// A size stays on one line: "1.50" and "GiB," are one unit.
		if n := len(out); n > 0 && isUnit(strings.TrimRight(word, noBreakBefore)) && endsInDigit(out[n-1].text) {
			out[n-1].text += " " + word
			continue
		}
		first := true
		var cur strings.Builder
		curWide := false
		emit := func() {
			if cur.Len() > 0 {
				out = append(out, wrapUnit{cur.String(), first})
				first = false
				cur.Reset()
			}
		}
		for _, r := range word {
			wide := runeWidth(r) == 2
			switch {
			case strings.ContainsRune(noBreakBefore, r) && (cur.Len() > 0 || len(out) > 0 && !first):
				if cur.Len() == 0 { // attach to the unit before
					out[len(out)-1].text += string(r)
					continue
				}
				cur.WriteRune(r)
				continue
			case wide:
				emit()
				cur.WriteRune(r)
				curWide = true
				continue
			case curWide:
				emit()
			}
			curWide = false
			cur.WriteRune(r)
		}
		emit()
	}
	return out
}

func isUnit(w string) bool {
	switch w {
	case "B", "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB":
		return true
	}
	return false
}

func endsInDigit(s string) bool { return s != "" && s[len(s)-1] >= '0' && s[len(s)-1] <= '9' }

// items joins parts with " · ", breaking lines between parts at w columns;
// the first line starts with first, the others with rest.
func items(parts []string, first, rest string, w int) string {
	var b strings.Builder
	line := first
	empty := true
	for _, p := range parts {
		if p == "" {
			continue
		}
		if empty {
			line += p
			empty = false
			continue
		}
		if width(line)+3+width(p) > w {
			b.WriteString(line + "\n")
			line = rest + p
			continue
		}
		line += " · " + p
	}
	b.WriteString(line + "\n")
	return b.String()
}
