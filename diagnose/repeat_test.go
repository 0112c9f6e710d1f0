package diagnose

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/internal/loggen"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
	"github.com/gpudx/gpudx/scan"
)

// shifted shows a collector one line scanned on its own, numbered and
// placed where it stands in its input.
type shifted struct {
	c     *Collector
	line  int
	bytes int64
}

func (s shifted) Line(n int, text []byte) bool { return s.c.Line(n+s.line, text) }
func (s shifted) Hit(h scan.Hit) {
	h.Line += s.line
	h.Offset += s.bytes
	s.c.Hit(h)
}

// plainReport is the report of the path without any of the shortcuts for
// repeats: every line is scanned on its own (no worker remembers an
// earlier one), shown to the collector with Line whatever the Gate says,
// and the collector reads every line's rank with the regex and its
// timestamp whether or not it keeps them.
func plainReport(t *testing.T, s *scan.Scanner, inputs map[string][]byte, names []string) string {
	t.Helper()
	p := s.Plan(scan.Gate{All: true})
	c := NewCollector(s.Entries())
	c.plain = true
	for _, name := range names {
		if len(names) > 1 {
			c.File(name)
		}
		var off int64
		data := inputs[name]
		for n := 0; len(data) > 0; n++ {
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line = data[:i+1]
			}
			st, err := p.Visit(bytes.NewReader(line), shifted{c, n, off})
			if err != nil {
				t.Fatal(err)
			}
			c.AddStats(st)
			off += int64(len(line))
			data = data[len(line):]
		}
	}
	j, err := json.Marshal(c.Report())
	if err != nil {
		t.Fatal(err)
	}
	return string(j)
}

// repeatsInput is a log of many repeats of many entries' lines, their
// figures changed from one to the next (loggen.Vary), from several ranks
// and with timestamps, between training-log chatter and the bench's
// repeated inputs (the barrier warning, out-of-memory messages from 8
// ranks, an NCCL timeout from 1,000 ranks).
func repeatsInput(rng *rand.Rand, lines []string, repeats, n int) []byte {
	var all []string
	for _, l := range lines {
		for range repeats {
			l := loggen.Vary(rng, l)
			switch rng.Intn(3) {
			case 0:
				l = fmt.Sprintf("[rank%d]:[E1121 10:%02d:%02d.%06d] %s", rng.Intn(16), rng.Intn(60), rng.Intn(60), rng.Intn(1e6), l)
			case 1:
				l = fmt.Sprintf("2026-11-21 10:%02d:%02d,%03d %s", rng.Intn(60), rng.Intn(60), rng.Intn(1000), l)
			}
			all = append(all, l)
		}
	}
	for i := range n {
		all = append(all, strings.TrimSuffix(loggen.BarrierWarning(i), "\n"), strings.TrimSuffix(loggen.OOMRepeat(i), "\n"))
		all = append(all, strings.Split(strings.TrimSuffix(loggen.NCCLTimeout(rng.Intn(1000), 1000), "\n"), "\n")...)
	}
	all = append(all, strings.Split(string(loggen.Bytes(int64(len(all))*30, nil, 0, rng.Int63())), "\n")...)
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return []byte(strings.Join(all, "\n") + "\n")
}

// On logs of repeats the report is exactly the plain path's: counts,
// first and last lines, files, ranks, evidence, facts, memory figures and
// the rank summary, for one input and for several (per-rank files).
func TestRepeatsMatchPlain(t *testing.T) {
	es, err := kb.LoadFS(knowledge.FS, ".", "knowledge/")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := scan.New(es)
	// The entries' own examples, and a few with every entry's first
	// example, so that entries compete on some lines.
	var lines []string
	for _, e := range es {
		lines = append(lines, e.Examples.Match...)
	}
	rng := rand.New(rand.NewSource(21))
	one := repeatsInput(rng, lines, 3, 300)
	inputs := map[string][]byte{"repeats.log": one}
	names := []string{"logs/rank0.log", "logs/rank1.log", "logs/rank2.log"}
	for _, name := range names {
		inputs[name] = repeatsInput(rng, lines[:len(lines)/3], 2, 100)
	}
	for _, set := range [][]string{{"repeats.log"}, names} {
		gated := reportJSON(t, s, Plan(s), inputs, set)
		plain := plainReport(t, s, inputs, set)
		if gated != plain {
			t.Fatalf("%v: the report differs from the plain path's: %s", set, diffAt(gated, plain))
		}
		var rep Report
		if err := json.Unmarshal([]byte(plain), &rep); err != nil {
			t.Fatal(err)
		}
		repeated, ranked := 0, 0
		for _, d := range rep.Diagnoses {
			if d.Count > 10 {
				repeated++
			}
			if len(d.Ranks) > 1 {
				ranked++
			}
		}
		if repeated < 50 || ranked < 20 || rep.Ranks == nil {
			t.Fatalf("%v: %d diagnoses, %d seen more than 10 times, %d on several ranks: the test checks little", set, len(rep.Diagnoses), repeated, ranked)
		}
		t.Logf("%v: %d diagnoses, %d seen more than 10 times, %d on several ranks", set, len(rep.Diagnoses), repeated, ranked)
	}
}
