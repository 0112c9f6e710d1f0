package scan

import (
	"bytes"
	"regexp"
	"testing"

	cf "github.com/cloudflare/ahocorasick"
	ac "github.com/petar-dambovaliev/aho-corasick"

	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/literal"
)

// BenchmarkMatch compares the plain matcher (every regex on every line)
// with the prefiltered one on a generated training log, with our knowledge
// base and with the deadends.dev canons added. Run:
//
//	go test ./scan -run XXX -bench Match -benchtime 3x
func BenchmarkMatch(b *testing.B) {
	ours := ourEntries(b)
	sets := []struct {
		name string
		es   []*kb.Entry
	}{{"ours", ours}}
	if d := maybeDead(); d != nil {
		sets = append(sets, struct {
			name string
			es   []*kb.Entry
		}{"ours+deadends", append(append([]*kb.Entry(nil), ours...), d...)})
	}
	data := corpus(1<<20, examples(ours), 2)
	for _, set := range sets {
		for _, kind := range []string{"plain", "prefilter"} {
			b.Run(set.name+"/"+kind, func(b *testing.B) {
				s, _ := New(set.es)
				if kind == "plain" {
					s = plainScanner(set.es)
				}
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := s.Scan(bytes.NewReader(data), func(Hit) {}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func maybeDead() []*kb.Entry {
	es, _ := kb.LoadPath(deadendsDir)
	return es
}

// BenchmarkAhoCorasick is how the multi-literal search was chosen: the
// literals of our entries and the deadends canons, searched for in every
// lower-cased line of the log with overlapping matches (every literal
// present must be reported). petar-dambovaliev/aho-corasick (a port of the
// Rust crate, with a DFA) against cloudflare/ahocorasick.
func BenchmarkAhoCorasick(b *testing.B) {
	es := append(ourEntries(b), maybeDead()...)
	seen := map[string]bool{}
	var lits []string
	for _, e := range es {
		set, _ := literal.Required(e.Regex)
		for _, l := range set {
			if !seen[l] {
				seen[l] = true
				lits = append(lits, l)
			}
		}
	}
	var lines [][]byte
	for _, l := range bytes.Split(corpus(1<<20, examples(es[:200]), 3), []byte("\n")) {
		lines = append(lines, lowerASCII(nil, l))
	}
	size := int64(0)
	for _, l := range lines {
		size += int64(len(l)) + 1
	}
	b.Logf("%d literals, %d lines", len(lits), len(lines))
	b.Run("petar-dfa", func(b *testing.B) {
		builder := ac.NewAhoCorasickBuilder(ac.Opts{MatchKind: ac.StandardMatch, DFA: true})
		m := builder.Build(lits)
		b.SetBytes(size)
		for b.Loop() {
			n := 0
			for _, l := range lines {
				it := m.IterOverlappingByte(l)
				for x := it.Next(); x != nil; x = it.Next() {
					n++
				}
			}
		}
	})
	b.Run("petar-nfa", func(b *testing.B) {
		builder := ac.NewAhoCorasickBuilder(ac.Opts{MatchKind: ac.StandardMatch})
		m := builder.Build(lits)
		b.SetBytes(size)
		for b.Loop() {
			n := 0
			for _, l := range lines {
				it := m.IterOverlappingByte(l)
				for x := it.Next(); x != nil; x = it.Next() {
					n++
				}
			}
		}
	})
	b.Run("petar-dfa-whole-buffer", func(b *testing.B) {
		// One pass over the whole buffer: positions, not lines (the
		// automaton's own speed, without per-line set-up).
		builder := ac.NewAhoCorasickBuilder(ac.Opts{MatchKind: ac.StandardMatch, DFA: true})
		m := builder.Build(lits)
		buf := bytes.Join(lines, []byte("\n"))
		b.SetBytes(size)
		for b.Loop() {
			n := 0
			it := m.IterOverlappingByte(buf)
			for x := it.Next(); x != nil; x = it.Next() {
				n++
			}
		}
	})
	b.Run("cloudflare", func(b *testing.B) {
		m := cf.NewStringMatcher(lits)
		b.SetBytes(size)
		for b.Loop() {
			n := 0
			for _, l := range lines {
				n += len(m.MatchThreadSafe(l))
			}
		}
	})
	b.Run("regexp-alternation", func(b *testing.B) {
		// The baseline a scanner without an automaton would use.
		var alt bytes.Buffer
		for i, l := range lits {
			if i > 0 {
				alt.WriteByte('|')
			}
			alt.WriteString(regexp.QuoteMeta(l))
		}
		re := regexp.MustCompile(alt.String())
		b.SetBytes(size)
		for b.Loop() {
			n := 0
			for _, l := range lines {
				if re.Match(l) {
					n++
				}
			}
		}
	})
}
