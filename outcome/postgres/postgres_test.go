package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpudx/gpudx/outcome"
	"github.com/gpudx/gpudx/outcome/internal/storetest"
	"github.com/jackc/pgx/v5"
)

const oom = storetest.OOM

// pgDSN returns GPUDX_TEST_POSTGRES with a search_path naming a fresh
// schema, dropped when the test ends. Without a reachable server the test
// is skipped, or fails when GPUDX_REQUIRE_SERVICES=1 (CI).
func pgDSN(t *testing.T) string {
	t.Helper()
	base := os.Getenv("GPUDX_TEST_POSTGRES")
	unavailable := func(why string) {
		t.Helper()
		if os.Getenv("GPUDX_REQUIRE_SERVICES") == "1" {
			t.Fatalf("PostgreSQL is required (GPUDX_REQUIRE_SERVICES=1): %s", why)
		}
		t.Skipf("PostgreSQL tests skipped: %s (.ci/run starts a server and sets it)", why)
	}
	if base == "" {
		unavailable("GPUDX_TEST_POSTGRES is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		unavailable("cannot connect to GPUDX_TEST_POSTGRES: " + err.Error())
	}
	defer c.Close(ctx)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "gpudx_test_" + hex.EncodeToString(b)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func TestPostgresContract(t *testing.T) { storetest.Contract(t, Open, pgDSN) }

// TestPostgresSchemaRace starts several servers' stores at once on an
// empty schema: the advisory lock must leave one schema and no errors.
func TestPostgresSchemaRace(t *testing.T) {
	dsn := pgDSN(t)
	const n = 6
	var wg sync.WaitGroup
	stores := make([]outcome.Store, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = Open(context.Background(), dsn) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	// Each store writes; every one sees every report.
	for i, st := range stores {
		if _, err := st.Record(context.Background(), outcome.Report{EntryID: oom, Kind: outcome.Workaround, Index: 2, Worked: i%2 == 0}); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range stores {
		storetest.WantTallies(t, st, oom, map[outcome.Key]outcome.Tally{{EntryID: oom, Kind: outcome.Workaround, Index: 2}: {Worked: 3, Failed: 3}})
	}
	var version int
	err := stores[0].(*pgStore).with(context.Background(), func(c *pgx.Conn) error {
		return c.QueryRow(context.Background(), "SELECT version FROM gpudx_schema").Scan(&version)
	})
	if err != nil || version != len(pgSchema) {
		t.Errorf("schema version %d, %v; want one row with %d", version, err, len(pgSchema))
	}
}

// TestPostgresErrors checks that failures name the database without its
// password.
func TestPostgresErrors(t *testing.T) {
	dsn := pgDSN(t)
	u, _ := url.Parse(dsn)
	u.User = url.UserPassword("postgres", "hunter2-secret")
	u.Path = "/gpudx_no_such_db"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tt := range []struct{ name, dsn, want string }{
		// Wrong password or missing database, whichever the server's
		// authentication says first.
		{"unknown database", u.String(), "outcome database postgres://postgres@" + u.Host + "/gpudx_no_such_db: connecting: failed to connect to"},
		{"bad port", "postgres://postgres:hunter2-secret@127.0.0.1:notaport/db", "outcome database postgres://postgres@127.0.0.1:notaport/db: parsing the URL: cannot parse"},
		{"nobody listening", "postgresql://u:hunter2-secret@127.0.0.1:1/db?connect_timeout=5&password=hunter2-secret", "outcome database postgresql://u@127.0.0.1:1/db: connecting: failed to connect to"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := Open(ctx, tt.dsn)
			if err == nil {
				st.Close()
				t.Fatal("opened")
			}
			if !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q\nwant it to start %q, without the password", err, tt.want)
			}
			for e := err; e != nil; e = errorsUnwrap(e) {
				if strings.Contains(e.Error(), "hunter2") {
					t.Errorf("wrapped error %q has the password", e)
				}
			}
		})
	}
}

func errorsUnwrap(err error) error {
	u, ok := err.(interface{ Unwrap() error })
	if !ok {
		return nil
	}
	return u.Unwrap()
}

// TestPostgresKill kills a writer mid-stream: every report it
// acknowledged must be there once.
func TestPostgresKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a writer process")
	}
	dsn := pgDSN(t)
	storetest.CheckAcked(t, Open, storedIDs, dsn, storetest.KillWriter(t, dsn))
}

// TestKillChild is the writer the kill test starts in a child process.
func TestKillChild(t *testing.T) { storetest.KillChild(t, Open) }

func storedIDs(st outcome.Store) (map[string]int, error) {
	ids := map[string]int{}
	err := st.(*pgStore).with(context.Background(), func(c *pgx.Conn) error {
		rows, _ := c.Query(context.Background(), storetest.StoredIDsQuery)
		var id string
		var n int
		_, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error { ids[id] = n; return nil })
		return err
	})
	return ids, err
}
