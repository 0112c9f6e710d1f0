package cli

import (
	"errors"
	"fmt"
	"github.com/gpudx/gpudx/kb"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/internal/jobrun"
	"github.com/gpudx/gpudx/internal/render"
	"github.com/gpudx/gpudx/scan"
)

// ExitRunFailed is gpudx run's status when gpudx itself fails (bad flags,
// a --log or --report file it cannot create), as env, nice and timeout
// use 125, leaving 126 (found, not runnable) and 127 (not found) to say
// why the command did not start, and every other status to the command.
const ExitRunFailed = 125

type runOpts struct {
	format, report, log, lang, color string
	kb                               []string
	tail, width                      int
}

func newRunCmd(env *IO) *cobra.Command {
	var o runOpts
	cmd := &cobra.Command{
		Use:   "run [flags] -- COMMAND [ARG]...",
		Short: "Run a job and diagnose its output when it fails",
		Long: `Run a command (a training job, a test) with its output passed through as
it comes, unchanged, while gpudx reads a copy. When the command exits with
a non-zero status or is killed by a signal, gpudx diagnoses everything it
printed and writes the diagnosis to standard error (or as JSON to the
--report file). Memory stays bounded however much the command prints: the
output is diagnosed as it streams, and only a tail (--tail bytes) is kept.

The command runs in a process group of its own; SIGINT, SIGTERM, SIGHUP
and SIGQUIT sent to gpudx are forwarded to that group once. Its standard
input is gpudx's; when that is a terminal, the command stays in gpudx's
process group (so that it may read the terminal), gets Ctrl-C from the
terminal itself, and only SIGTERM is forwarded. A Python job writing to a pipe buffers its output: set
PYTHONUNBUFFERED=1 to see it live.

Exit status: the command's own; 128+N when it was killed by signal N (as
shells say it); 126 when the command was found but could not be run, 127
when it was not found; 125 when gpudx itself failed (bad flags, a --log or
--report file that cannot be created).`,
		Example: `  # Diagnose a training job if it fails; its output is shown as usual
  gpudx run -- python train.py --batch-size 64

  # Keep the whole output, and a JSON report for the scheduler's epilog
  gpudx run --log job.log --format json --report job-diagnosis.json -- torchrun --nproc-per-node 8 train.py

  # In a Slurm batch script
  srun gpudx run -- python train.py`,
		RunE: func(cmd *cobra.Command, args []string) error { return runRun(env, o, args) },
	}
	cmd.Flags().SetInterspersed(false)
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{ExitRunFailed, fmt.Errorf("%v\nRun '%s --help' for usage.", err, c.CommandPath())}
	})
	f := cmd.Flags()
	f.StringVarP(&o.format, "format", "f", "text", "diagnosis format: text or json")
	f.StringVar(&o.report, "report", "", "write the diagnosis to `FILE` (always, with the exit status; without it, the diagnosis goes to standard error when the command fails)")
	f.StringVar(&o.log, "log", "", "also write the command's whole output (both streams, merged line by line) to `FILE`")
	f.IntVar(&o.tail, "tail", jobrun.DefaultTail, "keep the last `N` bytes of output in memory (in the JSON report as \"tail\")")
	f.StringVar(&o.lang, "lang", "en", "language of text output: en or zh")
	f.StringVar(&o.color, "color", "auto", "colour text output: auto, always or never")
	f.IntVar(&o.width, "width", -1, "wrap text output to `N` columns; 0 leaves lines whole")
	f.StringArrayVar(&o.kb, "kb", nil, "extra knowledge-base `PATH` (repeatable; also $GPUDX_KB)")
	return cmd
}

// runJob is the "job" object of gpudx run's JSON report.
type runJob struct {
	Command     []string `json:"command"`
	ExitCode    int      `json:"exit_code"`
	Signal      string   `json:"signal,omitempty"`
	DurationS   float64  `json:"duration_seconds"`
	StdoutBytes int64    `json:"stdout_bytes"`
	StderrBytes int64    `json:"stderr_bytes"`
	Tail        string   `json:"tail"`
}

// jobReport is diagnose --format json's report with the job beside it.
type jobReport struct {
	Job runJob `json:"job"`
	*diagnose.Report
}

func runFailed(format string, a ...any) error {
	return &exitError{ExitRunFailed, fmt.Errorf(format, a...)}
}

func runRun(env *IO, o runOpts, args []string) error {
	if len(args) == 0 {
		return runFailed("no command: gpudx run [flags] -- COMMAND [ARG]...")
	}
	if o.format != "text" && o.format != "json" {
		return runFailed("--format: want text or json, got %q", o.format)
	}
	if o.lang != "en" && o.lang != "zh" {
		return runFailed("--lang: want en or zh, got %q", o.lang)
	}
	if o.tail < 1 || o.tail > 1<<30 {
		return runFailed("--tail: want 1 to 1073741824 bytes, got %d", o.tail)
	}
	color, err := colorFor(o.color, env.Err, env)
	if err != nil {
		return runFailed("%v", err.(*exitError).err)
	}
	base, err := loadBase(kbPaths(o.kb, env), env)
	if err != nil {
		return runFailed("%v", err.(*exitError).err)
	}
	sc, err := scan.New(base.Entries())
	var skipped kb.ErrorList
	errors.As(err, &skipped)
	for _, e := range skipped {
		fmt.Fprintf(env.Err, "gpudx: warning: %v\n", e)
	}
	var logFile, reportFile *os.File
	if o.log != "" {
		if logFile, err = os.Create(o.log); err != nil {
			return runFailed("--log: %v", err)
		}
		defer logFile.Close()
	}
	if o.report != "" {
		if reportFile, err = os.Create(o.report); err != nil {
			return runFailed("--report: %v", err)
		}
		defer reportFile.Close()
	}

	// The merged output is diagnosed as it streams, on its own goroutine.
	// One stream, as one input of diagnose: no file name (the job's command
	// line would stand in front of every line number).
	col := diagnose.NewCollector(sc.Entries())
	pr, pw := io.Pipe()
	scanned := make(chan error, 1)
	go func() {
		st, err := diagnose.Plan(sc).Visit(pr, col)
		col.AddStats(st)
		pr.CloseWithError(err)
		scanned <- err
	}()
	var lines io.Writer = pw
	if logFile != nil {
		lines = io.MultiWriter(logFile, pw)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	res, runErr := jobrun.Run(jobrun.Options{Args: args, Stdin: env.In, Stdout: env.Out, Stderr: env.Err,
		Lines: lines, TailBytes: o.tail, Signals: sigs, Foreground: env.Terminal(env.In)})
	pw.Close()
	<-scanned
	if se, ok := runErr.(*jobrun.StartError); ok {
		fmt.Fprintf(env.Err, "gpudx: %v\n", se.Err)
		return silentExit(se.Code)
	}
	if runErr != nil {
		// Writing the log failed; the job ran to its end regardless.
		fmt.Fprintf(env.Err, "gpudx: --log %s: %v\n", o.log, runErr)
	}
	rep := col.Report()
	job := runJob{Command: args, ExitCode: res.ExitCode, Signal: res.Signal, DurationS: res.Duration.Seconds(),
		StdoutBytes: res.Stdout, StderrBytes: res.Stderr, Tail: string(res.Tail)}
	failed := res.ExitCode != 0
	if failed || reportFile != nil {
		var w io.Writer = env.Err
		if reportFile != nil {
			w, color = reportFile, false
		}
		if err := writeRunReport(w, o, color, env, job, rep); err != nil {
			fmt.Fprintf(env.Err, "gpudx: writing the diagnosis: %v\n", err)
			if !failed {
				return silentExit(ExitRunFailed)
			}
		}
	}
	if runErr != nil && !failed {
		return silentExit(ExitRunFailed)
	}
	return silentExit(res.ExitCode)
}

func writeRunReport(w io.Writer, o runOpts, color bool, env *IO, job runJob, rep *diagnose.Report) error {
	if o.format == "json" {
		return render.WriteJSON(w, jobReport{Job: job, Report: rep})
	}
	how := fmt.Sprintf("exited with status %d", job.ExitCode)
	if job.Signal != "" {
		how = fmt.Sprintf("was killed by signal %d (%s); status %d", job.ExitCode-128, job.Signal, job.ExitCode)
	}
	if _, err := fmt.Fprintf(w, "\ngpudx: %s %s after %s, having printed %d bytes\n\n", job.Command[0], how,
		time.Duration(job.DurationS*float64(time.Second)).Round(time.Millisecond), job.StdoutBytes+job.StderrBytes); err != nil {
		return err
	}
	width := o.width
	if width < 0 {
		width = 100
		if f, ok := env.Err.(*os.File); ok && env.Terminal(f) {
			width = textWidth(&IO{Out: f, Terminal: env.Terminal}, -1)
		}
	}
	return render.Text(w, rep, render.Options{Lang: o.lang, Color: color, Width: width})
}
