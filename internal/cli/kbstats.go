package cli

import (
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpudx/gpudx/internal/render"
	"github.com/gpudx/gpudx/kb"
)

func newKBStatsCmd(env *IO, load func() (*kb.Base, error)) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Count entries by domain, family, category and tier, their completeness and checks",
		Long: `Count the knowledge base's entries by domain, family, category and
verification tier, and say how complete they are: the share with complete
Chinese text, with examples (two real forms and a near miss), with a source
on every dead end and workaround, with named facts and with transition-graph
edges; how many have been checked by a second reader (the entry's "checked"
record), by family and method; and what the rates rest on (estimate,
reports, reproduced) and how many workarounds are checks. The registry of
names is counted by kind.

Families split the cuda domain by library, named first in the slug:
cuda-runtime, cublas, cudnn and cuda-math (cufft, cusolver, cusparse,
curand); other domains are their own family. Entries added with --kb are
counted too.`,
		Example: "  gpudx kb stats\n  gpudx kb stats --format json | jq .by_family",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			base, err := load()
			if err != nil {
				return err
			}
			reg, err := loadRegistry()
			if err != nil {
				return err
			}
			s := kb.ComputeStats(base.Entries(), reg)
			if format == "json" {
				return render.WriteJSON(env.Out, s)
			}
			return writeStats(env, s)
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output format: text or json")
	return cmd
}

func writeStats(env *IO, s kb.Stats) error {
	tw := tabwriter.NewWriter(env.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "entries\t%d\t(%d dead ends, %d workarounds)\n", s.Entries, s.DeadEnds, s.Workarounds)
	for _, g := range []struct {
		name string
		m    map[string]int
	}{{"by domain", s.ByDomain}, {"by family", s.ByFamily}, {"by category", s.ByCategory}, {"by tier", s.ByTier}} {
		fmt.Fprintf(tw, "\n%s\t\t\n", g.name)
		for _, k := range byCount(g.m) {
			fmt.Fprintf(tw, "  %s\t%d\t\n", k, g.m[k])
		}
	}
	fmt.Fprintf(tw, "\ncompleteness\t\t\n")
	for _, q := range []struct {
		name string
		sh   kb.Share
	}{{"complete Chinese text", s.CompleteZh}, {"examples (2 forms + near miss)", s.WithExamples},
		{"a source on every item", s.SourcedItems}, {"named facts", s.WithFacts}, {"transition-graph edges", s.WithGraphEdges}} {
		fmt.Fprintf(tw, "  %s\t%d\t%.1f%%\n", q.name, q.sh.Count, 100*q.sh.Share)
	}
	fmt.Fprintf(tw, "\nchecked by a second reader\t%d\t%.1f%%\n", s.Checked.Count, 100*s.Checked.Share)
	for _, f := range byCount(s.ByFamily) {
		fmt.Fprintf(tw, "  %s\t%d\tof %d\n", f, s.CheckedByFamily[f], s.ByFamily[f])
	}
	for _, m := range byCount(s.ByCheckMethod) {
		fmt.Fprintf(tw, "  method %s\t%d\t\n", m, s.ByCheckMethod[m])
	}
	fmt.Fprintf(tw, "\nrates by basis\t\t\n")
	for _, b := range byCount(s.RateBases) {
		name := b
		if name == "" {
			name = "(none)"
		}
		fmt.Fprintf(tw, "  %s\t%d\t\n", name, s.RateBases[b])
	}
	fmt.Fprintf(tw, "  checks (no rate)\t%d\t\n", s.Checks)
	fmt.Fprintf(tw, "\nregexes tried on every line\t%d\t(no literal every match must contain)\n", s.Unfiltered)
	if s.Registry != nil {
		fmt.Fprintf(tw, "\nregistry names\t%d\t\n", s.Registry.Names)
		for _, k := range byCount(s.Registry.ByKind) {
			fmt.Fprintf(tw, "  %s\t%d\t\n", k, s.Registry.ByKind[k])
		}
	}
	return tw.Flush()
}

// byCount returns m's keys, largest count first, then by name.
func byCount(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
