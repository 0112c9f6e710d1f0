package scan

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"sync"
)

// Repeated lines.
//
// A failing job prints the same line again and again with only figures
// changed: a timestamp, a rank, a step counter, a size. Running the
// regexes on every repeat was most of the cost of such logs (PyTorch's
// out-of-memory regex alone takes tens of microseconds a line). A worker
// therefore remembers, per line shape, where each entry's regex matched:
// the shape of a line is the line with every ASCII digit replaced by '0'.
//
// This is exact, not a heuristic, for the regexes that cannot tell one
// digit from another (digitBlind): no literal digit, and every character
// class holds all of 0-9 or none of them (\d, \w, [0-9.], [^)] and . do;
// [1-9] and "error 2" do not). Such a regex runs, step for step, the same
// way on two lines of the same shape: every test of a character gives the
// same answer for any digit, word boundaries see a digit as a word
// character whichever it is, and a digit is a byte of its own in UTF-8, so
// the runes around it decode alike. Its match, and every group's position,
// are the same on both lines; only the text at those positions differs,
// and captures and evidence are cut from the line itself.
//
// A regex that does tell digits apart is remembered through its
// relaxation, the same regex with every digit test widened to [0-9]: that
// one is digit-blind, and matches wherever the regex does (each piece
// accepts more, and existence of a match is monotone in what the pieces
// accept), so where the relaxation has no match on a shape, the regex has
// none on any line of it. Where the relaxation matches, the regex runs.
// The relaxation is run from a shape's second line on, so that lines that
// never repeat do not pay for it.
//
// The lines scanned are only those that hold a required literal, so the
// memory pays off on logs full of known lines and costs a masked copy and
// a map lookup elsewhere (lines longer than memoLine are not remembered).

const (
	memoLine   = 8 << 10   // longest line whose shape is remembered
	memoBudget = 256 << 10 // bytes of shapes a worker keeps before it forgets them all
)

// memoRe is how the memory treats one entry, worked out on first use:
// whether its regex is digit-blind (a parse), and its relaxation (a
// compilation) only once a repeated shape needs it.
type memoRe struct {
	once    sync.Once
	ok      bool // the regex parses again (it always should)
	blind   bool
	ronce   sync.Once
	relaxed *regexp.Regexp // nil where it does not compile
}

// exact reports whether re is digit-blind, so that what is remembered of
// a shape is its match; false with ok means the relaxation is needed.
func (m *memoRe) exact(re *regexp.Regexp) (exact, ok bool) {
	m.once.Do(func() {
		t, err := syntax.Parse(re.String(), syntax.Perl)
		m.ok = err == nil
		m.blind = m.ok && !relax(t)
	})
	return m.blind, m.ok
}

// relaxation returns re relaxed, or nil.
func (m *memoRe) relaxation(re *regexp.Regexp) *regexp.Regexp {
	m.ronce.Do(func() {
		t, err := syntax.Parse(re.String(), syntax.Perl)
		if err != nil || !relax(t) {
			return
		}
		m.relaxed, _ = regexp.Compile(t.String())
	})
	return m.relaxed
}

// digitBlind reports whether re matches the same way on any two lines that
// differ only in which ASCII digits they hold.
func digitBlind(re *regexp.Regexp) bool {
	t, err := syntax.Parse(re.String(), syntax.Perl)
	return err == nil && !relax(t)
}

var allDigits = []rune{'0', '9'}

// relax widens every test of re that tells digits apart to accept any
// digit, in place, and reports whether there was one.
func relax(re *syntax.Regexp) bool {
	changed := false
	switch re.Op {
	case syntax.OpLiteral:
		if slices.ContainsFunc(re.Rune, isDigit) {
			// A concatenation of the runes, each digit a class.
			var subs []*syntax.Regexp
			for _, r := range re.Rune {
				sub := &syntax.Regexp{Op: syntax.OpLiteral, Flags: re.Flags, Rune: []rune{r}}
				if isDigit(r) {
					sub = &syntax.Regexp{Op: syntax.OpCharClass, Flags: re.Flags, Rune: allDigits}
				}
				subs = append(subs, sub)
			}
			*re = syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags, Sub: subs}
			changed = true
		}
	case syntax.OpCharClass:
		// Rune holds sorted, disjoint ranges lo-hi; 0-9 must lie wholly
		// inside one of them or outside all.
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if lo <= '9' && hi >= '0' && (lo > '0' || hi < '9') {
				re.Rune = addDigits(re.Rune)
				changed = true
				break
			}
		}
	}
	for _, s := range re.Sub {
		if relax(s) {
			changed = true
		}
	}
	return changed
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// addDigits returns the ranges of a class with 0-9 added, sorted and
// merged.
func addDigits(ranges []rune) []rune {
	type span struct{ lo, hi rune }
	spans := []span{{'0', '9'}}
	for i := 0; i+1 < len(ranges); i += 2 {
		spans = append(spans, span{ranges[i], ranges[i+1]})
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.lo - b.lo) })
	var out []rune
	for _, s := range spans {
		if n := len(out); n > 0 && s.lo <= out[n-1]+1 {
			out[n-1] = max(out[n-1], s.hi)
			continue
		}
		out = append(out, s.lo, s.hi)
	}
	return out
}

// shape is what a worker remembers of one line shape: the entries tried
// on it and where each one's memoRe matched (nil: no match).
type shape struct {
	ents   []int32
	locs   [][]int
	repeat bool // a line of this shape was seen before
}

func (s *shape) lookup(e int32) ([]int, bool) {
	for i, x := range s.ents {
		if x == e {
			return s.locs[i], true
		}
	}
	return nil, false
}

// shapeOf writes text with its ASCII digits replaced by '0' to dst.
func shapeOf(dst, text []byte) []byte {
	dst = append(dst[:0], text...)
	for i, c := range dst {
		if c-'0' < 10 {
			dst[i] = '0'
		}
	}
	return dst
}
