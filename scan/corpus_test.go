package scan

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"testing"

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
		t.Skipf("deadends canons not present: %v", err)
	}
	es, _ := kb.LoadPath(deadendsDir)
	return es
}

// corpus writes a training log of about n bytes: progress bars, warnings,
// NCCL INFO chatter, tracebacks, and every given example line planted at
// seeded random places.
func corpus(n int, planted []string, seed int64) []byte {
	rng := rand.New(rand.NewSource(seed))
	var b bytes.Buffer
	step := 0
	for b.Len() < n {
		switch r := rng.Intn(100); {
		case r < 55:
			fmt.Fprintf(&b, "Epoch %d:  %2d%%|%s| %d/%d [00:%02d<01:%02d, %.2fit/s, loss=%.4f, lr=%.2e]\n",
				step/1000, step%100, bytes.Repeat([]byte("█"), step%10), step%1000, 1000, step%60, (step*7)%60, 3.1+rng.Float64(), rng.Float64(), 3e-4)
		case r < 75:
			fmt.Fprintf(&b, "node-%d:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via P2P/CUMEM/read\n",
				rng.Intn(8), 1000+rng.Intn(9000), 1000+rng.Intn(9000), rng.Intn(8), rng.Intn(32), rng.Intn(8), rng.Intn(8), rng.Intn(8), rng.Intn(8))
		case r < 85:
			fmt.Fprintf(&b, "/usr/lib/python3/site-packages/torch/nn/modules/module.py:%d: UserWarning: The given NumPy array is not writable (step %d)\n", 1000+rng.Intn(900), step)
		case r < 95:
			fmt.Fprintf(&b, "  File \"/home/user/train.py\", line %d, in forward\n    x = self.layer%d(x)\n", rng.Intn(500), rng.Intn(24))
		default:
			if len(planted) > 0 {
				b.WriteString(planted[rng.Intn(len(planted))])
				b.WriteByte('\n')
			} else {
				fmt.Fprintf(&b, "[2026-11-21 10:%02d:%02d] INFO saving checkpoint step %d\n", rng.Intn(60), rng.Intn(60), step)
			}
		}
		step++
	}
	return b.Bytes()
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
	if _, err := os.Stat(deadendsDir); err == nil {
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
			slow := plainScanner(es)
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
			want := allHits(t, slow, text.Bytes())
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
