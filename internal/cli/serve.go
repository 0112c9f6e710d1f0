package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpudx/gpudx/internal/mcpserver"
	"github.com/gpudx/gpudx/internal/server"
	"github.com/gpudx/gpudx/internal/service"
	"github.com/gpudx/gpudx/internal/web"
	"github.com/gpudx/gpudx/outcome"
)

type serveOpts struct {
	addr, db                string
	noDB                    bool
	kb                      []string
	maxLog, maxSnapshot     string
	maxConcurrent           int
	readHeader, read, write time.Duration
	idle, drain             time.Duration
	maxUploads              int
	bodyTimeout             time.Duration
	minBodyRate, snapMemory string
	allowedHosts            []string
	token                   string
}

func newServeCmd(env *IO) *cobra.Command {
	var o serveOpts
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API, the web page and MCP over HTTP for a team",
		Long: `Run gpudx as a service that jobs, CI systems, people and AI agents can ask:

  /                            the web page: paste or drop a log, drop a memory
                               snapshot, browse and search the knowledge base
  POST /api/v1/diagnose        a log (raw or gzip body, or JSON {"log", "env"})
                               -> the JSON of 'gpudx diagnose --format json'
  POST /api/v1/snapshots       a memory snapshot file (?request=&capacity=&device=&top=)
                               -> the JSON of 'gpudx mem --format json'
  GET  /api/v1/entries         entries (?domain=&category=&q=)
  GET  /api/v1/entries/D/S     one entry, with its blended rates
  GET  /api/v1/domains         the knowledge base's domains
  GET  /api/v1/search?q=       search entries by error name, words or a message
  POST /api/v1/outcomes        report whether a workaround or dead end held
  GET  /api/v1/openapi.json    the OpenAPI 3.1 description of all of the above
  /mcp                         the Model Context Protocol (streamable HTTP)
  GET  /healthz, GET /metrics  liveness, Prometheus metrics

It listens on loopback (127.0.0.1:8080) unless told otherwise. To let other
machines in, listen on all interfaces with --addr 0.0.0.0:8080 (or a
specific address); gpudx has no TLS or user accounts of its own, so put it
behind a reverse proxy that adds them, or keep it on a trusted network.

Writes (POST /api/v1/outcomes, MCP tool calls) are refused from other
sites' web pages (Origin, Sec-Fetch-Site), without Content-Type:
application/json, and through a Host that is not this server's address,
localhost or this machine's name: add the names clients use with
--allowed-hosts. --token (or $GPUDX_TOKEN) makes writes need
"Authorization: Bearer TOKEN"; the token is never printed or logged.

Outcome reports are stored in a SQLite file in the user's data directory
($XDG_DATA_HOME/gpudx/outcomes.db or ~/.local/share/gpudx/outcomes.db), in
another file with --db PATH, or in PostgreSQL with --db postgres://... when
several servers share them. --no-db serves without recording outcomes
(POST /api/v1/outcomes then answers 503).

Limits: request bodies (64 MiB for a log, 4 GiB for a snapshot, before and
after gzip decoding; 413 beyond), the memory reading one snapshot may hold
(--max-snapshot-memory; 422 beyond), timeouts, and how many requests run at
once (4 per CPU by default; beyond that 503 with Retry-After, at once). A
body must start within --body-timeout and then arrive at --min-body-rate
(408 otherwise); bodies up to 1 MiB are read before their request counts,
larger ones take one of --max-uploads slots.
On SIGTERM or SIGINT (Ctrl-C) it stops accepting connections, lets the
requests in flight finish (at most --drain-timeout) and exits 0.

Exit status: 0 after a clean stop, 1 when requests were still running at
the end of --drain-timeout (they were cut off), 2 for bad flags, an address
that cannot be listened on, or an outcome database that cannot be opened.`,
		Example: `  # Serve on this machine only, then open http://127.0.0.1:8080/
  gpudx serve

  # Serve the team: all interfaces, outcomes in a shared PostgreSQL
  gpudx serve --addr 0.0.0.0:8080 --db postgres://gpudx@db.internal/gpudx

  # Diagnose a log, a gzip log, a log with its environment
  curl -sS --data-binary @train.log http://127.0.0.1:8080/api/v1/diagnose
  curl -sS -H 'Content-Encoding: gzip' --data-binary @train.log.gz http://127.0.0.1:8080/api/v1/diagnose
  jq -n --rawfile log train.log --rawfile env collect_env.txt '{log: $log, env: $env}' |
    curl -sS -H 'Content-Type: application/json' --data-binary @- http://127.0.0.1:8080/api/v1/diagnose

  # A memory snapshot: would a 2 GiB request fit on an 80 GB card?
  curl -sS --data-binary @oom.pickle 'http://127.0.0.1:8080/api/v1/snapshots?request=2GiB&capacity=80GB'

  # Look an error up; report that the first workaround worked
  curl -sS 'http://127.0.0.1:8080/api/v1/search?q=CUBLAS_STATUS_ALLOC_FAILED'
  curl -sS -H 'Content-Type: application/json' -H 'Idempotency-Key: ci-4711' \
    -d '{"entry_id": "cuda/illegal-memory-access", "kind": "workaround", "index": 0, "worked": true}' \
    http://127.0.0.1:8080/api/v1/outcomes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runServe(env, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen on `HOST:PORT` (port 0: any free port; 0.0.0.0:PORT: every interface)")
	f.StringVar(&o.db, "db", "", "outcome database: a SQLite file `PATH` or a postgres:// URL (default: gpudx/outcomes.db in the user's data directory)")
	f.BoolVar(&o.noDB, "no-db", false, "serve without an outcome database (reports answer 503)")
	f.StringArrayVar(&o.kb, "kb", nil, "extra knowledge-base `PATH` (entry file or directory; repeatable; also $GPUDX_KB)")
	f.StringVar(&o.maxLog, "max-log-bytes", "64MiB", "largest log a request may send (`SIZE`, before and after gzip decoding)")
	f.StringVar(&o.maxSnapshot, "max-snapshot-bytes", "4GiB", "largest snapshot a request may send (`SIZE`)")
	f.IntVar(&o.maxConcurrent, "max-concurrent", 0, "requests that may run at once; more get 503 (0: 4 per CPU)")
	f.DurationVar(&o.readHeader, "read-header-timeout", server.DefaultReadHeaderTimeout, "time a client has to send a request's headers")
	f.DurationVar(&o.read, "read-timeout", server.DefaultReadTimeout, "time a client has to send a whole request, body included (a 4 GiB snapshot at 100 Mbit/s takes 6 minutes)")
	f.DurationVar(&o.write, "write-timeout", server.DefaultWriteTimeout, "time from the end of a request's headers to the end of its answer")
	f.DurationVar(&o.idle, "idle-timeout", server.DefaultIdleTimeout, "how long an idle keep-alive connection stays open")
	f.DurationVar(&o.drain, "drain-timeout", server.DefaultDrainTimeout, "on SIGTERM/SIGINT, how long requests in flight may take to finish")
	f.IntVar(&o.maxUploads, "max-uploads", 0, "requests with bodies over 1 MiB that may run at once (0: a quarter of --max-concurrent, at least 2)")
	f.DurationVar(&o.bodyTimeout, "body-timeout", server.DefaultBodyTimeout, "time a client has to start sending a request body")
	f.StringVar(&o.minBodyRate, "min-body-rate", "16KiB", "slowest rate (`SIZE` per second) a request body may arrive at after --body-timeout")
	f.StringVar(&o.snapMemory, "max-snapshot-memory", "4GiB", "most memory reading one uploaded snapshot may hold (`SIZE`); also at most 32 MiB plus 4 bytes per byte of the file")
	f.StringSliceVar(&o.allowedHosts, "allowed-hosts", nil, "host `NAMES` (comma-separated, repeatable; * for any) that writes may be addressed to, besides this server's addresses, localhost and the machine's name")
	f.StringVar(&o.token, "token", "", "require Authorization: Bearer `TOKEN` for writes (default $GPUDX_TOKEN; none when both are empty)")
	return cmd
}

func runServe(env *IO, o serveOpts) error {
	maxLog, err := parseSizeFlag("--max-log-bytes", o.maxLog)
	if err != nil {
		return err
	}
	maxSnap, err := parseSizeFlag("--max-snapshot-bytes", o.maxSnapshot)
	if err != nil {
		return err
	}
	if maxLog == 0 || maxSnap == 0 {
		return usageErr("--max-log-bytes and --max-snapshot-bytes must be sizes above 0")
	}
	rate, err := parseSizeFlag("--min-body-rate", o.minBodyRate)
	if err != nil {
		return err
	}
	snapMem, err := parseSizeFlag("--max-snapshot-memory", o.snapMemory)
	if err != nil {
		return err
	}
	if rate == 0 {
		return usageErr("--min-body-rate must be a size above 0")
	}
	if o.maxUploads < 0 {
		return usageErr("--max-uploads: want 0 (a quarter of --max-concurrent) or more, got %d", o.maxUploads)
	}
	token := o.token
	if token == "" {
		token = env.Getenv("GPUDX_TOKEN")
	}
	if o.maxConcurrent < 0 {
		return usageErr("--max-concurrent: want 0 (4 per CPU) or more, got %d", o.maxConcurrent)
	}
	for name, d := range map[string]time.Duration{"--read-header-timeout": o.readHeader, "--read-timeout": o.read, "--body-timeout": o.bodyTimeout,
		"--write-timeout": o.write, "--idle-timeout": o.idle, "--drain-timeout": o.drain} {
		if d <= 0 {
			return usageErr("%s: want a positive duration such as 30s or 10m, got %v", name, d)
		}
	}
	if o.noDB && o.db != "" {
		return usageErr("--db and --no-db contradict each other: give one")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	svc, closeStore, err := serveService(ctx, env, o)
	if err != nil {
		return err
	}
	defer closeStore()
	svc.SetSnapshotMemory(int64(snapMem))
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		if u := errors.Unwrap(err); u != nil {
			err = u // the *net.OpError repeats the address
		}
		return usageErr("--addr %s: %v", o.addr, err)
	}
	opt := server.Options{
		Web: web.New(svc, web.Options{MaxLogBytes: int64(maxLog), MaxSnapshotBytes: int64(maxSnap), Version: Version}),
		MCP: mcpserver.HTTPHandler(svc, mcpserver.Options{Version: Version}),

		MaxLogBytes: int64(maxLog), MaxSnapshotBytes: int64(maxSnap), MaxConcurrent: o.maxConcurrent,
		ReadHeaderTimeout: o.readHeader, ReadTimeout: o.read, WriteTimeout: o.write,
		IdleTimeout: o.idle, DrainTimeout: o.drain,
		MaxUploads: o.maxUploads, BodyTimeout: o.bodyTimeout, MinBodyRate: int64(rate),
		AllowedHosts: o.allowedHosts, Token: token,
		Logger: slog.New(slog.NewTextHandler(env.Err, nil)),
	}
	srv := server.New(svc, opt)
	fmt.Fprintf(env.Err, "gpudx: serving on %s (web page /, API /api/v1, MCP /mcp); stop with Ctrl-C or SIGTERM\n", serveURL(ln.Addr()))
	if err := srv.Serve(ctx, ln); err != nil {
		if errors.Is(err, server.ErrDrain) {
			return &exitError{ExitFound, fmt.Errorf("stopped: %v; they were cut off", err)}
		}
		return &exitError{ExitInternal, fmt.Errorf("serving: %v", err)}
	}
	fmt.Fprintln(env.Err, "gpudx: stopped")
	return nil
}

// serveService opens the outcome store (unless --no-db) and loads the
// service. The returned func closes the store.
func serveService(ctx context.Context, env *IO, o serveOpts) (svc *service.Service, closeStore func(), err error) {
	closeStore = func() {}
	var st outcome.Store
	if !o.noDB {
		st, err = openStore(ctx, env, o.db)
		if err != nil {
			return nil, nil, usageErr("%v\n(start with --no-db to serve without recording outcomes)", err)
		}
		closeStore = func() {
			if err := st.Close(); err != nil {
				fmt.Fprintf(env.Err, "gpudx: closing the outcome database: %v\n", err)
			}
		}
	}
	svc, err = newService(env, o.kb, st)
	if err != nil {
		closeStore()
		return nil, nil, err
	}
	return svc, closeStore, nil
}

// serveURL is the address to print: a URL a browser can open, with the
// real port when --addr asked for port 0.
func serveURL(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return "http://" + a.String()
	}
	host := ta.IP.String()
	if ta.IP.IsUnspecified() {
		// Every interface: name the loopback one, which works from here.
		return fmt.Sprintf("http://127.0.0.1:%d (every interface, port %d)", ta.Port, ta.Port)
	}
	return "http://" + net.JoinHostPort(host, fmt.Sprint(ta.Port))
}
