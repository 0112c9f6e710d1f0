package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpudx/gpudx/internal/render"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
)

func newKBCmd(env *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kb",
		Short: "Browse, search, check, start and convert knowledge-base entries",
		Long: `The knowledge base is a set of JSON entries, one per known error, built into
gpudx. These commands list, show and search it, check entries for defects
(kb lint), start a new entry (kb new), bring entry files to the current
format (kb migrate) and convert third-party entries to gpudx's format
(kb convert).`,
		Example: `  gpudx kb list --domain nccl
  gpudx kb show cuda/illegal-memory-access
  gpudx kb search "misaligned address"
  gpudx kb stats
  gpudx kb new cuda/cufft-exec-failed
  gpudx kb lint my-entries/`,
	}
	var kbFlag []string
	cmd.PersistentFlags().StringArrayVar(&kbFlag, "kb", nil, "extra knowledge-base `PATH` (entry file or directory; repeatable; also $GPUDX_KB)")
	load := func() (*kb.Base, error) { return loadBase(kbPaths(kbFlag, env), env) }
	cmd.AddCommand(newKBListCmd(env, load), newKBShowCmd(env, load), newKBSearchCmd(env, load),
		newKBStatsCmd(env, load), newKBLintCmd(env), newKBConvertCmd(env),
		newKBNewCmd(env), newKBMigrateCmd(env))
	return cmd
}

type summary struct {
	ID         string  `json:"id"`
	Domain     string  `json:"domain"`
	Category   string  `json:"category"`
	ErrorCode  string  `json:"error_code"`
	Signature  string  `json:"signature"`
	Tier       string  `json:"verification_tier"`
	Score      int     `json:"score,omitempty"`
	Origin     string  `json:"origin"`
	Confidence float64 `json:"confidence"`
}

func summaries(rs []kb.Result) []summary {
	out := make([]summary, len(rs))
	for i, r := range rs {
		e := r.Entry
		out[i] = summary{e.ID, e.Domain, e.Category, e.ErrorCode, e.Signature, e.VerificationTier, r.Score, e.Origin, e.Confidence}
	}
	return out
}

func writeSummaries(env *IO, format string, rows []summary) error {
	if format == "json" {
		if rows == nil {
			rows = []summary{}
		}
		return render.WriteJSON(env.Out, rows)
	}
	tw := tabwriter.NewWriter(env.Out, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		sig := r.Signature
		if len(sig) > 90 {
			sig = sig[:87] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.ID, r.ErrorCode, sig)
	}
	return tw.Flush()
}

func newKBListCmd(env *IO, load func() (*kb.Base, error)) *cobra.Command {
	var domain, category, format string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List entries (id, error code, signature)",
		Example: "  gpudx kb list\n  gpudx kb list --domain cuda --format json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			base, err := load()
			if err != nil {
				return err
			}
			var rs []kb.Result
			for _, e := range base.Entries() {
				if (domain == "" || e.Domain == domain) && (category == "" || e.Category == category) {
					rs = append(rs, kb.Result{Entry: e})
				}
			}
			return writeSummaries(env, format, summaries(rs))
		},
	}
	cmd.Flags().StringVar(&domain, "domain", "", "only entries of this domain (cuda, nccl, pytorch, driver, ...)")
	cmd.Flags().StringVar(&category, "category", "", "only entries of this category (resource_error, ...)")
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output format: text or json")
	return cmd
}

func newKBShowCmd(env *IO, load func() (*kb.Base, error)) *cobra.Command {
	var format, lang, color string
	var width int
	cmd := &cobra.Command{
		Use:     "show ID",
		Short:   "Show one entry in full",
		Example: "  gpudx kb show cuda/illegal-memory-access\n  gpudx kb show nccl/watchdog-timeout --format json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			if err := checkLang(lang); err != nil {
				return err
			}
			c, err := colorFor(color, env.Out, env)
			if err != nil {
				return err
			}
			base, err := load()
			if err != nil {
				return err
			}
			e := base.Get(args[0])
			if e == nil {
				msg := fmt.Sprintf("no entry %q", args[0])
				if rs := kb.Search(base, args[0], 3); len(rs) > 0 {
					var ids []string
					for _, r := range rs {
						ids = append(ids, r.Entry.ID)
					}
					msg += "; did you mean " + strings.Join(ids, ", ") + "?"
				}
				return &exitError{ExitFound, errors.New(msg)}
			}
			if format == "json" {
				return render.WriteJSON(env.Out, e)
			}
			return render.EntryText(env.Out, e, render.Options{Lang: lang, Color: c, Width: textWidth(env, width)})
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output format: text or json")
	cmd.Flags().StringVar(&lang, "lang", "en", "language: en or zh")
	cmd.Flags().StringVar(&color, "color", "auto", "colour: auto, always or never")
	cmd.Flags().IntVar(&width, "width", -1, "wrap text to `N` columns (the regex, sources and commands are cut, not wrapped); 0 leaves lines whole; default: the terminal's width, or 100")
	return cmd
}

func newKBSearchCmd(env *IO, load func() (*kb.Base, error)) *cobra.Command {
	var format string
	var limit int
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Search entries by error name, words or a pasted message",
		Long: `Search ranks entries for a query: an error code or enum name, an entry id,
a few words, or a whole message line (an entry whose regex matches the line
comes first). Exit status 1 when nothing matches.`,
		Example: `  gpudx kb search CUBLAS_STATUS_ALLOC_FAILED
  gpudx kb search "GPU has fallen off the bus"
  gpudx kb search nccl timeout --format json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			base, err := load()
			if err != nil {
				return err
			}
			rs := kb.Search(base, strings.Join(args, " "), limit)
			if err := writeSummaries(env, format, summaries(rs)); err != nil {
				return err
			}
			if len(rs) == 0 {
				if format != "json" {
					fmt.Fprintln(env.Err, "gpudx: no entry matches")
				}
				return silentExit(ExitFound)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output format: text or json")
	cmd.Flags().IntVarP(&limit, "limit", "n", 10, "at most this many results (0 for all)")
	return cmd
}

func newKBLintCmd(env *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lint [PATH...]",
		Short: "Check entries for defects",
		Long: `Check knowledge-base entries and print one line per problem as
"path: field: what is wrong". With no PATH, the built-in entries are checked;
a PATH is an entry file (any extension) or a directory of *.json entries.
deadends.dev canons are recognised and checked for what applies to them
(valid RE2, regex matching its own signature, rates in range).

Rules: required fields and JSON types; enums (domain, category,
root_cause_type, verification_tier, resolvable, versions status); rates in
[0,1]; every rate with its basis (rate_basis: estimate, reports with
rate_reports, or reproduced; fix_success_rate_basis for the entry's); a
workaround of kind "check" (a diagnostic step) without a success rate, and
every other one with one; the "checked" record with a date not in the future,
a reader and a method (sources-reread, reproduced); YYYY-MM-DD dates; id
equal to <domain>/<slug> of the file's path; the regex compiles as RE2; every examples.match matches and no examples.no_match
does; transition-graph ids exist (here or built in); Chinese text for every
dead end and workaround, in lists as long as the English ones or inline (zh
on the item), not both; no empty action or how; sources on every dead end and
workaround; no regex matching another entry's examples unless one names
the other in frequently_confused_with; and the names rule: every UPPER_CASE
name (NCCL_DEBUG, CUBLAS_STATUS_NOT_SUPPORTED), allocator setting
(expandable_segments:True) and torch./jax./tf. name in an entry's prose must
be recorded in the registry (knowledge/_registry/*.json, plus a _registry/
directory inside a PATH given) with its kind, component, versions and an
official source, unless the entry's own message shows it. A name recorded as
"nonexistent" may appear only in a dead end. Registry records are checked too.

Exit status 1 when any problem is found.`,
		Example: `  gpudx kb lint
  gpudx kb lint knowledge/cuda/illegal-memory-access.json
  gpudx kb lint ~/my-entries/`,
		RunE: func(cmd *cobra.Command, args []string) error { return runLint(env, args) },
	}
	return cmd
}

// lintFiles gathers the files a lint covers: the built-in ones, or those
// at the given paths. A path that cannot be read is a usage error.
func lintFiles(args []string) ([]kb.File, error) {
	if len(args) == 0 {
		files, err := kb.ReadFS(knowledge.FS, ".", "knowledge/")
		var list kb.ErrorList
		if errors.As(err, &list) {
			return nil, &exitError{ExitInternal, errors.Join(list...)}
		}
		return files, nil
	}
	var files []kb.File
	for _, a := range args {
		got, err := kb.ReadPath(a)
		var list kb.ErrorList
		if errors.As(err, &list) {
			return nil, usageErr("%v", errors.Join(list...))
		}
		files = append(files, got...)
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

func runLint(env *IO, args []string) error {
	files, err := lintFiles(args)
	if err != nil {
		return err
	}
	reg, err := loadRegistry()
	if err != nil {
		return err
	}
	l := &kb.Linter{Registry: reg}
	if len(args) > 0 {
		// Entries given by hand may refer to, and overlap with, the
		// built-in ones, and name what the built-in registry or their
		// own tree's registry holds. Only their own registry's
		// problems are reported.
		if l.Known, err = loadEmbedded(); err != nil {
			return err
		}
		own := &kb.Registry{}
		for _, a := range args {
			if st, err := os.Stat(a); err == nil && st.IsDir() {
				r, err := kb.ReadRegistryFS(os.DirFS(a), ".", a+"/")
				if err != nil {
					return usageErr("%v", err)
				}
				own = own.Union(r)
			}
		}
		reg.Problems = nil
		l.Registry = own.Union(reg)
	}
	probs := l.Lint(files)
	for _, p := range probs {
		fmt.Fprintln(env.Out, p)
	}
	bad := map[string]bool{}
	warnings := 0
	for _, p := range probs {
		if p.Warning {
			warnings++
			continue
		}
		bad[p.Path] = true
	}
	warned := ""
	if warnings > 0 {
		warned = fmt.Sprintf(", %d warning(s)", warnings)
	}
	if n := len(probs) - warnings; n > 0 {
		fmt.Fprintf(env.Err, "gpudx kb lint: %d problem(s) in %d of %d file(s)%s\n", n, len(bad), len(files), warned)
		return silentExit(ExitFound)
	}
	fmt.Fprintf(env.Err, "gpudx kb lint: %d file(s), no problems%s\n", len(files), warned)
	return nil
}

func newKBConvertCmd(env *IO) *cobra.Command {
	var from, out string
	cmd := &cobra.Command{
		Use:   "convert --from deadends SRC --out DIR",
		Short: "Convert third-party entries to gpudx's format",
		Long: `Convert deadends.dev canons (a file or a directory of them) into gpudx
entries written as DIR/<domain>/<slug>.json. A canon id domain/slug/env
becomes domain/slug.env. Canons whose regex is not valid RE2 are reported
and skipped. The result can be used with --kb DIR; it is not verified
knowledge: its entries keep verification_tier ai_generated.`,
		Example: "  gpudx kb convert --from deadends ../deadends/data/canons --out converted/\n  gpudx diagnose --kb converted/ train.log",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from != "deadends" {
				return usageErr("--from: only \"deadends\" is supported, got %q", from)
			}
			if out == "" {
				return usageErr("--out DIR is required")
			}
			return runConvert(env, args[0], out)
		},
	}
	cmd.Flags().StringVar(&from, "from", "deadends", "source format: deadends")
	cmd.Flags().StringVar(&out, "out", "", "output `DIR`")
	return cmd
}

func runConvert(env *IO, src, out string) error {
	if _, err := os.Stat(src); err != nil {
		return usageErr("%s: %v", src, unwrapPath(err))
	}
	entries, err := kb.LoadPath(src)
	var errs kb.ErrorList
	errors.As(err, &errs)
	for _, err := range errs {
		fmt.Fprintf(env.Err, "gpudx: skipped %v\n", err)
	}
	written, skipped := 0, len(errs)
	seen := map[string]string{}
	for _, e := range entries {
		if e.Format != kb.FormatDeadends {
			fmt.Fprintf(env.Err, "gpudx: skipped %s: not a deadends canon\n", e.Origin)
			skipped++
			continue
		}
		if err := kb.CheckRegex(e.Regex); err != nil {
			fmt.Fprintf(env.Err, "gpudx: skipped %s (%s): regex is not valid RE2: %v\n", e.ID, e.Origin, err)
			skipped++
			continue
		}
		if prev, dup := seen[e.ID]; dup {
			fmt.Fprintf(env.Err, "gpudx: skipped %s: id %s already written from %s\n", e.Origin, e.ID, prev)
			skipped++
			continue
		}
		seen[e.ID] = e.Origin
		dst := filepath.Join(out, filepath.FromSlash(e.ID)+".json")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return usageErr("%v", err)
		}
		data, err := json.MarshalIndent(e, "", "  ")
		if err != nil {
			return &exitError{ExitInternal, err}
		}
		if err := os.WriteFile(dst, append(data, '\n'), 0o644); err != nil {
			return usageErr("%v", err)
		}
		written++
	}
	fmt.Fprintf(env.Err, "gpudx kb convert: wrote %d entries to %s, skipped %d\n", written, out, skipped)
	if written == 0 {
		return silentExit(ExitFound)
	}
	return nil
}
