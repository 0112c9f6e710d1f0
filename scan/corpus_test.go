package scan

import (
	"bytes"
	"fmt"
	"github.com/gpudx/gpudx/internal/sharedtest"
	"os"
	"testing"

	"github.com/gpudx/gpudx/internal/loggen"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
)

const deadendsDir = "../../shared/fixtures/deadends/canons"

// ourEntries is the built-in knowledge base.
func ourEntries(t testing.TB) []*kb.Entry {
	es, errs := kb.LoadFS(knowledge.FS, ".", "knowledge/")
	if len(errs) > 0 {
		t.Fatal(errs[0])
	}
	return es
}

// deadEntries is the deadends.dev corpus (skipped when ../shared is absent).
func deadEntries(t testing.TB) []*kb.Entry {
	if _, err := os.Stat(deadendsDir); err != nil {
		sharedtest.Missing(t, "fixtures/deadends/canons")
	}
	es, _ := kb.LoadPath(deadendsDir)
	return es
}

// corpus is a training log of about n bytes with the given lines planted
// at random (one line in 20).
func corpus(n int, planted []string, seed int64) []byte {
	return loggen.Bytes(int64(n), planted, 0, seed)
}

// examples are the entries' example lines, near misses, signatures and
// aliases (deadends.dev canons have no examples, only a signature).
func examples(es []*kb.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Examples.Match...)
		out = append(out, e.Examples.NoMatch...)
		out = append(out, e.Signature)
		out = append(out, e.Aliases...)
	}
	return out
}

// allHits scans data with one matcher and returns every hit.
func allHits(t testing.TB, s *Scanner, data []byte) []Hit {
	var hits []Hit
	if _, err := s.Scan(bytes.NewReader(data), func(h Hit) { hits = append(hits, h) }); err != nil {
		t.Fatal(err)
	}
	return hits
}

// The prefiltered matcher returns exactly the plain matcher's hits: every
// entry against every example line of every entry (ours and the 2,522
// deadends.dev canons), and a generated log with those lines planted.
func TestPrefilterEquivalence(t *testing.T) {
	sets := map[string][]*kb.Entry{"ours": ourEntries(t)}
	if _, err := os.Stat(deadendsDir); err == nil || sharedtest.Required() {
		d := deadEntries(t)
		sets["deadends"] = d
		sets["both"] = append(append([]*kb.Entry(nil), sets["ours"]...), d...)
	}
	for name, es := range sets {
		// The plain matcher tries all 2,695 regexes on every line: keep
		// its corpus small enough for a test.
		size := 2 << 20
		if name != "ours" {
			size = 16 << 10
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fast, _ := New(es)
			lines := examples(es)
			if name == "both" {
				// Every line of both sets was checked above; here the two
				// sets meet on our examples and a few of theirs.
				lines = append(examples(sets["ours"]), examples(sets["deadends"])[:300]...)
			}
			var text bytes.Buffer
			for _, l := range lines {
				text.WriteString(l + "\n")
			}
			text.Write(corpus(size, lines, 1))
			want, _ := reference(fast, text.Bytes(), MaxLine, nil, nil)
			got := allHits(t, fast, text.Bytes())
			if len(want) == 0 {
				t.Fatal("the plain matcher found nothing: the test checks nothing")
			}
			if len(got) != len(want) {
				t.Fatalf("%d hits, plain matcher %d", len(got), len(want))
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.Entry != w.Entry || g.Line != w.Line || g.Offset != w.Offset || g.Len != w.Len || g.Text != w.Text || fmt.Sprint(g.Captures) != fmt.Sprint(w.Captures) {
					t.Fatalf("hit %d: %+v, plain matcher %+v", i, g, w)
				}
			}
			t.Logf("%d entries (%d unfiltered), %d lines of examples, %d hits", len(fast.Entries()), fast.Unfiltered(), len(lines), len(want))
		})
	}
}
