package render

import (
	"strings"

	"github.com/gpudx/gpudx/internal/termwidth"
)

// Terminal layout: prose is wrapped to the width; log lines and commands
// are never wrapped (a wrapped command breaks when pasted) but cut with an
// ellipsis. Widths count terminal columns: CJK characters take two.

// runeWidth and strWidth count terminal columns (package termwidth).
var (
	runeWidth = termwidth.Rune
	strWidth  = termwidth.String
)

// cutTo cuts s to at most width columns, with "…" in the last column when
// anything was cut. width <= 0 leaves s whole.
func cutTo(s string, width int) string {
	if width <= 0 || strWidth(s) <= width {
		return s
	}
	n := 0
	for i, r := range s {
		w := runeWidth(r)
		if n+w > width-1 {
			return s[:i] + "…"
		}
		n += w
	}
	return s
}

// wideBreak reports whether a line may break before or after r without a
// space: between CJK characters, as Chinese text has no spaces.
func wideBreak(r rune) bool { return runeWidth(r) == 2 }

// wrap breaks prose into lines of at most width columns, the first
// starting with first and the others with rest (both counted in the
// width). It breaks at spaces, and between wide (CJK) characters; a word
// longer than a line stands alone. width <= 0 only prefixes.
func wrap(s string, width int, first, rest string) string {
	var out []string
	for _, para := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		pre := first
		if len(out) > 0 {
			pre = rest
		}
		if width <= 0 {
			out = append(out, pre+para)
			continue
		}
		out = append(out, wrapPara(para, width, pre, rest)...)
	}
	return strings.Join(out, "\n")
}

func wrapPara(para string, width int, first, rest string) []string {
	var lines []string
	var line strings.Builder
	line.WriteString(first)
	lineW, prefixW := strWidth(first), strWidth(first)
	empty := true
	flush := func() {
		lines = append(lines, strings.TrimRight(line.String(), " "))
		line.Reset()
		line.WriteString(rest)
		lineW, prefixW, empty = strWidth(rest), strWidth(rest), true
	}
	for _, tok := range tokens(para) {
		if tok == " " {
			if !empty {
				line.WriteByte(' ')
				lineW++
			}
			continue
		}
		w := strWidth(tok)
		if !empty && lineW+w > width {
			flush()
		}
		line.WriteString(tok)
		lineW += w
		empty = false
	}
	if lineW > prefixW || len(lines) == 0 {
		lines = append(lines, strings.TrimRight(line.String(), " "))
	}
	return lines
}

// tokens splits prose into words, single spaces and wide characters (each
// its own token, so that CJK text can break anywhere). Punctuation that
// must not start a line (full-width commas, stops, closing brackets) stays
// with the character before it.
func tokens(s string) []string {
	var out []string
	start := -1
	for i, r := range s {
		switch {
		case r == ' ':
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			out = append(out, " ")
		case wideBreak(r):
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			if strings.ContainsRune("，。、；：！？）」』》】", r) && len(out) > 0 && out[len(out)-1] != " " {
				out[len(out)-1] += string(r)
			} else {
				out = append(out, string(r))
			}
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return glueUnits(out)
}

// glueUnits keeps a figure with its unit ("4.00 GiB") on one line.
func glueUnits(toks []string) []string {
	out := toks[:0]
	for i := 0; i < len(toks); i++ {
		if i+2 < len(toks) && toks[i+1] == " " && isUnit(toks[i+2]) && endsInDigit(toks[i]) {
			out = append(out, toks[i]+" "+toks[i+2])
			i += 2
			continue
		}
		out = append(out, toks[i])
	}
	return out
}

func isUnit(s string) bool {
	s = strings.TrimRight(s, ".,;:)）。，")
	switch s {
	case "B", "KiB", "MiB", "GiB", "TiB", "KB", "MB", "GB", "TB", "ms", "s", "%":
		return true
	}
	return false
}

func endsInDigit(s string) bool { return s != "" && s[len(s)-1] >= '0' && s[len(s)-1] <= '9' }
