package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestReport records outcomes one after another in a fresh database and
// checks each answer in full.
func TestReport(t *testing.T) {
	db := filepath.Join(t.TempDir(), "outcomes.db")
	const id = "cuda/device-side-assert"
	for _, s := range []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		// Workarounds 1 to 3 are checks (no rate); 4 is a fix: (6 + 1) / 11 = 64%.
		{"first report", []string{"--workaround", "4", "--worked"}, 0, `Recorded: cuda/device-side-assert workaround 4 worked.
  4. If the ids come from a tokenizer that gained tokens, resize the model's embedding matrix to the tokenizer
     works ~60%, estimate → ≈64%, estimate + 1 report with your report; 1 worked, 0 failed; curated rate counts as 10 reports
Database: DB
`, ""},
		// (6 + 1) / 12 = 58%: the rate before it was (6 + 1) / 11 = 64%.
		{"second report", []string{"--workaround", "4", "--failed", "--request-id", "job-17", "--note", "labels were fine"}, 0, `Recorded: cuda/device-side-assert workaround 4 failed.
  4. If the ids come from a tokenizer that gained tokens, resize the model's embedding matrix to the tokenizer
     works ≈64%, estimate + 1 report → ≈58%, estimate + 2 reports with your report; 1 worked, 1 failed; curated rate counts as 10 reports
Database: DB
`, ""},
		{"retry of the second", []string{"--workaround", "4", "--failed", "--request-id", "job-17"}, 0, `Already recorded (request id job-17): counted once.
  4. If the ids come from a tokenizer that gained tokens, resize the model's embedding matrix to the tokenizer
     works ~60%, estimate → ≈58%, estimate + 2 reports; 1 worked, 1 failed; curated rate counts as 10 reports
Database: DB
`, ""},
		{"the same id saying something else", []string{"--workaround", "4", "--worked", "--request-id", "job-17"}, 2, "",
			`gpudx: request id already used for a different report: "job-17" was stored for cuda/device-side-assert workaround 4 failed, not cuda/device-side-assert workaround 4 worked: give this report a new --request-id` + "\n"},
		// A check has no rate; a report about it is counted all the same.
		{"check", []string{"--workaround", "1", "--worked"}, 0, `Recorded: cuda/device-side-assert workaround 1 worked.
  1. Read the kernel assert line printed above the traceback: it names the kernel file and the failed condition
     a check (to find out): it finds out what is wrong and has no success rate; 1 report
Database: DB
`, ""},
		// A dead end's rate is a fail rate: (9.5 + 1) / 11 = 95%.
		{"dead end confirmed", []string{"--dead-end", "2", "--failed"}, 0, `Recorded: cuda/device-side-assert dead end 2 failed.
  ✗ 2. Catch the exception (or call torch.cuda.empty_cache()) and keep training in the same process
     fails ~95%, estimate → ≈95%, estimate + 1 report with your report; 0 worked, 1 failed; curated rate counts as 10 reports
Database: DB
`, ""},
		// (9 + 0) / 11 = 82%.
		{"dead end that worked", []string{"--dead-end", "4", "--worked"}, 0, `Recorded: cuda/device-side-assert dead end 4 worked.
  ✗ 4. Reinstall the NVIDIA driver, CUDA toolkit or PyTorch
     fails ~90%, estimate → ≈82%, estimate + 1 report with your report; 1 worked, 0 failed; curated rate counts as 10 reports
Database: DB
`, ""},
	} {
		t.Run(s.name, func(t *testing.T) {
			r := run(t, "", nil, append([]string{"report", id, "--db", db}, s.args...)...)
			if r.code != s.code || strings.ReplaceAll(r.out, db, "DB") != s.out || r.err != s.err {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.out, r.err, s.code, s.out, s.err)
			}
		})
	}
	// The listing shows every item with its number and rate.
	r := run(t, "", nil, "report", id, "--db", db)
	if r.code != 0 || r.err != "" {
		t.Fatalf("listing: exit %d, %s", r.code, r.err)
	}
	golden(t, "report-list.txt", strings.ReplaceAll(r.out, db, "DB"))

	r = run(t, "", nil, "report", id, "--db", db, "--format", "json")
	var list struct {
		EntryID     string `json:"entry_id"`
		PriorWeight int    `json:"prior_weight"`
		Workarounds []struct {
			Number, Index int
			Rate          struct{ Reports, Worked, Failed int }
			Check         bool
			Basis         string
		} `json:"workarounds"`
		DeadEnds []struct{ Number int } `json:"dead_ends"`
	}
	if err := json.Unmarshal([]byte(r.out), &list); err != nil {
		t.Fatal(err)
	}
	if w := list.Workarounds; list.EntryID != id || list.PriorWeight != 10 || len(w) != 4 || len(list.DeadEnds) != 4 ||
		w[3].Number != 4 || w[3].Index != 3 || w[3].Rate.Reports != 2 || w[3].Rate.Worked != 1 || w[1].Rate.Reports != 0 ||
		!w[0].Check || w[0].Basis != "" || w[3].Check || w[3].Basis != "estimate" {
		t.Errorf("JSON listing: %+v", list)
	}

	r = run(t, "", nil, "report", id, "--db", db, "--workaround", "4", "--worked", "-f", "json", "--request-id", "j")
	var rec struct {
		Duplicate bool
		Database  string
		Report    map[string]any
		Item      struct {
			Number int
			Kind   string
			Rate   struct{ Blended float64 }
		}
	}
	if err := json.Unmarshal([]byte(r.out), &rec); err != nil {
		t.Fatal(err)
	}
	// (6 + 2) / 13: the third report on workaround 4.
	if rec.Duplicate || rec.Database != db || rec.Report["index"] != float64(3) || rec.Report["request_id"] != "j" ||
		rec.Item.Number != 4 || rec.Item.Kind != "workaround" || rec.Item.Rate.Blended != 8.0/13 {
		t.Errorf("JSON record: %+v", rec)
	}
}

// TestReportUsage checks that mistakes are usage errors that say what
// exists, and create no database.
func TestReportUsage(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "outcomes.db")
	for _, tt := range []struct {
		name string
		args []string
		err  string
	}{
		{"no entry", nil, "gpudx: accepts 1 arg(s), received 0\nRun 'gpudx report --help' for usage.\n"},
		{"unknown entry", []string{"nccl/watchdog", "--workaround", "1", "--worked"},
			"gpudx: no entry \"nccl/watchdog\"; the closest are:\n  nccl/watchdog-timeout\n  nccl/communicator-aborted\n  nccl/heartbeat-monitor\n  nccl/async-error-handling-teardown\n  nccl/elastic-child-failed\n(gpudx kb search finds others)\n"},
		{"nothing like it", []string{"zzz/qqq"}, "gpudx: no entry \"zzz/qqq\" (gpudx kb list shows them all)\n"},
		{"workaround out of range", []string{"cuda/device-side-assert", "--workaround", "5", "--worked"},
			"gpudx: --workaround 5: cuda/device-side-assert has 4 workarounds:\n" +
				"  1. Read the kernel assert line printed above the traceback: it names the kernel file and the failed condition\n" +
				"  2. Rerun once with synchronous kernel launches so the traceback points at the failing op\n" +
				"  3. Check the indices against their bounds on the host before the op (or run the step on CPU, where the same bug raises a readable IndexError)\n" +
				"  4. If the ids come from a tokenizer that gained tokens, resize the model's embedding matrix to the tokenizer\n"},
		{"dead end out of range", []string{"pytorch/cuda-out-of-memory", "--dead-end", "9", "--failed"},
			"gpudx: --dead-end 9: pytorch/cuda-out-of-memory has 4 dead ends:\n" +
				"  1. Call torch.cuda.empty_cache() in the except handler (or before the failing line) and retry the same batch\n" +
				"  2. Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True when 'reserved by PyTorch but unallocated' is small compared with the request\n" +
				"  3. Tune allocator options (expandable_segments, max_split_size_mb) when the request is larger than the whole GPU\n" +
				"  4. Switch to the new variable name PYTORCH_ALLOC_CONF=expandable_segments:True on PyTorch 2.9.x\n"},
		{"zero", []string{"cuda/device-side-assert", "--workaround", "0", "--worked"}, "gpudx: --workaround 0: items are numbered from 1\n"},
		{"both items", []string{"cuda/device-side-assert", "--workaround", "1", "--dead-end", "1", "--worked"}, "gpudx: give --workaround N or --dead-end N, not both\n"},
		{"no result", []string{"cuda/device-side-assert", "--workaround", "1"}, "gpudx: say whether it fixed the error: --worked or --failed\n"},
		{"both results", []string{"cuda/device-side-assert", "--workaround", "1", "--worked", "--failed"}, "gpudx: give --worked or --failed, not both\n"},
		{"result without item", []string{"cuda/device-side-assert", "--failed"},
			"gpudx: --failed needs the item it is about: --workaround N or --dead-end N\nRun 'gpudx report cuda/device-side-assert' to see the numbers.\n"},
		{"note without item", []string{"cuda/device-side-assert", "--note", "x"},
			"gpudx: --note needs the item it is about: --workaround N or --dead-end N\nRun 'gpudx report cuda/device-side-assert' to see the numbers.\n"},
		{"long note", []string{"cuda/device-side-assert", "--workaround", "1", "--worked", "--note", strings.Repeat("n", 2001)}, "gpudx: note is longer than 2000 bytes\n"},
		{"format", []string{"cuda/device-side-assert", "--format", "markdown"}, "gpudx: --format: want text, json, got \"markdown\"\n"},
		{"not a number", []string{"cuda/device-side-assert", "--workaround", "one"},
			"gpudx: invalid argument \"one\" for \"--workaround\" flag: strconv.ParseInt: parsing \"one\": invalid syntax\nRun 'gpudx report --help' for usage.\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", map[string]string{"XDG_DATA_HOME": dir}, append(append([]string{"report"}, tt.args...), "--db", db)...)
			if r.code != 2 || r.out != "" || r.err != tt.err {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 2, stderr:\n%s", r.code, r.out, r.err, tt.err)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("mistakes created %v", entries)
	}
	// A database that cannot be opened.
	r := run(t, "", nil, "report", "cuda/device-side-assert", "--workaround", "1", "--worked", "--db", dir)
	if want := "gpudx: --db: outcome database " + dir + ": is a directory\n"; r.code != 2 || r.err != want {
		t.Errorf("--db a directory: exit %d, %q; want %q", r.code, r.err, want)
	}
}

func TestReportHelp(t *testing.T) {
	r := run(t, "", nil, "report", "--help")
	for _, want := range []string{"Usage:\n  gpudx report ENTRY_ID", "Examples:\n", "gpudx report pytorch/cuda-out-of-memory --workaround 1 --worked\n", "--request-id ID"} {
		if r.code != 0 || !strings.Contains(r.out, want) {
			t.Errorf("report --help: exit %d, lacks %q", r.code, want)
		}
	}
}

// TestReportDefaultDB checks the database in the data directory: a
// listing does not create it, the first report does, and diagnose reads
// it without --db.
func TestReportDefaultDB(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"XDG_DATA_HOME": dir, "HOME": "/nonexistent"}
	path := filepath.Join(dir, "gpudx", "outcomes.db")
	r := run(t, "", env, "report", "pytorch/cuda-out-of-memory")
	if r.code != 0 || !strings.Contains(r.out, "\nDatabase: "+path+" (no reports yet)\n") {
		t.Errorf("listing: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the listing created %s (%v)", path, err)
	}
	r = run(t, "", env, "diagnose", "../../examples/ddp-oom.log")
	if r.code != 0 || strings.Contains(r.out, "estimate + ") {
		t.Errorf("diagnose before any report: exit %d %s", r.code, r.err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("diagnose created %s (%v)", path, err)
	}
	for _, worked := range []string{"--worked", "--worked", "--failed"} {
		if r := run(t, "", env, "report", "pytorch/cuda-out-of-memory", "--workaround", "1", worked); r.code != 0 {
			t.Fatalf("report: exit %d %s", r.code, r.err)
		}
	}
	// (6 + 2) / 13 = 62%.
	r = run(t, "", env, "diagnose", "--width", "0", "../../examples/ddp-oom.log")
	want := "    1. Enable expandable segments when 'reserved by PyTorch but unallocated' is large (works ≈62%, estimate + 3 reports)\n"
	if r.code != 0 || !strings.Contains(r.out, want) {
		t.Errorf("diagnose with the default database: exit %d %s\n%s", r.code, r.err, r.out)
	}
}

// TestDiagnoseBrokenDefaultDB checks that a default database that cannot
// be read costs a warning, not the diagnosis.
func TestDiagnoseBrokenDefaultDB(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gpudx", "outcomes.db")
	if err := os.MkdirAll(path, 0o700); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", map[string]string{"XDG_DATA_HOME": dir}, "diagnose", "../../examples/ddp-oom.log")
	want, err := os.ReadFile("testdata/ddp-oom.txt")
	if err != nil {
		t.Fatal(err)
	}
	if r.code != 0 || r.out != string(want) || r.err != "gpudx: warning: rates without reported outcomes: outcome database "+path+": is a directory\n" {
		t.Errorf("exit %d, stderr %q, output as the golden: %v", r.code, r.err, r.out == string(want))
	}
}

// TestDiagnoseDB checks that diagnose --db shows blended rates, in each
// format, and never creates a database.
func TestDiagnoseDB(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "team.db")
	const id = "pytorch/cuda-out-of-memory"
	for _, args := range [][]string{
		{"--workaround", "3", "--worked"}, {"--workaround", "3", "--worked"},
		{"--dead-end", "1", "--failed"}, {"--dead-end", "1", "--worked"}, {"--dead-end", "1", "--failed"},
	} {
		if r := run(t, "", nil, append([]string{"report", id, "--db", db}, args...)...); r.code != 0 {
			t.Fatalf("report %v: exit %d %s", args, r.code, r.err)
		}
	}
	for _, tt := range []struct {
		format string
		want   []string
	}{
		// Workaround 3: (7.5 + 2) / 12 = 79%. Dead end 1: (8.5 + 2) / 13 = 81%.
		{"text", []string{
			"    2. Lower the peak memory of a step: smaller micro-batch with gradient accumulation, activation checkpointing, no autograd graph for evaluation (works ≈79%, estimate + 2 reports) [item 3]\n",
			"    ✗ 1. Call torch.cuda.empty_cache() in the except handler (or before the failing line) and retry the same batch (fails ≈81%, estimate + 3 reports)\n",
			"    3. Stop keeping autograd history and dead tensors alive across iterations (works ~35%, estimate) [item 4]\n",
		}},
		{"markdown", []string{
			"- **2.** Lower the peak memory of a step: smaller micro-batch with gradient accumulation, activation checkpointing, no autograd graph for evaluation (works ≈79%, estimate + 2 reports) [item 3] [1](",
			"- ✗ **1.** Call torch.cuda.empty_cache() in the except handler (or before the failing line) and retry the same batch — ",
			" (fails ≈81%, estimate + 3 reports) [1](",
		}},
	} {
		r := run(t, "", nil, "diagnose", "--db", db, "-f", tt.format, "--width", "0", "../../examples/ddp-oom.log")
		if r.code != 0 || r.err != "" {
			t.Fatalf("%s: exit %d %s", tt.format, r.code, r.err)
		}
		for _, w := range tt.want {
			if !strings.Contains(r.out, w) {
				t.Errorf("%s output lacks %q:\n%s", tt.format, w, r.out)
			}
		}
	}
	r := run(t, "", nil, "diagnose", "--db", db, "--lang", "zh", "--width", "0", "../../examples/ddp-oom.log")
	if want := "（返回 block(x)，反向时重算）；评估放在 torch.no_grad() 中。 (成功率 约 79%，估计 + 2 份反馈) [条目第 3 项]\n"; !strings.Contains(r.out, want) {
		t.Errorf("Chinese output lacks %q:\n%s", want, r.out)
	}
	r = run(t, "", nil, "diagnose", "--db", db, "-f", "json", "../../examples/ddp-oom.log")
	var rep struct {
		Diagnoses []struct {
			ID          string
			Workarounds []struct {
				Index    int
				Observed *struct {
					Blended float64
					Reports int
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range rep.Diagnoses[0].Workarounds {
		if w.Observed == nil {
			t.Errorf("workaround %d has no observed rate", w.Index)
		} else if w.Index == 2 {
			found = w.Observed.Reports == 2 && w.Observed.Blended == 9.5/12
		}
	}
	if rep.Diagnoses[0].ID != id || !found {
		t.Errorf("JSON observed rates: %+v", rep.Diagnoses[0])
	}
	missing := filepath.Join(dir, "typo.db")
	r = run(t, "", nil, "diagnose", "--db", missing, "../../examples/ddp-oom.log")
	if want := "gpudx: --db: no outcome database at " + missing + " yet (gpudx report creates it)\n"; r.code != 2 || r.out != "" || r.err != want {
		t.Errorf("diagnose --db missing: exit %d, %q, want %q", r.code, r.err, want)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("diagnose created %s (%v)", missing, err)
	}
}

// TestReportPostgres records through the command into PostgreSQL, in a
// schema of its own.
func TestReportPostgres(t *testing.T) {
	base := os.Getenv("GPUDX_TEST_POSTGRES")
	skip := func(why string) {
		if os.Getenv("GPUDX_REQUIRE_SERVICES") == "1" {
			t.Fatalf("PostgreSQL is required (GPUDX_REQUIRE_SERVICES=1): %s", why)
		}
		t.Skipf("PostgreSQL test skipped: %s (.ci/run starts a server and sets GPUDX_TEST_POSTGRES)", why)
	}
	if base == "" {
		skip("GPUDX_TEST_POSTGRES is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		skip(err.Error())
	}
	defer c.Close(context.Background())
	b := make([]byte, 6)
	rand.Read(b)
	schema := "gpudx_cli_" + hex.EncodeToString(b)
	if _, err := c.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	defer c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	for range 2 {
		r := run(t, "", nil, "report", "nccl/watchdog-timeout", "--workaround", "4", "--failed", "--request-id", "pg-1", "--db", u.String())
		if r.code != 0 || r.err != "" {
			t.Fatalf("exit %d %s", r.code, r.err)
		}
	}
	r := run(t, "", nil, "report", "nccl/watchdog-timeout", "--db", u.String())
	// (6 + 0) / 11 = 55%, counted once; the database named without its password.
	for _, want := range []string{
		"    4. If one rank legitimately does long non-collective work (checkpoint save, evaluation, dataset preprocessing on rank 0), give the group a longer timeout or move that work so all ranks stay in step\n       works ~60%, estimate → ≈55%, estimate + 1 report; 0 worked, 1 failed; curated rate counts as 10 reports\n",
		"\nDatabase: postgres://postgres@" + u.Host + "/gpudx_test\n",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("listing lacks %q:\n%s", want, r.out)
		}
	}
}
