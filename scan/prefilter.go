package scan

import (
	"regexp"
	"slices"

	ac "github.com/petar-dambovaliev/aho-corasick"

	"github.com/gpudx/gpudx/literal"
)

// prefiltered runs a regex only on lines that hold one of the literals
// every match of it must contain (literal.Required). All literals are
// searched at once with an Aho-Corasick automaton over the line lower-cased;
// entries without a usable literal run on every line. It reports exactly
// the hits of plain, in the same order.
//
// The automaton is petar-dambovaliev/aho-corasick's DFA: on the 5,356
// literals of our entries and the deadends canons it takes 56 MiB, where
// cloudflare/ahocorasick, 25% faster per line, takes 286 MiB (its NFA: 4 MiB,
// slower); see BenchmarkAhoCorasick.
type prefiltered struct {
	res    []*regexp.Regexp
	auto   ac.AhoCorasick
	owners [][]int32 // per literal: the entries that require it
	always []int32   // entries with no usable literal, ascending
	nlits  int
}

// scan is one scan's matcher: the automaton and per-line scratch.
type scan struct {
	*prefiltered
	lower []byte
	seen  []uint32 // per entry: the line generation that marked it
	gen   uint32
	cand  []int32
}

func newPrefiltered(res []*regexp.Regexp) *prefiltered {
	p := &prefiltered{res: res}
	index := map[string]int{}
	var lits []string
	for i, re := range res {
		set, ok := literal.Required(re.String())
		if !ok {
			p.always = append(p.always, int32(i))
			continue
		}
		for _, l := range set {
			j, seen := index[l]
			if !seen {
				j = len(lits)
				index[l] = j
				lits = append(lits, l)
				p.owners = append(p.owners, nil)
			}
			p.owners[j] = append(p.owners[j], int32(i))
		}
	}
	p.nlits = len(lits)
	if len(lits) > 0 {
		b := ac.NewAhoCorasickBuilder(ac.Opts{MatchKind: ac.StandardMatch, DFA: true})
		p.auto = b.Build(lits)
	}
	return p
}

// Unfiltered is the number of entries that run on every line.
func (p *prefiltered) unfiltered() int { return len(p.always) }

func (p *prefiltered) start() lineMatcher {
	return &scan{prefiltered: p, seen: make([]uint32, len(p.res))}
}

func (sc *scan) match(line []byte, emit func(int, []int)) {
	p := sc.prefiltered
	sc.gen++
	if sc.gen == 0 { // wrapped: forget every old mark
		clear(sc.seen)
		sc.gen = 1
	}
	sc.cand = append(sc.cand[:0], p.always...)
	if p.nlits > 0 {
		sc.lower = lowerASCII(sc.lower[:0], line)
		it := p.auto.IterOverlappingByte(sc.lower)
		for m := it.Next(); m != nil; m = it.Next() {
			for _, e := range p.owners[m.Pattern()] {
				if sc.seen[e] != sc.gen {
					sc.seen[e] = sc.gen
					sc.cand = append(sc.cand, e)
				}
			}
		}
		if len(sc.cand) > len(p.always) {
			slices.Sort(sc.cand) // plain's order: by entry
		}
	}
	for _, i := range sc.cand {
		if loc := p.res[i].FindSubmatchIndex(line); loc != nil {
			emit(int(i), loc)
		}
	}
}

// lowerASCII appends b with A-Z lower-cased to dst.
func lowerASCII(dst, b []byte) []byte {
	dst = slices.Grow(dst, len(b))[:len(b)]
	for i, c := range b {
		if c-'A' < 26 {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
	return dst
}
