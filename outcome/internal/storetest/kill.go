package storetest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/gpudx/gpudx/outcome"
)

// killEnv hands the child writer of a kill test its database.
const killEnv = "GPUDX_OUTCOME_KILL_DSN"

// killAfter is how many acknowledged reports the parent waits for before
// it kills the writer.
const killAfter = 200

// KillChild is the writer of the kill tests, run by a test named
// TestKillChild in a child process: it records reports in a loop and
// prints each request id only after Record returned. Run on its own it
// does nothing.
func KillChild(t *testing.T, openStore Opener) {
	dsn := os.Getenv(killEnv)
	if dsn == "" {
		t.Skip("the writer of the kill tests; it runs only in their child process")
	}
	st, err := openStore(context.Background(), dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	for i := range 1_000_000 {
		r := outcome.Report{RequestID: fmt.Sprintf("kill-%07d", i), EntryID: Watchdog, Kind: outcome.Workaround, Index: i % 4, Worked: i%3 == 0}
		if _, err := st.Record(context.Background(), r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Fprintf(os.Stdout, "ack %s\n", r.RequestID) // os.Stdout is not buffered
	}
	os.Exit(4) // never reached before the kill
}

// KillWriter runs TestKillChild on dsn, SIGKILLs it after killAfter
// acknowledgements and returns every id it acknowledged, including those
// still in the pipe when it died.
func KillWriter(t *testing.T, dsn string) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), killEnv+"="+dsn)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	rd := bufio.NewReader(out)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			break // EOF; a line cut short by the kill was never acknowledged
		}
		if id, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "ack "); ok {
			acked = append(acked, id)
			if len(acked) == killAfter {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("writer ended with %v before it was killed, after %d acks; stderr:\n%s", err, len(acked), stderr.String())
	}
	return acked
}

// CheckAcked reopens the database and checks that every acknowledged
// report is stored exactly once, and nothing else but the one report that
// may have been written when the kill came. storedIDs counts the stored
// reports by request id.
func CheckAcked(t *testing.T, openStore Opener, storedIDs func(outcome.Store) (map[string]int, error), dsn string, acked []string) outcome.Store {
	t.Helper()
	st, err := openStore(context.Background(), dsn)
	if err != nil {
		t.Fatalf("reopening after the kill: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	stored, err := storedIDs(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range acked {
		if stored[id] != 1 {
			t.Errorf("acknowledged report %s is stored %d times", id, stored[id])
		}
	}
	if len(stored) < len(acked) || len(stored) > len(acked)+1 {
		t.Errorf("%d reports stored, %d acknowledged", len(stored), len(acked))
	}
	tallies, err := st.Tallies(context.Background(), Watchdog)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range tallies {
		n += c.N()
	}
	if n != len(stored) {
		t.Errorf("tallies count %d reports, the table holds %d", n, len(stored))
	}
	t.Logf("%d reports acknowledged before and after the kill, %d stored", len(acked), len(stored))
	return st
}

// StoredIDsQuery counts the stored reports by request id.
const StoredIDsQuery = "SELECT request_id, COUNT(*) FROM outcome_reports GROUP BY request_id"
