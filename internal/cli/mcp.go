package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/gpudx/gpudx/internal/mcpserver"
	"github.com/gpudx/gpudx/internal/store"
	"github.com/gpudx/gpudx/outcome"
)

type mcpOpts struct {
	db         string
	noDB       bool
	kb         []string
	snapMemory string
}

func newMCPCmd(env *IO) *cobra.Command {
	var o mcpOpts
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve gpudx's tools to AI coding agents over the Model Context Protocol (stdio)",
		Long: `Serve gpudx to an AI coding agent over the Model Context Protocol: the agent
starts 'gpudx mcp' and talks to it over standard input and output. Standard
output carries only the protocol; gpudx writes its own messages to standard
error.

Register it with the agent by adding an entry to the "mcpServers" section
of its MCP configuration:

  {
    "mcpServers": {
      "gpudx": {
        "command": "gpudx",
        "args": ["mcp"]
      }
    }
  }

(give the full path of gpudx as "command" when it is not on the agent's
PATH, and add "--db", "PATH" to "args" to keep outcomes elsewhere).

Tools:
  diagnose_log             a log (text, or a file by path) -> root cause, what
                           not to try first, what to try, OOM arithmetic
  lookup_error             one error name or line -> the matching entries
  get_entry                one entry in full, with rates blended with reports
  search_entries           search the knowledge base
  list_domains             the knowledge base's domains
  analyze_memory_snapshot  a PyTorch memory snapshot (by path or base64) ->
                           why the OOM happened, who holds the memory
  report_outcome           record whether a workaround or dead end held

Over stdio the tools may read files the agent names (the agent and gpudx
run on the same machine); 'gpudx serve' offers the same tools over HTTP at
/mcp, where content travels in the request instead.

Outcome reports go to the SQLite file gpudx report uses
($XDG_DATA_HOME/gpudx/outcomes.db or ~/.local/share/gpudx/outcomes.db), to
another file with --db PATH, or to PostgreSQL with --db postgres://....
When no database can be opened, gpudx mcp says so on standard error and
serves without it: report_outcome then answers with an error. --no-db does
that on purpose.

Exit status: 0 when the agent closes the connection (or on SIGTERM/SIGINT),
2 for bad flags or a knowledge base that cannot be loaded.`,
		Example: `  # What an agent runs (you do not type this yourself)
  gpudx mcp

  # Outcomes in a shared PostgreSQL, extra entries from a directory
  gpudx mcp --db postgres://gpudx@db.internal/gpudx --kb ~/gpu-kb`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runMCP(env, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.db, "db", "", "outcome database: a SQLite file `PATH` or a postgres:// URL (default: gpudx/outcomes.db in the user's data directory)")
	f.BoolVar(&o.noDB, "no-db", false, "serve without an outcome database (report_outcome answers with an error)")
	f.StringArrayVar(&o.kb, "kb", nil, "extra knowledge-base `PATH` (entry file or directory; repeatable; also $GPUDX_KB)")
	f.StringVar(&o.snapMemory, "max-snapshot-memory", "4GiB", "most memory analyze_memory_snapshot may hold reading one snapshot (`SIZE`); also at most 32 MiB plus 4 bytes per byte of the file")
	return cmd
}

func runMCP(env *IO, o mcpOpts) error {
	if o.noDB && o.db != "" {
		return usageErr("--db and --no-db contradict each other: give one")
	}
	snapMem, err := parseSizeFlag("--max-snapshot-memory", o.snapMemory)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var st outcome.Store
	if o.noDB {
		fmt.Fprintln(env.Err, "gpudx mcp: --no-db: serving without an outcome database; report_outcome will answer with an error")
	} else {
		s, err := store.Open(ctx, o.db, env.Getenv)
		if err != nil {
			// An agent cannot fix flags; serving without reports beats
			// not serving at all.
			fmt.Fprintf(env.Err, "gpudx mcp: warning: no outcome database (%v); serving without it, so report_outcome will answer with an error\n", err)
		} else {
			st = s
			defer func() {
				if err := s.Close(); err != nil {
					fmt.Fprintf(env.Err, "gpudx mcp: closing the outcome database: %v\n", err)
				}
			}()
		}
	}
	svc, err := newService(env, o.kb, st)
	if err != nil {
		return err
	}
	svc.SetSnapshotMemory(int64(snapMem))
	srv := mcpserver.New(svc, mcpserver.Options{Version: Version, AllowFiles: true})
	fmt.Fprintf(env.Err, "gpudx mcp: serving %d entries over stdio\n", svc.Base().Len())
	t := &mcp.IOTransport{Reader: io.NopCloser(env.In), Writer: nopWriteCloser{env.Out}, MaxLineLength: mcpserver.MaxMessageBytes}
	err = srv.Run(ctx, t)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return &exitError{ExitInternal, fmt.Errorf("mcp: %v", err)}
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
