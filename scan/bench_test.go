package scan

import (
	"bytes"
	"regexp"
	"testing"

	cf "github.com/cloudflare/ahocorasick"
	ac "github.com/petar-dambovaliev/aho-corasick"

	"github.com/gpudx/gpudx/internal/loggen"
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
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if kind == "plain" {
						reference(s, data, MaxLine, nil, nil)
					} else if _, err := s.Scan(bytes.NewReader(data), func(Hit) {}); err != nil {
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
// Rust crate, with a DFA) against cloudflare/ahocorasick, and since the
// chunked scan, our own sampled-gram search (litSet) over whole buffers,
// which replaced them: see the litset and petar-dfa-whole-buffer rows.
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
	b.Run("petar-dfa", func(b *testing.B) { petar(b, true, lits, lines, size) })
	b.Run("petar-nfa", func(b *testing.B) { petar(b, false, lits, lines, size) })
	b.Run("petar-dfa-whole-buffer", func(b *testing.B) {
		// One pass over the whole buffer: positions, not lines (the
		// automaton's own speed, without per-line set-up).
		petar(b, true, lits, [][]byte{bytes.Join(lines, []byte("\n"))}, size)
	})
	b.Run("litset-whole-buffer", func(b *testing.B) {
		// Ours (litSet): sampled grams; the deadends literals are as short
		// as 3 bytes, so it samples every position here.
		ls := newLitSet(lits, nil)
		buf := bytes.Join(lines, []byte("\n"))
		b.SetBytes(size)
		for b.Loop() {
			n := 0
			ls.find(buf, func(int, int32) { n++ })
		}
	})
	// Our knowledge base alone (literals of 8 bytes or more): what
	// gpudx diagnose searches for by default.
	var oursLits []string
	for _, e := range ourEntries(b) {
		set, _ := literal.Required(e.Regex)
		oursLits = append(oursLits, set...)
	}
	buf := bytes.Join(lines, []byte("\n"))
	b.Run("ours/litset-whole-buffer", func(b *testing.B) {
		ls := newLitSet(dedupe(oursLits), nil)
		b.SetBytes(size)
		for b.Loop() {
			n := 0
			ls.find(buf, func(int, int32) { n++ })
		}
	})
	b.Run("ours/petar-dfa-whole-buffer", func(b *testing.B) {
		petar(b, true, dedupe(oursLits), [][]byte{buf}, size)
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

// BenchmarkScanLog scans 64 MiB of generated training log with one
// planted error in 10,000 lines, the density of the 1 GB bench/scan log,
// with our knowledge base: the figure the chunked scan is tuned on.
func BenchmarkScanLog(b *testing.B) {
	ours := ourEntries(b)
	data := loggen.Bytes(64<<20, examples(ours), 10000, 5)
	s, _ := New(ours)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := s.Scan(bytes.NewReader(data), func(Hit) {}); err != nil {
			b.Fatal(err)
		}
	}
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// petar runs petar's automaton (DFA or NFA) over each of bufs, every
// overlapping match counted.
func petar(b *testing.B, dfa bool, lits []string, bufs [][]byte, size int64) {
	builder := ac.NewAhoCorasickBuilder(ac.Opts{MatchKind: ac.StandardMatch, DFA: dfa})
	m := builder.Build(lits)
	b.SetBytes(size)
	for b.Loop() {
		n := 0
		for _, buf := range bufs {
			it := m.IterOverlappingByte(buf)
			for x := it.Next(); x != nil; x = it.Next() {
				n++
			}
		}
	}
}
