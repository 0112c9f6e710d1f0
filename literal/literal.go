// Package literal finds, for an RE2 regular expression, strings of which
// every match must contain at least one. A scanner searches all such
// strings of many expressions at once (Aho-Corasick) and runs an
// expression only on lines that hold one of its strings.
package literal

import (
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MinLength is the shortest literal worth searching for: shorter ones
// occur on most lines and would select almost every entry.
const MinLength = 3

// Required returns strings of which every match of the RE2 pattern must
// contain at least one, lower-cased for a search of the lower-cased line
// (ASCII letters only). ok is false when no such set of strings of at least
// MinLength bytes exists, and the pattern must be tried on every line.
//
// The set is exact, not heuristic: a line that contains none of the strings
// (after lower-casing A-Z) cannot match. Case-insensitive parts that could
// match a non-ASCII rune by Unicode folding (k and s fold to the Kelvin sign
// and the long s) are left out of the literals.
func Required(pattern string) (lits []string, ok bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, false
	}
	set, ok := required(re.Simplify())
	if !ok {
		return nil, false
	}
	return dedupe(set), true
}

// required is the literal set of one node; false when there is none.
func required(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return bestPiece(pieces(re))
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpAlternate:
		var all []string
		for _, s := range re.Sub {
			set, ok := required(s)
			if !ok {
				return nil, false
			}
			all = append(all, set...)
		}
		return all, true
	case syntax.OpConcat:
		return concat(re.Sub)
	}
	return nil, false
}

// concat picks the best required set among the children of a
// concatenation, joining runs of adjacent literal children first (a regex
// like `CUDA error: (out of memory|…)` parses as several literal nodes).
func concat(subs []*syntax.Regexp) ([]string, bool) {
	var best []string
	found := false
	consider := func(set []string, ok bool) {
		if ok && (!found || better(set, best)) {
			best, found = set, true
		}
	}
	var run []string // pieces of the current run of literal children
	flush := func() {
		if len(run) > 0 {
			consider(bestPiece(run))
			run = nil
		}
	}
	for _, s := range subs {
		if s.Op == syntax.OpLiteral {
			ps := pieces(s)
			if len(run) > 0 && len(ps) > 0 && !strings.HasSuffix(run[len(run)-1], "\x00") && !strings.HasPrefix(ps[0], "\x00") {
				run[len(run)-1] += ps[0]
				ps = ps[1:]
			}
			run = append(run, ps...)
			continue
		}
		flush()
		consider(required(s))
	}
	flush()
	return best, found
}

// pieces splits a literal node into the parts usable as lower-cased
// search strings. A "\x00" piece marks a cut (a rune that cannot be
// searched for): pieces on either side of it must not be joined.
func pieces(re *syntax.Regexp) []string {
	fold := re.Flags&syntax.FoldCase != 0
	var out []string
	var b strings.Builder
	cut := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
		out = append(out, "\x00")
	}
	for _, r := range re.Rune {
		switch {
		case fold && (r == 'k' || r == 'K' || r == 's' || r == 'S'):
			cut() // Unicode folding: K also matches U+212A, S matches U+017F
		case r == utf8.RuneError:
			cut() // RE2 matches U+FFFD against any invalid byte of the line
		case fold && r >= utf8.RuneSelf && unicode.SimpleFold(r) != r:
			cut() // non-ASCII case folding is not what ASCII lower-casing does
		case r >= 'A' && r <= 'Z':
			// Lower-case: the line is lower-cased before the search, so a
			// case-sensitive literal still matches its own text.
			b.WriteRune(r + 'a' - 'A')
		default:
			b.WriteRune(r)
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// bestPiece returns the longest usable piece as a one-string set.
func bestPiece(ps []string) ([]string, bool) {
	best := ""
	for _, p := range ps {
		if p != "\x00" && len(p) > len(best) {
			best = p
		}
	}
	if len(best) < MinLength {
		return nil, false
	}
	return []string{best}, true
}

// better prefers the set whose shortest literal is longest (rarer), then
// the smaller set.
func better(a, b []string) bool {
	ma, mb := minLen(a), minLen(b)
	if ma != mb {
		return ma > mb
	}
	return len(a) < len(b)
}

func minLen(set []string) int {
	m := -1
	for _, s := range set {
		if m < 0 || len(s) < m {
			m = len(s)
		}
	}
	return m
}

func dedupe(set []string) []string {
	seen := map[string]bool{}
	out := set[:0]
	for _, s := range set {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
