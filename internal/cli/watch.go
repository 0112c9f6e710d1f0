package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gpudx/gpudx/kb"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpudx/gpudx/internal/watch"
	"github.com/gpudx/gpudx/scan"
)

type watchOpts struct {
	format, kernel, metrics, lang string
	cmds, kb                      []string
	fromStart                     bool
	window, poll, duration        time.Duration
}

func newWatchCmd(env *IO) *cobra.Command {
	var o watchOpts
	cmd := &cobra.Command{
		Use:   "watch [FILE | DIR | -]... [--kernel-log] [--cmd COMMAND]...",
		Short: "Follow logs as they grow and report each known GPU error as it appears",
		Long: `Follow logs and report each known error once, as it appears, with its root
cause and what to do. Sources:
  FILE         followed as it grows, across rotation and truncation (as
               tail -F does); from its end, or its start with --from-start
  DIR          every file in it, and each file created in it later
  -            standard input
  --kernel-log the kernel log: /dev/kmsg where readable, else
               journalctl -k -f; --kernel-log=FILE reads a kmsg-format
               file or FIFO instead
  --cmd CMD    a command's output (sh -c CMD), e.g. kubectl logs -f POD

A diagnosis seen again within --window is counted, not printed again; while
it keeps occurring, a summary of its repeats is reported once per window,
and when a source has been quiet for a window its incident closes (the
next error there is new again). Line numbers count from where following
began (a file's start when read from it). Memory stays bounded however
long it runs.

--format jsonl writes one JSON object a line per event: "event" (new or
repeated), "time", "source", "occurrences", "gpus", and the fields of a
diagnosis in gpudx diagnose --format json.

--metrics ADDR serves Prometheus metrics at http://ADDR/metrics:
gpudx_diagnoses_total{entry,domain,severity,gpu},
gpudx_gpu_drain_recommended{gpu}, gpudx_watch_events_total{event},
gpudx_watch_lines_total, gpudx_watch_read_bytes_total.

It runs until interrupted (SIGINT, SIGTERM), for --duration, or until its
only sources (standard input, commands) end. Exit status: 0; 2 for bad
flags or a source that cannot be read.`,
		Example: `  # A training job's log and the kernel log, as they grow
  gpudx watch --kernel-log /scratch/job/train.log

  # A pod's output, as JSON lines
  gpudx watch --format jsonl --cmd 'kubectl logs -f job/train'

  # On every GPU node: metrics for Prometheus
  gpudx watch --kernel-log --metrics :9402 /var/log/pods   # dcgm-exporter has :9400`,
		RunE: func(cmd *cobra.Command, args []string) error { return runWatch(cmd.Context(), env, o, args) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.format, "format", "f", "text", "output: text or jsonl (one JSON event a line)")
	f.StringVar(&o.kernel, "kernel-log", "", "follow the kernel log (/dev/kmsg, else journalctl -k -f); =`FILE` follows a kmsg-format file or FIFO")
	f.Lookup("kernel-log").NoOptDefVal = "auto"
	f.StringArrayVar(&o.cmds, "cmd", nil, "follow the output of `COMMAND` (run with sh -c; repeatable)")
	f.StringVar(&o.metrics, "metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics (e.g. 127.0.0.1:9402; dcgm-exporter uses 9400)")
	f.BoolVar(&o.fromStart, "from-start", false, "read what files and the kernel buffer hold already, not only what is added")
	f.DurationVar(&o.window, "window", 5*time.Minute, "repeats within this `DURATION` are counted, not printed again")
	f.DurationVar(&o.poll, "poll", 250*time.Millisecond, "look at files and directories this often")
	f.DurationVar(&o.duration, "duration", 0, "stop after this `DURATION` (0: run until interrupted)")
	f.StringVar(&o.lang, "lang", "en", "language of text output: en or zh")
	f.StringArrayVar(&o.kb, "kb", nil, "extra knowledge-base `PATH` (repeatable; also $GPUDX_KB)")
	return cmd
}

func runWatch(ctx context.Context, env *IO, o watchOpts, args []string) error {
	if err := checkFormat(o.format, "text", "jsonl"); err != nil {
		return err
	}
	if err := checkLang(o.lang); err != nil {
		return err
	}
	if o.window <= 0 || o.poll <= 0 || o.duration < 0 {
		return usageErr("--window and --poll must be positive, --duration not negative")
	}
	if len(args) == 0 && len(o.cmds) == 0 && o.kernel == "" && o.metrics == "" {
		return usageErr("nothing to watch: give files, directories, -, --kernel-log or --cmd\nRun 'gpudx watch --help' for usage.")
	}
	for _, a := range args {
		if a == "-" {
			continue
		}
		if _, err := os.Stat(a); err != nil && !errors.Is(err, os.ErrNotExist) {
			return usageErr("%s: %v", a, unwrapPath(err))
		}
	}
	base, err := loadBase(kbPaths(o.kb, env), env)
	if err != nil {
		return err
	}
	sc, err := scan.New(base.Entries())
	var skipped kb.ErrorList
	errors.As(err, &skipped)
	for _, e := range skipped {
		fmt.Fprintf(env.Err, "gpudx: warning: %v\n", e)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	var m *watch.Metrics
	if o.metrics != "" {
		m = watch.NewMetrics()
		ln, err := net.Listen("tcp", o.metrics)
		if err != nil {
			return usageErr("--metrics: %v", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", m.Handler())
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		fmt.Fprintf(env.Err, "gpudx: metrics at http://%s/metrics\n", ln.Addr())
	}
	emit := textEvent(env.Out, o.lang)
	if o.format == "jsonl" {
		enc := json.NewEncoder(env.Out)
		enc.SetEscapeHTML(false)
		emit = func(e watch.Event) error { return enc.Encode(e) }
	}
	if len(args) == 0 && len(o.cmds) == 0 && o.kernel == "" {
		// Metrics alone: serve until stopped.
		<-ctx.Done()
		return nil
	}
	err = watch.Run(ctx, watch.Config{Paths: args, Stdin: env.In, Commands: o.cmds, Kernel: o.kernel,
		FromStart: o.fromStart, Poll: o.poll, Window: o.window, Scanner: sc, Metrics: m, Emit: emit, Notes: env.Err})
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return usageErr("%v", err)
	}
	return nil
}

// textEvent writes an event for a person: one heading line, the evidence,
// and what to do first.
func textEvent(w io.Writer, lang string) func(watch.Event) error {
	return func(e watch.Event) error {
		d := e.Diagnosis
		var b strings.Builder
		kind := "ROOT CAUSE"
		if !d.Root {
			kind = "FOLLOWS FROM " + strings.Join(d.CausedBy, ", ")
		}
		where := ""
		if d.Operator != nil {
			where = fmt.Sprintf("  [%s, drain: %s", d.Operator.Severity, d.Operator.Drain)
			if d.Operator.Action != "" {
				where += ", " + d.Operator.Action
			}
			where += "]"
		}
		if len(e.GPUs) > 0 {
			where += "  GPU " + strings.Join(e.GPUs, ", ")
		}
		title := d.Title
		if lang == "zh" && d.TitleZh != "" {
			title = d.TitleZh
		}
		ts := e.Time.UTC().Format(time.RFC3339)
		if e.Event == "new" {
			fmt.Fprintf(&b, "%s  %s  %s  %s%s\n  %s\n", ts, e.Source, kind, d.ID, where, title)
			ev := d.Evidence
			if len(ev) > 2 {
				ev = ev[len(ev)-2:]
			}
			for _, x := range ev {
				fmt.Fprintf(&b, "  %d: %s\n", x.Line, x.Text)
			}
			if d.Operator != nil && d.Operator.Next != "" {
				next := d.Operator.Next
				if lang == "zh" && d.Operator.NextZh != "" {
					next = d.Operator.NextZh
				}
				fmt.Fprintf(&b, "  → %s\n", next)
			} else if len(d.Workarounds) > 0 {
				fmt.Fprintf(&b, "  → %s\n", d.Workarounds[0].Action)
			}
			fmt.Fprintf(&b, "  gpudx kb show %s\n", d.ID)
		} else {
			fmt.Fprintf(&b, "%s  %s  REPEATED  %s  %d more time(s), last at line %d%s\n", ts, e.Source, d.ID, e.Occurrences, d.LastLine, where)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
}
