package cli

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpudx/gpudx/internal/kbmigrate"
)

func newKBMigrateCmd(env *IO) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "migrate [DIR]",
		Short: "Bring entry files to the current format (rate bases, checks)",
		Long: `Rewrite the entry files below DIR (default: knowledge) in place to the
current format, changing nothing else in them (key order and layout stay):

  - a fail_rate, success_rate or fix_success_rate without a basis gets
    "rate_basis": "estimate" (fix_success_rate_basis for the entry's),
    which is what every rate written before bases existed is;
  - the workarounds of the built-in entries that are diagnostic steps
    (listed in internal/kbmigrate/checks.go, by entry id and action text)
    become checks: "kind": "check" in place of their success_rate.

Running it again changes nothing. A listed diagnostic step whose entry or
action text is no longer found is reported, so that an entry reworded since
can be marked by hand. deadends.dev canons are left alone.`,
		Example: "  gpudx kb migrate\n  gpudx kb migrate --dry-run ~/my-entries",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "knowledge"
			if len(args) == 1 {
				dir = args[0]
			}
			return runMigrate(env, dir, dryRun)
		},
	}
	cmd.Flags().BoolVarP(&dryRun, "dry-run", "n", false, "say what would change, write nothing")
	return cmd
}

func runMigrate(env *IO, dir string, dryRun bool) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if err == nil {
			err = fmt.Errorf("not a directory")
		}
		return usageErr("%s: %v", dir, unwrapPath(err))
	}
	var files, bases, checks, skipped int
	seen := map[string][]string{} // id -> check actions present afterwards
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(p) != ".json" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out, res, err := kbmigrate.Migrate(data, kbmigrate.DiagnosticSteps)
		if err != nil {
			// Reported; the other files are still migrated.
			fmt.Fprintf(env.Err, "gpudx kb migrate: skipped %s: %v\n", p, err)
			skipped++
			return nil
		}
		files++
		if res.ID != "" {
			seen[res.ID] = res.CheckActions
		}
		if !res.Changed() || bytes.Equal(out, data) {
			return nil
		}
		bases += res.Bases
		checks += len(res.Checks)
		for _, i := range res.Checks {
			fmt.Fprintf(env.Out, "%s: workarounds[%d]: now a check\n", p, i)
		}
		if dryRun {
			return nil
		}
		return os.WriteFile(p, out, 0o644)
	})
	if err != nil {
		return usageErr("%v", err)
	}
	// Listed steps not found: only for the entries this tree holds, so a
	// directory of one's own entries reports nothing.
	var missing []string
	for id, actions := range kbmigrate.DiagnosticSteps {
		got, ok := seen[id]
		if !ok {
			continue
		}
		for _, a := range actions {
			if !slices.Contains(got, a) {
				missing = append(missing, fmt.Sprintf("%s: %q", id, a))
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		fmt.Fprintf(env.Err, "gpudx kb migrate: diagnostic step not found (reworded? mark it by hand): %s\n", m)
	}
	verb := "changed"
	if dryRun {
		verb = "would change"
	}
	fmt.Fprintf(env.Err, "gpudx kb migrate: %d file(s) read; %s: %d rate basis(es) added, %d workaround(s) made checks\n", files, verb, bases, checks)
	if skipped > 0 {
		return &exitError{ExitFound, fmt.Errorf("%d file(s) skipped: not valid JSON objects", skipped)}
	}
	return nil
}
