package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/internal/render"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/scan"
)

type diagnoseOpts struct {
	format, lang, color string
	kb, envFiles        []string
	binary, exitCode    bool
	together            bool
	explain, liveEnv    bool
	db                  string
	width               int
	all                 bool
}

func newDiagnoseCmd(env *IO) *cobra.Command {
	var o diagnoseOpts
	cmd := &cobra.Command{
		Use:   "diagnose [FILE | DIR | -]...",
		Short: "Find known GPU errors in logs and say what to do",
		Long: `Scan logs for known GPU errors and report them root cause first: what went
wrong, what not to waste time on (with how often it fails), and what to do
now (with how often it works and the exact command or setting).

Inputs are files, directories (every file below them) or - for standard
input; with no argument, standard input is read when it is not a terminal.
Gzip-compressed logs are read as they are. Several inputs (one per rank or
node) give one report, each diagnosis naming the files it was seen in.

The diagnosis reasons over what the log says:
  - the environment: versions and GPUs the log prints (collect_env,
    nvidia-smi, nvcc, pip/conda lists, NCCL's version line, the NVRM line,
    a printed torch.__version__), completed by --env files or --live-env;
  - the numbers in messages: an out-of-memory message gets its arithmetic
    (requested, free, held by PyTorch, reserved but unallocated, held by
    other processes) and a verdict with figures;
  - conditions on advice: items whose condition does not hold here are
    listed last and marked; JSON keeps them with "applies": false;
  - versions: a cause fixed in the installed release is ruled out, one
    fixed in a newer release says which release to upgrade to;
  - ranks: "[rank3]:", "[default3]:", "[Rank 3]", NCCL's host:pid:tid
    prefixes and torchrun's failure summary say which rank failed first
    and which only timed out waiting for it.
Use --explain to see why each diagnosis is ranked where it is.

Several inputs (files, a directory) are grouped by job from what they
say: the same Slurm job id (SLURM_JOB_ID=, StepId=, slurm-N.out), the same
host (kernel syslog prefix, NCCL host:pid:tid), or rank files (rank3.log)
in one directory. A node's log (dmesg, nvidia-smi) goes with every job.
Errors of different groups are never linked as causes of each other; the
report lists the groups. --together makes all inputs one job.

Exit status (grep's convention): 0 when every input was read (with or
without findings); 1 with --exit-code when a known error was found, even
if some inputs could not be read (each is named on stderr); 2 for bad
flags, or when an input could not be read and, with --exit-code, nothing
was found.`,
		Example: `  # A log file, in the terminal
  gpudx diagnose train.log

  # Every rank's log, as JSON for a script
  gpudx diagnose --format json logs/

  # Markdown to paste into an issue, in Chinese
  python train.py 2>&1 | gpudx diagnose --format markdown --lang zh -

  # Fail a CI step when a known GPU error is in the output
  gpudx diagnose --exit-code job.log

  # Add the versions from captured tool output, and show the ranking rules
  gpudx diagnose --env collect_env.txt --env nvidia-smi.txt --explain train.log`,
		RunE: func(cmd *cobra.Command, args []string) error { return runDiagnose(env, o, args) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.format, "format", "f", "text", "output format: text, json or markdown")
	f.StringVar(&o.lang, "lang", "en", "language of text and markdown output: en or zh")
	f.StringVar(&o.color, "color", "auto", "colour text output: auto (a terminal without NO_COLOR), always or never")
	f.StringArrayVar(&o.kb, "kb", nil, "extra knowledge-base `PATH` (entry file or directory; repeatable; also $GPUDX_KB); its entries replace built-in ones with the same id")
	f.BoolVar(&o.binary, "binary", false, "scan files that look binary instead of refusing them (NUL bytes are read as spaces)")
	f.BoolVar(&o.exitCode, "exit-code", false, "exit with status 1 when a known error is found, even if some inputs could not be read")
	f.StringArrayVar(&o.envFiles, "env", nil, "`FILE` with captured environment output (collect_env, nvidia-smi, nvcc --version, pip list/freeze, conda list); repeatable")
	f.BoolVar(&o.liveEnv, "live-env", false, "also read the environment of this machine (as `gpudx env` does): use it only when the log came from here")
	f.BoolVar(&o.together, "together", false, "treat all inputs as one job: link their errors whatever the files say about their jobs")
	f.BoolVar(&o.explain, "explain", false, "say why each diagnosis is ranked where it is (text and markdown)")
	f.IntVar(&o.width, "width", -1, "wrap text output to `N` columns (log lines and commands are cut, not wrapped); 0 leaves lines whole; default: the terminal's width, or 100 when not a terminal")
	f.BoolVar(&o.all, "all", false, "also list the dead ends and workarounds whose condition does not hold for this log (text and markdown; JSON always has them, with \"applies\": false)")
	f.StringVar(&o.db, "db", "", "blend the outcomes reported to this database (a SQLite `PATH` or a postgres:// URL; see gpudx report) into the rates; by default the file gpudx report writes, when it exists")
	return cmd
}

func runDiagnose(env *IO, o diagnoseOpts, args []string) error {
	if err := checkFormat(o.format, "text", "json", "markdown"); err != nil {
		return err
	}
	if err := checkLang(o.lang); err != nil {
		return err
	}
	color, err := colorFor(o.color, env.Out, env)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		if env.Terminal(env.In) {
			return usageErr("no input: give log files, a directory, or - to read standard input\nRun 'gpudx diagnose --help' for usage.")
		}
		args = []string{"-"}
	}
	inputs, err := expandInputs(args)
	if err != nil {
		return err
	}
	base, err := loadBase(kbPaths(o.kb, env), env)
	if err != nil {
		return err
	}
	addOutcomes, closeOutcomes, err := diagnoseOutcomes(env, o.db)
	if err != nil {
		return err
	}
	defer closeOutcomes()
	sc, err := scan.New(base.Entries())
	var skipped kb.ErrorList
	errors.As(err, &skipped)
	for _, e := range skipped {
		fmt.Fprintf(env.Err, "gpudx: warning: %v\n", e)
	}
	given, err := readEnvFiles("--env", o.envFiles)
	if err != nil {
		return err
	}
	if o.liveEnv {
		given.Merge(collectLive())
	}
	prog := newProgress(env, inputs)
	prog.run(200 * time.Millisecond)
	srcs := make([]scan.Input, len(inputs))
	for i, in := range inputs {
		srcs[i] = scan.Input{Name: in.name, Open: func() (io.ReadCloser, error) {
			r, closeFn, err := openInput(in, env.In, o.binary, prog)
			if err != nil {
				return nil, err
			}
			return readCloser{r, closeFn}, nil
		}}
	}
	// Inputs are opened and read ahead on other goroutines; what they say
	// reaches the report in input order. One unreadable file must not hide
	// what the others say; the exit status still says something failed.
	rep, failed := diagnose.ReadAll(sc, srcs, diagnose.Options{Env: given, Together: o.together, Done: func(i int, st scan.Stats, err error) {
		var oe *scan.OpenError
		switch {
		case errors.As(err, &oe):
			fmt.Fprintf(env.Err, "gpudx: %v\n", oe.Err)
		case err != nil:
			fmt.Fprintf(env.Err, "gpudx: %s: read error after %d bytes: %v\n", inputs[i].name, st.Bytes, err)
		}
	}})
	prog.finish()
	if err := addOutcomes(rep); err != nil {
		return err
	}
	ro := render.Options{Lang: o.lang, Color: color, Explain: o.explain, Width: textWidth(env, o.width), All: o.all}
	if failed != nil && len(rep.Diagnoses) == 0 && rep.Stats.Bytes == 0 && o.format != "json" {
		// Nothing could be read and the error is on stderr: "no known
		// error found" would read as a verdict on input never read.
		return silentExit(ExitUsage)
	}
	switch o.format {
	case "json":
		err = render.JSON(env.Out, rep)
	case "markdown":
		err = render.Markdown(env.Out, rep, ro)
	default:
		err = render.Text(env.Out, rep, ro)
	}
	if err != nil {
		return &exitError{ExitUsage, fmt.Errorf("writing output: %w", err)}
	}
	// grep's convention: with --exit-code a finding is reported as such
	// even when some input could not be read (each was named on stderr);
	// 2 says something failed and nothing was found.
	if o.exitCode && len(rep.Diagnoses) > 0 {
		return silentExit(ExitFound)
	}
	if failed != nil {
		return silentExit(ExitUsage)
	}
	return nil
}

// readCloser closes an opened input with its own close function.
type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }
