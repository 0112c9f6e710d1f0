// Package cli defines gpudx's commands. It parses flags, loads the
// knowledge base and hands work to the public packages; it computes nothing
// itself.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Version is set at build time with -ldflags "-X github.com/gpudx/gpudx/internal/cli.Version=...".
var Version = "dev"

// Exit codes.
const (
	ExitOK       = 0
	ExitFound    = 1 // lint found problems; diagnose --exit-code found errors
	ExitUsage    = 2 // bad flags, unreadable input
	ExitInternal = 3
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func usageErr(format string, a ...any) error {
	return &exitError{ExitUsage, fmt.Errorf(format, a...)}
}

// silentExit ends with a code and no message (the command already said it).
func silentExit(code int) error { return &exitError{code, nil} }

// IO is where commands read and write; tests replace it.
type IO struct {
	In     io.Reader
	Out    io.Writer
	Err    io.Writer
	Getenv func(string) string
	// Terminal says whether a stream is an interactive terminal.
	Terminal func(any) bool
}

// StdIO is the process's own streams.
func StdIO() *IO {
	return &IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Getenv: os.Getenv,
		Terminal: func(s any) bool {
			f, ok := s.(*os.File)
			return ok && term.IsTerminal(int(f.Fd()))
		}}
}

// Run executes gpudx with args and returns the process exit code.
func Run(args []string, io *IO) int { return RunContext(context.Background(), args, io) }

// RunContext is Run with a context that ends long-running commands
// (watch) when it is done.
func RunContext(ctx context.Context, args []string, io *IO) int {
	root := newRoot(io)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(io.Err, "gpudx: %v\n", ee.err)
		}
		return ee.code
	}
	// cobra's own errors: unknown command or flag, wrong argument count.
	fmt.Fprintf(io.Err, "gpudx: %v\nRun '%s --help' for usage.\n", err, commandPath(root, args))
	return ExitUsage
}

func commandPath(root *cobra.Command, args []string) string {
	c, _, err := root.Find(args)
	if err != nil || c == nil {
		return "gpudx"
	}
	return c.CommandPath()
}

func newRoot(io *IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "gpudx",
		Short: "Diagnose GPU failures: the root cause, what not to try, what to do",
		Long: `gpudx reads the output of a failed GPU job (a CUDA error, an out-of-memory
message, an NCCL timeout, an Xid in dmesg) and says what really went wrong,
which fixes people waste time on, and what to do now. Its knowledge base of
GPU errors is built into the binary.`,
		Example: `  # Diagnose a training log
  gpudx diagnose train.log

  # Pipe a job's output, get JSON for a script
  kubectl logs job/train | gpudx diagnose --format json -

  # Look an error up by name
  gpudx kb search CUBLAS_STATUS_ALLOC_FAILED`,
		SilenceUsage:  true,
		SilenceErrors: true,
		CompletionOptions: cobra.CompletionOptions{
			HiddenDefaultCmd: true,
		},
	}
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	root.SetIn(io.In)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr("%v\nRun '%s --help' for usage.", err, c.CommandPath())
	})
	root.AddCommand(newDiagnoseCmd(io), newEnvCmd(io), newKBCmd(io), newMemCmd(io), newVersionCmd(io),
		newServeCmd(io), newMCPCmd(io), newReportCmd(io), newCheckCmd(io), newRunCmd(io), newWatchCmd(io))
	return root
}

// colorFor decides whether to colour output written to w.
func colorFor(mode string, w io.Writer, env *IO) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto", "":
		if env.Getenv("NO_COLOR") != "" || env.Getenv("TERM") == "dumb" {
			return false, nil
		}
		return env.Terminal(w), nil
	}
	return false, usageErr("--color: want auto, always or never, got %q", mode)
}

func checkLang(l string) error {
	if l != "en" && l != "zh" {
		return usageErr("--lang: want en or zh, got %q", l)
	}
	return nil
}

func checkFormat(f string, allowed ...string) error {
	for _, a := range allowed {
		if f == a {
			return nil
		}
	}
	return usageErr("--format: want %s, got %q", strings.Join(allowed, ", "), f)
}

func newVersionCmd(io *IO) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print gpudx's version and the size of its knowledge base",
		Example: "  gpudx version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			base, err := loadEmbedded()
			if err != nil {
				return err
			}
			fmt.Fprintf(io.Out, "gpudx %s (knowledge base: %d entries)\n", Version, base.Len())
			return nil
		},
	}
}

// textWidth is the width text output wraps to: the flag's when given (0:
// no wrapping), else the terminal's, else 100 columns.
func textWidth(env *IO, flag int) int {
	if flag >= 0 {
		return flag
	}
	if f, ok := env.Out.(*os.File); ok && env.Terminal(f) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			return w
		}
	}
	return 100
}
