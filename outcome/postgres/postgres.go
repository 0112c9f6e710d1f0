// Package postgres keeps outcome reports in PostgreSQL (pgx), which
// several gpudx servers can share.
package postgres

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/gpudx/gpudx/outcome"
	"github.com/gpudx/gpudx/outcome/internal/sqlutil"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgStore keeps reports in PostgreSQL, which several gpudx servers can
// share. The tables live in the first schema of the connection's
// search_path (a search_path parameter in the URL picks another).
type pgStore struct {
	pool   *pgxpool.Pool
	label  string // the URL without its password, for messages
	secret string // the password, masked wherever an error repeats it
}

// pgSchema are the migrations, in order; the gpudx_schema table records
// how many have run. Append to evolve the schema, never edit.
var pgSchema = []string{
	`CREATE TABLE outcome_reports (
		id         BIGSERIAL PRIMARY KEY,
		request_id TEXT UNIQUE,
		entry_id   TEXT NOT NULL,
		kind       TEXT NOT NULL CHECK (kind IN ('workaround', 'dead_end')),
		idx        INTEGER NOT NULL CHECK (idx >= 0),
		worked     BOOLEAN NOT NULL,
		note       TEXT NOT NULL DEFAULT '',
		created_at TIMESTAMPTZ NOT NULL
	);
	CREATE INDEX outcome_reports_entry ON outcome_reports (entry_id);`,
}

// schemaLock is the advisory lock key that serializes schema changes
// between servers starting at once ("gpudx" in ASCII).
const schemaLock = 0x6770756478

// maxConns bounds the connections one store opens.
const maxConns = 8

// Open connects to the PostgreSQL database the postgres:// or
// postgresql:// URL dsn names, and creates or brings up to date its
// schema. Errors name the database without its password.
func Open(ctx context.Context, dsn string) (outcome.Store, error) {
	label, secret := redactURL(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, sqlutil.Wrap(label, "parsing the URL", err, secret)
	}
	if secret == "" {
		secret = cfg.ConnConfig.Password // from a password file or PGPASSWORD
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, sqlutil.Wrap(label, "connecting", err, secret)
	}
	s := &pgStore{pool: pool, label: label, secret: secret}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// userinfo finds the user and password of a URL that url.Parse refuses.
var userinfo = regexp.MustCompile(`^([a-zA-Z]+://[^:/@]*):([^@]*)@`)

// redactURL returns dsn without its password (nor its query, which may
// hold one too), and the password.
func redactURL(dsn string) (label, secret string) {
	u, err := url.Parse(dsn)
	if err != nil {
		if m := userinfo.FindStringSubmatch(dsn); m != nil {
			secret = m[2]
			dsn = m[1] + "@" + dsn[len(m[0]):]
		}
		label, _, _ = strings.Cut(dsn, "?")
		return label, secret
	}
	if u.User != nil {
		secret, _ = u.User.Password()
		u.User = url.User(u.User.Username())
	}
	u.RawQuery = "" // may hold a password too
	return u.String(), secret
}

func (s *pgStore) err(op string, err error) error { return sqlutil.Wrap(s.label, op, err, s.secret) }

// with runs f on a pooled connection, waiting for one when all are busy.
func (s *pgStore) with(ctx context.Context, f func(*pgx.Conn) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.err("connecting", err)
	}
	defer c.Release()
	return f(c.Conn())
}

// migrate runs the migrations this database lacks in one transaction
// holding an advisory lock: two servers starting at once would otherwise
// race on CREATE TABLE IF NOT EXISTS, which is not safe concurrently.
func (s *pgStore) migrate(ctx context.Context) error {
	return s.with(ctx, func(c *pgx.Conn) error {
		tx, err := c.Begin(ctx)
		if err != nil {
			return s.err("connecting", err)
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(schemaLock)); err != nil {
			return s.err("locking the schema", err)
		}
		if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS gpudx_schema (version INTEGER NOT NULL)"); err != nil {
			return s.err("creating the schema", err)
		}
		var v int
		if err := tx.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM gpudx_schema").Scan(&v); err != nil {
			return s.err("reading the schema version", err)
		}
		if v > len(pgSchema) {
			return s.err("", fmt.Errorf("schema version %d is newer than this gpudx knows (%d): upgrade gpudx", v, len(pgSchema)))
		}
		if v == len(pgSchema) {
			return nil
		}
		for i := v; i < len(pgSchema); i++ {
			if _, err := tx.Exec(ctx, pgSchema[i]); err != nil {
				return s.err(fmt.Sprintf("creating schema version %d", i+1), err)
			}
		}
		if _, err := tx.Exec(ctx, "DELETE FROM gpudx_schema"); err != nil {
			return s.err("setting the schema version", err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO gpudx_schema (version) VALUES ($1)", len(pgSchema)); err != nil {
			return s.err("setting the schema version", err)
		}
		return s.err("creating the schema", tx.Commit(ctx))
	})
}

// Record inserts the report in its own transaction (the INSERT commits on
// its own). A concurrent insert of the same request id waits for the
// first to commit and then does nothing, so the comparison that follows
// sees the stored report.
func (s *pgStore) Record(ctx context.Context, r outcome.Report) (dup bool, err error) {
	if err := r.Validate(); err != nil {
		return false, err
	}
	r = sqlutil.Stamp(r)
	err = s.with(ctx, func(c *pgx.Conn) error {
		tag, err := c.Exec(ctx, `INSERT INTO outcome_reports
			(request_id, entry_id, kind, idx, worked, note, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (request_id) DO NOTHING`,
			sqlutil.Nullable(r.RequestID), r.EntryID, string(r.Kind), r.Index, r.Worked, r.Note, r.Time)
		if err != nil {
			return s.err("recording", err)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		var old outcome.Report
		var kind string
		if err := c.QueryRow(ctx, `SELECT entry_id, kind, idx, worked FROM outcome_reports WHERE request_id = $1`,
			r.RequestID).Scan(&old.EntryID, &kind, &old.Index, &old.Worked); err != nil {
			return s.err("reading the earlier report", err)
		}
		old.Kind = outcome.Kind(kind)
		if err := sqlutil.SameAs(old, r); err != nil {
			return err
		}
		dup = true
		return nil
	})
	return dup, err
}

func (s *pgStore) Tallies(ctx context.Context, entryID string) (t map[outcome.Key]outcome.Tally, err error) {
	err = s.with(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, sqlutil.TallySQL("$1"), entryID)
		if err != nil {
			return s.err("reading outcomes", err)
		}
		defer rows.Close()
		t, err = sqlutil.ScanTallies(rows, entryID)
		return s.err("reading outcomes", err)
	})
	return t, err
}

func (s *pgStore) Close() error { s.pool.Close(); return nil }

// String names the database in messages.
func (s *pgStore) String() string { return s.label }
