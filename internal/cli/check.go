package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpudx/gpudx/health"
)

// Exit codes of gpudx check follow node-problem-detector's custom plugin
// protocol (pkg/custompluginmonitor/types: OK=0, NonOK=1, Unknown=2; any
// other status also reads as Unknown), which NHC's check functions and a
// Slurm HealthCheckProgram script can use as they are.
const (
	checkOK      = 0
	checkDrain   = 1
	checkUnknown = 2
)

// npdMaxOutput is node-problem-detector's default max_output_length: it
// keeps that many bytes of a plugin's trimmed stdout.
const npdMaxOutput = 80

type checkOpts struct {
	kernelLog, kmsg, since, format string
	kb                             []string
	repeats, maxOutput             int
}

func newCheckCmd(env *IO) *cobra.Command {
	var o checkOpts
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Say whether this GPU node should be drained, from its kernel log",
		Long: `Read the kernel log since boot (or since --since) and say whether this node
should leave scheduling, from the knowledge base's operator rules for Xid and
other driver events: an event marked "drain" drains on first sight, one marked
"if_repeats" when it recurs on the same GPU (--repeats), the rest never.

The live kernel log is read from /dev/kmsg (needs root or CAP_SYSLOG where
kernel.dmesg_restrict=1), else from 'journalctl -k -b'. --kernel-log reads a
recorded one instead (dmesg, journalctl -k, /var/log/kern.log). NVML is not
consulted: gpudx is built without cgo.

Formats:
  text  a report for a person (the default)
  npd   node-problem-detector custom plugin: one line on stdout, at most
        --max-output-length bytes (NPD's max_output_length, default 80)
  nhc   LBNL NHC / Slurm: nothing when healthy; otherwise one line for
        'die 1 "check_gpudx:  $MSG"' or scontrol's Reason=
  json  the findings

Exit status (node-problem-detector's plugin protocol): 0 healthy, 1 drain
this node, 2 the kernel log could not be read or bad flags (Unknown).`,
		Example: `  # On the node, as root
  gpudx check

  # A recorded kernel log, since a time
  gpudx check --kernel-log dmesg.txt --since 2026-11-27T08:00:00Z

  # As a node-problem-detector custom plugin, or from NHC
  gpudx check --format npd
  gpudx check --format nhc`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runCheck(env, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.kernelLog, "kernel-log", "", "read a recorded kernel log `FILE` (- for stdin) instead of the live one")
	f.StringVar(&o.kmsg, "kmsg", "/dev/kmsg", "kernel log device `PATH` read when --kernel-log is not given")
	f.StringVar(&o.since, "since", "", "only events after `TIME`: RFC 3339 (2026-11-27T08:00:00Z), '2026-11-27 08:00:00' (UTC) or a duration back from now (6h)")
	f.StringVarP(&o.format, "format", "f", "text", "output format: text, npd, nhc or json")
	f.IntVar(&o.repeats, "repeats", health.DefaultRepeats, "events of an if_repeats entry on one GPU that drain the node")
	f.IntVar(&o.maxOutput, "max-output-length", npdMaxOutput, "npd format: longest message in bytes (node-problem-detector's max_output_length)")
	f.StringArrayVar(&o.kb, "kb", nil, "extra knowledge-base `PATH` (repeatable; also $GPUDX_KB)")
	return cmd
}

func runCheck(env *IO, o checkOpts) error {
	if err := checkFormat(o.format, "text", "npd", "nhc", "json"); err != nil {
		return err
	}
	fail := func(err error) error { return checkFailed(env, o, err) }
	if o.repeats < 1 {
		return fail(usageErr("--repeats: want 1 or more, got %d", o.repeats))
	}
	if o.maxOutput < 20 {
		return fail(usageErr("--max-output-length: want 20 or more, got %d", o.maxOutput))
	}
	since, err := parseSince(o.since, time.Now())
	if err != nil {
		return fail(usageErr("--since: %v", err))
	}
	base, err := loadBase(kbPaths(o.kb, env), env)
	if err != nil {
		return fail(err)
	}
	r, source, err := kernelLog(env, o, since)
	if err != nil {
		return fail(err)
	}
	res, err := health.Check(base.Entries(), r, health.Options{Since: since, Repeats: o.repeats})
	if err != nil {
		return fail(&exitError{checkUnknown, fmt.Errorf("%s: %v", source, err)})
	}
	switch o.format {
	case "npd":
		fmt.Fprintln(env.Out, npdMessage(res, o.maxOutput))
	case "nhc":
		if res.Drain {
			fmt.Fprintln(env.Out, nhcMessage(res))
		}
	case "json":
		enc := json.NewEncoder(env.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Source string `json:"source"`
			NVML   string `json:"nvml"`
			*health.Result
		}{source, nvmlNote, res}); err != nil {
			return err
		}
	default:
		writeCheckText(env.Out, res, source)
	}
	if res.Drain {
		return silentExit(checkDrain)
	}
	return nil
}

const nvmlNote = "not consulted: gpudx is built without cgo"

// checkFailed reports an error as the format expects: npd and nhc read
// stdout, so the reason goes there in one line; the status is Unknown.
func checkFailed(env *IO, o checkOpts, err error) error {
	if o.format != "npd" && o.format != "nhc" {
		var ee *exitError
		if errors.As(err, &ee) {
			return &exitError{checkUnknown, ee.err}
		}
		return &exitError{checkUnknown, err}
	}
	msg := "gpudx: cannot check: " + oneLine(err.Error())
	if o.format == "npd" {
		msg = cut(msg, o.maxOutput)
	}
	fmt.Fprintln(env.Out, msg)
	return silentExit(checkUnknown)
}

// parseSince reads --since.
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("want a positive duration, got %s", s)
		}
		return now.Add(-d), nil
	}
	for _, l := range []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("want RFC 3339 (2026-11-27T08:00:00Z), '2026-11-27 08:00:00' (UTC) or a duration (6h), got %q", s)
}

// kernelLog opens the recorded log, or reads the live one: /dev/kmsg,
// else journalctl -k -b.
func kernelLog(env *IO, o checkOpts, since time.Time) (io.Reader, string, error) {
	switch o.kernelLog {
	case "-":
		return env.In, "standard input", nil
	case "":
	default:
		f, err := os.Open(o.kernelLog)
		if err != nil {
			return nil, "", &exitError{checkUnknown, fmt.Errorf("--kernel-log %s: %v", o.kernelLog, unwrapPath(err))}
		}
		if st, err := f.Stat(); err == nil && st.IsDir() {
			f.Close()
			return nil, "", &exitError{checkUnknown, fmt.Errorf("--kernel-log %s: is a directory; give the recorded log file", o.kernelLog)}
		}
		// The process ends after the check; the file is closed with it.
		return f, o.kernelLog, nil
	}
	b, kerr := health.ReadKmsg(o.kmsg, since)
	if kerr == nil {
		return bytes.NewReader(b), o.kmsg, nil
	}
	args := []string{"-k", "-b", "--no-pager", "-o", "short-iso"}
	if !since.IsZero() {
		args = append(args, "--since", since.UTC().Format("2006-01-02 15:04:05")+" UTC")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, jerr := exec.CommandContext(ctx, "journalctl", args...).Output()
	if jerr == nil {
		return bytes.NewReader(out), "journalctl -k -b", nil
	}
	var xe *exec.ExitError
	if errors.As(jerr, &xe) && len(xe.Stderr) > 0 {
		jerr = errors.New(strings.TrimSpace(string(xe.Stderr)))
	}
	hint := ""
	if errors.Is(kerr, os.ErrPermission) {
		hint = " (run as root or with CAP_SYSLOG)"
	}
	return nil, "", &exitError{checkUnknown, fmt.Errorf("cannot read the kernel log: %v%s; journalctl -k: %v", kerr, hint, jerr)}
}

// npdMessage is the one line node-problem-detector shows as the
// condition's message: the verdict and the first finding, cut to max.
func npdMessage(res *health.Result, max int) string {
	var fs []health.Finding
	verdict := "gpudx: no drain"
	if res.Drain {
		verdict = "gpudx: drain"
		for _, f := range res.Findings {
			if f.Drain {
				fs = append(fs, f)
			}
		}
	} else {
		fs = res.Findings
	}
	if len(fs) == 0 {
		return cut("gpudx: no GPU fault in the kernel log", max)
	}
	more := ""
	if len(fs) > 1 {
		more = fmt.Sprintf(" (+%d more)", len(fs)-1)
	}
	f := fs[0]
	msg := fmt.Sprintf("%s: %s%s", verdict, f.Short(), more)
	if f.Operator.Action != "" {
		if m := fmt.Sprintf("%s: %s, %s%s", verdict, f.Short(), f.Operator.Action, more); len(m) <= max {
			msg = m
		}
	}
	return cut(msg, max)
}

// nhcMessage is the line NHC's die() and Slurm's Reason= get: each drain
// finding with its count and NVIDIA's action.
func nhcMessage(res *health.Result) string {
	var parts []string
	for _, f := range res.Findings {
		if !f.Drain {
			continue
		}
		p := fmt.Sprintf("%s (%dx", f.Short(), f.Events)
		if f.Operator.Action != "" {
			p += ", " + f.Operator.Action
		}
		parts = append(parts, p+")")
	}
	return oneLine("gpudx: drain: " + strings.Join(parts, "; "))
}

func writeCheckText(w io.Writer, res *health.Result, source string) {
	drains := 0
	for _, f := range res.Findings {
		if f.Drain {
			drains++
		}
	}
	switch {
	case res.Drain:
		fmt.Fprintf(w, "DRAIN this node: %d of %d GPU events found call for it.\n", drains, len(res.Findings))
	case len(res.Findings) > 0:
		fmt.Fprintf(w, "Healthy: %d GPU events found, none calls for a drain.\n", len(res.Findings))
	default:
		fmt.Fprintln(w, "Healthy: no known GPU event in the kernel log.")
	}
	for _, f := range res.Findings {
		mark := "  "
		if f.Drain {
			mark = "! "
		}
		fmt.Fprintf(w, "\n%s%s — %s (%s, %s fault)\n", mark, f.Short(), f.Title, f.Operator.Severity, f.Operator.Fault)
		fmt.Fprintf(w, "    %s\n", f.Why)
		if f.Operator.Action != "" {
			fmt.Fprintf(w, "    NVIDIA action: %s\n", f.Operator.Action)
		}
		if f.Operator.Next != "" {
			fmt.Fprintf(w, "    Next: %s\n", f.Operator.Next)
		}
		fmt.Fprintf(w, "    line %d: %s\n", f.FirstLine, f.Text)
		fmt.Fprintf(w, "    gpudx kb show %s\n", f.ID)
	}
	if len(res.Unjudged) > 0 {
		fmt.Fprintln(w, "\nNot judged (no operator rule in the knowledge base):")
		for _, u := range res.Unjudged {
			fmt.Fprintf(w, "  Xid %s on GPU %s, %d lines, first at line %d: %s\n", u.Xid, u.GPU, u.Count, u.FirstLine, u.Text)
		}
	}
	fmt.Fprintf(w, "\nRead %d lines from %s.", res.Lines, source)
	if res.Skipped > 0 {
		fmt.Fprintf(w, " %d event lines before --since skipped.", res.Skipped)
	}
	if res.Undated > 0 {
		fmt.Fprintf(w, " %d event lines carry no wall-clock time and were kept.", res.Undated)
	}
	fmt.Fprintf(w, " NVML %s.\n", nvmlNote)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// cut shortens s to at most n bytes, at a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
