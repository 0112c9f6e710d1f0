package scan

import (
	"bytes"
	"strings"
)

// refLine is one Line call of a scan.
type refLine struct {
	n    int
	text string
}

// reference is the plain scan the fast one is checked against, written
// from the package's definitions with nothing shared but stripANSI,
// rawOffset and evidence: the whole input in memory, every line cut at
// '\n' and cut again into maxLine pieces, every regex tried on every
// piece. With a gate it also returns the Line calls a Visitor must see:
// the pieces that hold a gate literal (ignoring ASCII case from foldLen
// bytes on), or that Start accepts, or that have hits, or that follow a
// Line that asked for the next one (next decides, from the text).
func reference(s *Scanner, data []byte, maxLine int, g *Gate, next func(text string) bool) ([]Hit, []refLine) {
	var hits []Hit
	var shown []refLine
	follow := false
	var off int64
	n := 0
	for len(data) > 0 {
		n++
		raw := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			raw = data[:i]
			data = data[i+1:]
		} else {
			data = nil
		}
		line := bytes.TrimSuffix(raw, []byte("\r"))
		for p := 0; ; p += maxLine {
			piece := line[p:min(p+maxLine, len(line))]
			text := piece
			if bytes.IndexByte(piece, 0x1b) >= 0 {
				text = stripANSI(nil, piece)
			}
			var lineHits []Hit
			for i, re := range s.res {
				loc := re.FindSubmatchIndex(text)
				if loc == nil || (s.nots[i] != nil && s.nots[i].Match(text)) {
					continue
				}
				h := Hit{Entry: i, ID: s.entries[i].ID, Line: n, Len: loc[1] - loc[0],
					Offset: off + int64(p+rawOffset(piece, loc[0])), Text: evidence(text, loc[0], loc[1])}
				for gi, name := range re.SubexpNames() {
					if gi > 0 && name != "" && loc[2*gi] >= 0 {
						if h.Captures == nil {
							h.Captures = map[string]string{}
						}
						h.Captures[name] = string(text[loc[2*gi]:loc[2*gi+1]])
					}
				}
				lineHits = append(lineHits, h)
			}
			if g != nil {
				show := follow || g.All || len(lineHits) > 0 || (g.Start != nil && g.Start(text))
				for _, l := range g.Literals {
					if len(l) >= foldLen {
						show = show || strings.Contains(lowerString(string(text)), lowerString(l))
					} else {
						show = show || bytes.Contains(text, []byte(l))
					}
				}
				follow = false
				if show {
					shown = append(shown, refLine{n, string(text)})
					follow = next != nil && next(string(text))
				}
			}
			hits = append(hits, lineHits...)
			if p+maxLine >= len(line) {
				break
			}
		}
		off += int64(len(raw)) + 1
	}
	return hits, shown
}
