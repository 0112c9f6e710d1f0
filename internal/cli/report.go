package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/internal/render"
	"github.com/gpudx/gpudx/internal/service"
	"github.com/gpudx/gpudx/internal/store"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/outcome"
)

type reportOpts struct {
	workaround, deadEnd int
	worked, failed      bool
	note, requestID     string
	db, format          string
	kb                  []string
}

func newReportCmd(env *IO) *cobra.Command {
	var o reportOpts
	cmd := &cobra.Command{
		Use:   "report ENTRY_ID [(--workaround N | --dead-end N) (--worked | --failed)]",
		Short: "Say whether a workaround or dead end held, so shown rates learn from it",
		Long: `Record whether one workaround or dead end of an entry held when you tried it.
The rates gpudx shows blend each item's curated rate, counted as 10 reports,
with the reports recorded here: "works 60% → 67% with 2 reports" (both worked).

N is the item's number in its entry: the number gpudx kb show ENTRY_ID and
gpudx report ENTRY_ID print before it, and "item" in JSON output. gpudx
diagnose numbers the items 1, 2, 3 in the order it shows them for this log,
and adds "[item N]" where the entry's number differs. With
no --workaround or --dead-end, gpudx report ENTRY_ID lists the entry's items
with their numbers and current rates.

--worked says the action fixed the error for you; --failed says it did not.
For a workaround --worked raises its rate; for a dead end --failed confirms
it is one, and --worked is evidence against it.

Reports go to a SQLite file in your data directory
($XDG_DATA_HOME/gpudx/outcomes.db, or ~/.local/share/gpudx/outcomes.db),
created on the first report; --db names another file, or a PostgreSQL
database (postgres://...) that several machines share. gpudx diagnose reads
the same database. A --request-id makes a report safe to retry: a report
whose id is already stored is acknowledged and not counted again.

Exit status: 0 when the report is stored (or was already), 2 for an unknown
entry or item, bad flags, or a database that cannot be used.`,
		Example: `  # Which numbers does the entry have, and how do they fare?
  gpudx report pytorch/cuda-out-of-memory

  # Workaround 1 fixed it
  gpudx report pytorch/cuda-out-of-memory --workaround 1 --worked

  # Dead end 2 was indeed a waste of time, with a note
  gpudx report pytorch/cuda-out-of-memory --dead-end 2 --failed --note "torch 2.4, A100"

  # From a CI job that may retry: the same id is counted once
  gpudx report nccl/watchdog-timeout --workaround 1 --worked --request-id "$CI_JOB_ID"

  # A database the team shares
  gpudx report nccl/watchdog-timeout --workaround 4 --failed --db postgres://gpudx@db.internal/gpudx`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.Context(), env, o, args[0], cmd.Flags().Changed)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.workaround, "workaround", 0, "the workaround's number `N` in its entry (gpudx kb show; [item N] in gpudx diagnose), from 1")
	f.IntVar(&o.deadEnd, "dead-end", 0, "the dead end's number `N` in its entry (gpudx kb show; [item N] in gpudx diagnose), from 1")
	f.BoolVar(&o.worked, "worked", false, "it fixed the error")
	f.BoolVar(&o.failed, "failed", false, "it did not fix the error")
	f.StringVar(&o.note, "note", "", "a short `TEXT` kept with the report (versions, hardware, what else you did)")
	f.StringVar(&o.requestID, "request-id", "", "an `ID` that makes the report idempotent: retrying with it counts once")
	f.StringVar(&o.db, "db", "", "outcome database: a SQLite `PATH` or a postgres:// URL (default: outcomes.db in your data directory)")
	f.StringVarP(&o.format, "format", "f", "text", "output format: text or json")
	f.StringArrayVar(&o.kb, "kb", nil, "extra knowledge-base `PATH` (entry file or directory; repeatable; also $GPUDX_KB)")
	return cmd
}

func runReport(ctx context.Context, env *IO, o reportOpts, id string, changed func(string) bool) error {
	if err := checkFormat(o.format, "text", "json"); err != nil {
		return err
	}
	kind, n, err := reportItem(id, o, changed)
	if err != nil {
		return err
	}
	svc, err := newService(env, o.kb, nil)
	if err != nil {
		return err
	}
	e := svc.Entry(id)
	if e == nil {
		return unknownEntry(svc, id)
	}
	if kind != "" {
		if err := checkItem(e, kind, n); err != nil {
			return err
		}
	}
	r := outcome.Report{RequestID: o.requestID, EntryID: e.ID, Kind: kind, Index: n - 1, Worked: o.worked, Note: o.note}
	if kind != "" {
		if err := r.Validate(); err != nil {
			return usageErr("%v", err)
		}
	}
	// The database is opened only now, so that a mistyped entry or number
	// creates nothing, and a listing never creates it.
	var st outcome.Store
	if kind == "" {
		if st, err = openOutcomes(ctx, env, o.db, false); err != nil {
			return usageErr("--db: %v", err)
		}
	} else if st, err = openStore(ctx, env, o.db); err != nil {
		return err
	}
	if st != nil {
		defer st.Close()
	}
	svc, _ = service.New(svc.Base(), st) // warnings were printed above
	if kind == "" {
		return listItems(ctx, env, svc, e, st, o)
	}
	dup, err := svc.Record(ctx, r)
	var inv *service.InvalidError
	switch {
	case errors.As(err, &inv):
		return usageErr("%v", err)
	case errors.Is(err, outcome.ErrConflict):
		return usageErr("%v: give this report a new --request-id", err)
	case err != nil:
		return usageErr("--db: %v", err)
	}
	rates, err := svc.Rates(ctx, e.ID)
	if err != nil {
		return usageErr("--db: %v", err)
	}
	item := itemOf(e, kind, n-1, rates)
	if o.format == "json" {
		return writeJSON(env, struct {
			Duplicate bool           `json:"duplicate"`
			Database  string         `json:"database"`
			Report    outcome.Report `json:"report"`
			Item      reportItemJSON `json:"item"`
		}{dup, dbName(st, o.db, env), r, item})
	}
	var b strings.Builder
	res := "failed"
	if r.Worked {
		res = "worked"
	}
	if dup {
		fmt.Fprintf(&b, "Already recorded (request id %s): counted once.\n", r.RequestID)
	} else {
		fmt.Fprintf(&b, "Recorded: %s %s %d %s.\n", e.ID, kindWord(kind), n, res)
	}
	mine := &r
	if dup {
		mine = nil
	}
	fmt.Fprintf(&b, "  %s\n     %s\n", itemHead(item), rateLine(item, mine))
	fmt.Fprintf(&b, "Database: %s\n", dbName(st, o.db, env))
	_, err = env.Out.Write([]byte(b.String()))
	return err
}

// reportItem reads which item the flags name: kind "" for none (a
// listing), else the kind and its number counted from 1.
func reportItem(id string, o reportOpts, changed func(string) bool) (outcome.Kind, int, error) {
	w, d := changed("workaround"), changed("dead-end")
	switch {
	case w && d:
		return "", 0, usageErr("give --workaround N or --dead-end N, not both")
	case !w && !d:
		for _, f := range []string{"worked", "failed", "note", "request-id"} {
			if changed(f) {
				return "", 0, usageErr("--%s needs the item it is about: --workaround N or --dead-end N\nRun 'gpudx report %s' to see the numbers.", f, id)
			}
		}
		return "", 0, nil
	case o.worked == o.failed:
		if o.worked {
			return "", 0, usageErr("give --worked or --failed, not both")
		}
		return "", 0, usageErr("say whether it fixed the error: --worked or --failed")
	}
	kind, n, flag := outcome.Workaround, o.workaround, "--workaround"
	if d {
		kind, n, flag = outcome.DeadEnd, o.deadEnd, "--dead-end"
	}
	if n < 1 {
		return "", 0, usageErr("%s %d: items are numbered from 1", flag, n)
	}
	return kind, n, nil
}

// unknownEntry is the usage error for an id the knowledge base lacks,
// naming the entries the id looks most like.
func unknownEntry(svc *service.Service, id string) error {
	var near []string
	for _, r := range svc.Search(id, 5) {
		near = append(near, r.Entry.ID)
	}
	if len(near) == 0 {
		return usageErr("no entry %q (gpudx kb list shows them all)", id)
	}
	return usageErr("no entry %q; the closest are:\n  %s\n(gpudx kb search finds others)", id, strings.Join(near, "\n  "))
}

// checkItem is the usage error for a number the entry does not have,
// listing the ones it has.
func checkItem(e *kb.Entry, kind outcome.Kind, n int) error {
	dead, work := diagnose.Items(e)
	var names []string
	for _, x := range dead {
		names = append(names, x.Action)
	}
	flag, what := "--dead-end", "dead end"
	if kind == outcome.Workaround {
		names = names[:0]
		for _, x := range work {
			names = append(names, x.Action)
		}
		flag, what = "--workaround", "workaround"
	}
	if n <= len(names) {
		return nil
	}
	if len(names) == 0 {
		return usageErr("%s %d: %s has no %ss", flag, n, e.ID, what)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d: %s has %s:", flag, n, e.ID, plural(len(names), what))
	for i, s := range names {
		fmt.Fprintf(&b, "\n  %d. %s", i+1, s)
	}
	return usageErr("%s", b.String())
}

// reportItemJSON is one item of an entry with its number and rate.
type reportItemJSON struct {
	Number int          `json:"number"` // Index+1, as the text output shows it
	Index  int          `json:"index"`
	Kind   outcome.Kind `json:"kind"`
	Action string       `json:"action"`
	Rate   outcome.Rate `json:"rate"`
	// Basis is what the curated rate rests on; Check marks a diagnostic
	// step, which has no rate (Basis is then empty).
	Basis kb.Basis `json:"basis,omitempty"`
	Check bool     `json:"check,omitempty"`
}

func itemOf(e *kb.Entry, kind outcome.Kind, i int, rates *service.Rates) reportItemJSON {
	if kind == outcome.DeadEnd {
		return reportItemJSON{i + 1, i, kind, e.DeadEnds[i].Action, rates.DeadEnds[i], e.DeadEnds[i].Rate().Basis, false}
	}
	w := e.Workarounds[i]
	return reportItemJSON{i + 1, i, kind, w.Action, rates.Workarounds[i], w.Rate().Basis, w.IsCheck()}
}

func itemHead(it reportItemJSON) string {
	if it.Kind == outcome.DeadEnd {
		return fmt.Sprintf("✗ %d. %s", it.Number, it.Action)
	}
	return fmt.Sprintf("%d. %s", it.Number, it.Action)
}

// rateLine says how an item fares: its curated rate, then the blended one
// and the reports behind it. With mine, the first figure is the rate
// before that report.
func rateLine(it reportItemJSON, mine *outcome.Report) string {
	kind, r := it.Kind, it.Rate
	if it.Check {
		return fmt.Sprintf("a check (%s): it finds out what is wrong and has no success rate; %s", kb.CheckLabel("en"), plural(r.Reports, "report"))
	}
	verb := "works"
	if kind == outcome.DeadEnd {
		verb = "fails"
	}
	curated := kb.Rate{Value: r.Curated, Basis: it.Basis}
	if r.Reports == 0 {
		return fmt.Sprintf("%s %s; no reports yet", verb, curated.Label("en"))
	}
	from, with, before := r.Curated, "", 0
	if mine != nil {
		t := outcome.Tally{Worked: r.Worked, Failed: r.Failed}
		if mine.Worked {
			t.Worked--
		} else {
			t.Failed--
		}
		from, with, before = outcome.Blend(kind, r.Curated, t).Blended, " with your report", t.N()
	}
	return fmt.Sprintf("%s %s → %s%s; %d worked, %d failed; curated rate counts as %d reports",
		verb, curated.WithReports(from, before).Label("en"), curated.WithReports(r.Blended, r.Reports).Label("en"), with, r.Worked, r.Failed, r.PriorWeight)
}

// listItems writes an entry's items with their numbers and rates.
func listItems(ctx context.Context, env *IO, svc *service.Service, e *kb.Entry, st outcome.Store, o reportOpts) error {
	rates, err := svc.Rates(ctx, e.ID)
	if err != nil {
		return usageErr("--db: %v", err)
	}
	var dead, work []reportItemJSON
	for i := range e.DeadEnds {
		dead = append(dead, itemOf(e, outcome.DeadEnd, i, rates))
	}
	for i := range e.Workarounds {
		work = append(work, itemOf(e, outcome.Workaround, i, rates))
	}
	if o.format == "json" {
		return writeJSON(env, struct {
			EntryID     string           `json:"entry_id"`
			Database    string           `json:"database"`
			PriorWeight int              `json:"prior_weight"`
			DeadEnds    []reportItemJSON `json:"dead_ends"`
			Workarounds []reportItemJSON `json:"workarounds"`
		}{e.ID, dbName(st, o.db, env), outcome.PriorWeight, nonNilItems(dead), nonNilItems(work)})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n  %s\n", e.ID, e.Signature)
	for _, g := range []struct {
		head  string
		items []reportItemJSON
	}{{"Don't waste time on (--dead-end N)", dead}, {"Do now (--workaround N)", work}} {
		if len(g.items) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n  %s\n", g.head)
		for _, it := range g.items {
			fmt.Fprintf(&b, "    %s\n       %s\n", itemHead(it), rateLine(it, nil))
		}
	}
	fmt.Fprintf(&b, "\nDatabase: %s\n", dbName(st, o.db, env))
	fmt.Fprintf(&b, "Report what happened, for example:\n  gpudx report %s --workaround 1 --worked\n", e.ID)
	if len(dead) > 0 {
		fmt.Fprintf(&b, "  gpudx report %s --dead-end 1 --failed\n", e.ID)
	}
	_, err = env.Out.Write([]byte(b.String()))
	return err
}

func nonNilItems(s []reportItemJSON) []reportItemJSON {
	if s == nil {
		return []reportItemJSON{}
	}
	return s
}

func kindWord(k outcome.Kind) string {
	if k == outcome.DeadEnd {
		return "dead end"
	}
	return "workaround"
}

func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// dbName names the database in output: its path or its URL without the
// password, or the file the first report will create.
func dbName(st outcome.Store, db string, env *IO) string {
	if s, ok := st.(fmt.Stringer); ok && st != nil {
		return s.String()
	}
	if db == "" {
		db, _ = store.DefaultPath(env.Getenv)
	}
	return db + " (no reports yet)"
}

func writeJSON(env *IO, v any) error { return render.WriteJSON(env.Out, v) }

// openOutcomes opens the outcome database for reading, creating nothing:
// db as given to --db, else the default file. It returns nil, nil when
// there is no database yet, unless db names one and mustExist is set.
func openOutcomes(ctx context.Context, env *IO, db string, mustExist bool) (outcome.Store, error) {
	if db == "" {
		if _, err := store.DefaultPath(env.Getenv); err != nil {
			return nil, nil // no home: no default file either
		}
	}
	st, err := store.OpenExisting(ctx, db, env.Getenv)
	switch {
	case errors.Is(err, fs.ErrNotExist) && (db == "" || !mustExist):
		return nil, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("no outcome database at %s yet (gpudx report creates it)", db)
	}
	return st, err
}

// diagnoseOutcomes opens the database gpudx diagnose --db names, or the
// default one when it exists, and returns what adds its outcomes to a
// report, and what closes it. A broken default database costs a warning,
// not the diagnosis; a broken --db is an error.
func diagnoseOutcomes(env *IO, db string) (add func(*diagnose.Report) error, closeFn func(), err error) {
	ctx := context.Background()
	warn := func(err error) { fmt.Fprintf(env.Err, "gpudx: warning: rates without reported outcomes: %v\n", err) }
	none := func(*diagnose.Report) error { return nil }
	st, err := openOutcomes(ctx, env, db, true)
	switch {
	case err != nil && db != "":
		return nil, nil, usageErr("--db: %v", err)
	case err != nil:
		warn(err)
		return none, func() {}, nil
	case st == nil:
		return none, func() {}, nil
	}
	add = func(rep *diagnose.Report) error {
		if err := diagnose.AddOutcomes(ctx, st, rep); err != nil {
			if db != "" {
				return usageErr("--db: %v", err)
			}
			warn(err)
		}
		return nil
	}
	return add, func() { st.Close() }, nil
}
