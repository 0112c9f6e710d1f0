package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"github.com/gpudx/gpudx/internal/sharedtest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

type result struct {
	code     int
	out, err string
}

// run executes gpudx in-process with the given stdin and environment.
func run(t *testing.T, stdin string, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	io := &IO{
		In: strings.NewReader(stdin), Out: &out, Err: &errb,
		Getenv:   func(k string) string { return env[k] },
		Terminal: func(any) bool { return env["TTY"] == "1" },
	}
	code := Run(args, io)
	return result{code, out.String(), errb.String()}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/cli -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the output (go test ./internal/cli -update rewrites it):\n%s", p, got)
	}
}

// TestDiagnoseGolden pins the JSON contract (docs/json-output.md) and the
// human outputs on the bundled examples: text at the 100 columns used when
// the output is not a terminal, and at 80.
func TestDiagnoseGolden(t *testing.T) {
	for _, tt := range []struct {
		name, format, lang, file string
		width                    string
	}{
		{"ddp-oom.80.txt", "text", "en", "ddp-oom.log", "80"},
		{"ddp-oom.zh.80.txt", "text", "zh", "ddp-oom.log", "80"},
		{"xid79-dmesg.80.txt", "text", "en", "xid79-dmesg.log", "80"},
		{"ddp-oom.zh.md", "markdown", "zh", "ddp-oom.log", ""},
		{"ddp-oom.json", "json", "en", "ddp-oom.log", ""},
		{"device-assert.json", "json", "en", "device-assert.log", ""},
		{"xid79-dmesg.json", "json", "en", "xid79-dmesg.log", ""},
		{"clean-training.json", "json", "en", "clean-training.log", ""},
		{"ddp-oom.txt", "text", "en", "ddp-oom.log", ""},
		{"ddp-oom.zh.txt", "text", "zh", "ddp-oom.log", ""},
		{"device-assert.md", "markdown", "en", "device-assert.log", ""},
		{"xid79-dmesg.zh.txt", "text", "zh", "xid79-dmesg.log", ""},
		{"xid79-dmesg.md", "markdown", "en", "xid79-dmesg.log", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"diagnose", "--format", tt.format, "--lang", tt.lang, "../../examples/" + tt.file}
			if tt.width != "" {
				args = append(args, "--width", tt.width)
			}
			r := run(t, "", nil, args...)
			if r.code != 0 || r.err != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.err)
			}
			golden(t, tt.name, r.out)
		})
	}
}

func TestDiagnoseJSONContract(t *testing.T) {
	r := run(t, "", nil, "diagnose", "-f", "json", "../../examples/ddp-oom.log")
	var rep struct {
		Diagnoses []map[string]any `json:"diagnoses"`
		Stats     map[string]any   `json:"stats"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"bytes", "lines", "entries"} {
		if _, ok := rep.Stats[k]; !ok {
			t.Errorf("stats lacks %s", k)
		}
	}
	// The OOM on rank 2, the timeouts it caused on the other ranks, the
	// teardown those trigger, and torchrun's summary of the failed children.
	if len(rep.Diagnoses) != 4 {
		t.Fatalf("%d diagnoses", len(rep.Diagnoses))
	}
	for i, id := range []string{"nccl/async-error-handling-teardown", "nccl/elastic-child-failed"} {
		if d := rep.Diagnoses[2+i]; d["id"] != id || d["root"] != false {
			t.Errorf("diagnosis %d: %v root=%v, want %s caused by the OOM chain", 2+i, d["id"], d["root"], id)
		}
	}
	for _, k := range []string{"id", "signature", "domain", "category", "error_code", "root", "count", "first_line",
		"evidence", "facts", "root_cause", "dead_ends", "workarounds", "leads_to", "verification_tier", "confidence"} {
		if _, ok := rep.Diagnoses[0][k]; !ok {
			t.Errorf("diagnosis lacks %s", k)
		}
	}
	d0, d1 := rep.Diagnoses[0], rep.Diagnoses[1]
	if d0["id"] != "pytorch/cuda-out-of-memory" || d0["root"] != true || d0["first_line"] != float64(21) {
		t.Errorf("first diagnosis %v %v %v", d0["id"], d0["root"], d0["first_line"])
	}
	if d1["id"] != "nccl/watchdog-timeout" || d1["root"] != false || d1["count"] != float64(3) {
		t.Errorf("second diagnosis %v %v %v", d1["id"], d1["root"], d1["count"])
	}
	facts := d0["facts"].(map[string]any)
	fact := func(name string) map[string]any { m, _ := facts[name].(map[string]any); return m }
	if r := fact("requested"); r["type"] != "size" || r["text"] != "4.00 GiB" || r["value"] != float64(4<<30) {
		t.Errorf("requested %v", r)
	}
	if g := fact("gpu"); g["type"] != "int" || g["value"] != float64(2) {
		t.Errorf("gpu %v", g)
	}
	if r := fact("reserved_unallocated"); r["text"] != "4.66 GiB" || r["value"] != float64(5003636900) {
		t.Errorf("reserved_unallocated %v", r)
	}
}

func TestNoDiagnosisIsAnEmptyArray(t *testing.T) {
	r := run(t, "all good\n", nil, "diagnose", "--format", "json")
	if r.code != 0 || !strings.Contains(r.out, `"diagnoses": []`) {
		t.Fatalf("exit %d out %s", r.code, r.out)
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "core.bin")
	os.WriteFile(bin, []byte("\x7fELF\x00\x00\x01CUDA error: an illegal memory access was encountered\n"), 0o644)
	gz := filepath.Join(dir, "log.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte("x\nRuntimeError: CUDA error: an illegal memory access was encountered\n"))
	zw.Close()
	os.WriteFile(gz, buf.Bytes(), 0o644)
	badgz := filepath.Join(dir, "bad.gz")
	os.WriteFile(badgz, buf.Bytes()[:len(buf.Bytes())-12], 0o644)

	found := filepath.Join(dir, "found.log")
	os.WriteFile(found, []byte("step 10\nRuntimeError: CUDA error: misaligned address\n"), 0o644)
	fine := filepath.Join(dir, "fine.log")
	os.WriteFile(fine, []byte("step 10 loss 1.93\n"), 0o644)

	tests := []struct {
		name  string
		stdin string
		env   map[string]string
		args  []string
		code  int
		inOut string
		inErr string
	}{
		// grep's convention: with --exit-code a finding gives 1 even when
		// another input could not be read (named on stderr); 2 only when
		// nothing was found and something failed.
		{"--exit-code, a finding and an unreadable input", "", nil, []string{"diagnose", "--exit-code", found, bin}, 1, "cuda/misaligned-address", "looks like a binary file"},
		{"--exit-code, no finding and an unreadable input", "", nil, []string{"diagnose", "--exit-code", fine, bin}, 2, "No known GPU error found", "looks like a binary file"},
		{"a finding and an unreadable input, no --exit-code", "", nil, []string{"diagnose", found, bin}, 2, "cuda/misaligned-address", "looks like a binary file"},
		{"missing file", "", nil, []string{"diagnose", "/nonexistent/x.log"}, 2, "", "/nonexistent/x.log: no such file or directory"},
		{"bad format", "", nil, []string{"diagnose", "-f", "yaml", "-"}, 2, "", `--format: want text, json, markdown, got "yaml"`},
		{"bad lang", "", nil, []string{"diagnose", "--lang", "fr", "-"}, 2, "", `--lang: want en or zh, got "fr"`},
		{"unknown flag", "", nil, []string{"diagnose", "--nope"}, 2, "", "unknown flag: --nope"},
		{"unknown command", "", nil, []string{"diagnoze"}, 2, "", `unknown command "diagnoze"`},
		{"terminal stdin and no file", "", map[string]string{"TTY": "1"}, []string{"diagnose"}, 2, "", "no input"},
		{"binary file refused", "", nil, []string{"diagnose", bin}, 2, "", "looks like a binary file"},
		{"snapshot given to diagnose", "", nil, []string{"diagnose", "../../snapshot/testdata/hand-p4.pickle"}, 2, "", "a Python pickle, not a log; if it is a PyTorch memory snapshot, read it with: gpudx mem ../../snapshot/testdata/hand-p4.pickle"},
		{"binary file with --binary", "", nil, []string{"diagnose", "--binary", "-f", "json", bin}, 0, `"cuda/illegal-memory-access"`, ""},
		{"gzip read transparently", "", nil, []string{"diagnose", "-f", "json", gz}, 0, `"first_line": 2`, ""},
		{"corrupt gzip reports and still prints", "", nil, []string{"diagnose", "-f", "json", badgz}, 2, `"diagnoses"`, "bad.gz"},
		{"--exit-code with a finding", "CUDA error: misaligned address\n", nil, []string{"diagnose", "--exit-code", "-"}, 1, "cuda/misaligned-address", ""},
		{"--exit-code without a finding", "fine\n", nil, []string{"diagnose", "--exit-code", "-"}, 0, "No known GPU error found", ""},
		{"kb show unknown", "", nil, []string{"kb", "show", "cuda/nope"}, 1, "", `no entry "cuda/nope"`},
		{"kb search nothing", "", nil, []string{"kb", "search", "zzzzqqq"}, 1, "", "no entry matches"},
		{"kb lint missing path", "", nil, []string{"kb", "lint", "/nonexistent"}, 2, "", "no such file"},
		{"kb convert needs --out", "", nil, []string{"kb", "convert", "x"}, 2, "", "--out DIR is required"},
		{"version", "", nil, []string{"version"}, 0, "knowledge base: ", ""},
	}
	// Nothing could be read: no verdict on stdout, only the error.
	if r := run(t, "", nil, "diagnose", bin); r.code != 2 || r.out != "" {
		t.Errorf("only a refused input: exit %d, stdout %q", r.code, r.out)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.stdin, tt.env, tt.args...)
			if r.code != tt.code || !strings.Contains(r.out, tt.inOut) || !strings.Contains(r.err, tt.inErr) {
				t.Errorf("exit %d (want %d)\nstdout: %s\nstderr: %s", r.code, tt.code, r.out, r.err)
			}
		})
	}
}

func TestColour(t *testing.T) {
	log := "CUDA error: misaligned address\n"
	if r := run(t, log, map[string]string{"TTY": "1"}, "diagnose", "-"); !strings.Contains(r.out, "\x1b[") {
		t.Error("no colour on a terminal")
	}
	if r := run(t, log, map[string]string{"TTY": "1", "NO_COLOR": "1"}, "diagnose", "-"); strings.Contains(r.out, "\x1b[") {
		t.Error("colour despite NO_COLOR")
	}
	if r := run(t, log, nil, "diagnose", "-"); strings.Contains(r.out, "\x1b[") {
		t.Error("colour when not a terminal")
	}
	if r := run(t, log, nil, "diagnose", "--color", "always", "-"); !strings.Contains(r.out, "\x1b[") {
		t.Error("no colour with --color always")
	}
}

// TestSeedOverridesAndIsReported: the seed entry loads as it is through
// --kb and GPUDX_KB; replacing the built-in entry is said on stderr.
func TestSeedOverridesAndIsReported(t *testing.T) {
	seed := "../../../shared/seeds/000_2b8f776f5c20f714.txt"
	if _, err := os.Stat(seed); err != nil {
		sharedtest.Missing(t, "seeds")
	}
	// The seed's regex lacks the backtick PyTorch prints before the call,
	// so only its own signature form matches it.
	log := "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling cublasLtMatmulAlgoGetHeuristic\n"
	for _, r := range []result{
		run(t, log, nil, "diagnose", "-f", "json", "--kb", seed, "-"),
		run(t, log, map[string]string{"GPUDX_KB": seed}, "diagnose", "-f", "json", "-"),
	} {
		if r.code != 0 || !strings.Contains(r.err, "cuda/cublas-alloc-failed-cublaslt from "+seed+" overrides the one from knowledge/cuda/cublas-alloc-failed-cublaslt.json") {
			t.Errorf("exit %d stderr %q", r.code, r.err)
		}
		if !strings.Contains(r.out, `"verification_tier": "ai_generated"`) {
			t.Errorf("the seed's entry was not used: %s", r.out[:min(400, len(r.out))])
		}
	}
	r := run(t, "", nil, "kb", "lint", seed)
	if r.code != 1 || !strings.Contains(r.out, "dead_ends[0].action: empty") || !strings.Contains(r.out, "examples: missing") {
		t.Errorf("lint of the seed: exit %d\n%s", r.code, r.out)
	}
}

func TestDeadendsCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("lints 2,522 files; runs without -short")
	}
	corpus := "../../../shared/fixtures/deadends/canons"
	if _, err := os.Stat(corpus); err != nil {
		sharedtest.Missing(t, "fixtures/deadends/canons")
	}
	r := run(t, "", nil, "kb", "lint", corpus)
	lines := strings.Count(r.out, "\n")
	// 0 of the canon regexes fail RE2; 210 do not match their own
	// signature when compiled case-insensitively, as deadends.dev does;
	// 48 hold no literal every match must contain and 2 name a release or
	// GPU series in an item without a condition (warnings).
	if r.code != 1 || lines != 260 || strings.Contains(r.out, "not valid RE2") ||
		!strings.Contains(r.err, "210 problem(s) in 210 of 2522 file(s), 50 warning(s)") {
		t.Errorf("exit %d, %d lines, stderr %q", r.code, lines, r.err)
	}
	out := t.TempDir()
	r = run(t, "", nil, "kb", "convert", "--from", "deadends", corpus+"/cuda", "--out", out)
	if r.code != 0 || !strings.Contains(r.err, "wrote 57 entries") {
		t.Fatalf("convert: exit %d %s", r.code, r.err)
	}
	data, err := os.ReadFile(filepath.Join(out, "cuda", "backward-through-graph-twice.cuda12-linux.json"))
	if err != nil || !strings.Contains(string(data), `"regex": "(?i)Trying to backward through the graph a second time.*Specify retain_graph=True"`) {
		t.Fatalf("converted entry: %v %s", err, data)
	}
	// The converted directory loads as a knowledge base and diagnoses.
	r = run(t, "RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Specify retain_graph=True\n",
		nil, "diagnose", "-f", "json", "--kb", out, "-")
	if r.code != 0 || !strings.Contains(r.out, `"id": "cuda/backward-through-graph-twice.cuda12-linux"`) {
		t.Errorf("diagnose with converted kb: exit %d %s %s", r.code, r.err, r.out[:min(300, len(r.out))])
	}
}

func TestManyFilesAreAttributed(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "rank0.log"), []byte("[rank0]:[E1121 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "rank1.log"), []byte("ok\nRuntimeError: CUDA error: an illegal memory access was encountered\n"), 0o644)
	r := run(t, "", nil, "diagnose", "-f", "json", dir)
	var rep struct {
		Diagnoses []struct {
			ID   string `json:"id"`
			File string `json:"file"`
			Root bool   `json:"root"`
		} `json:"diagnoses"`
		Stats struct{ Files int } `json:"stats"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatal(err, r.err)
	}
	if len(rep.Diagnoses) != 2 || rep.Diagnoses[0].ID != "cuda/illegal-memory-access" || !rep.Diagnoses[0].Root ||
		rep.Diagnoses[0].File != filepath.Join(dir, "rank1.log") || rep.Diagnoses[1].ID != "nccl/watchdog-timeout" || rep.Stats.Files != 2 {
		t.Errorf("%+v", rep)
	}
}

func TestKBCommands(t *testing.T) {
	r := run(t, "", nil, "kb", "search", "CUBLAS_STATUS_ALLOC_FAILED when calling `cublasLtMatmulAlgoGetHeuristic(`")
	if r.code != 0 || !strings.HasPrefix(r.out, "cuda/cublas-alloc-failed-cublaslt") {
		t.Errorf("search: %s", r.out)
	}
	r = run(t, "", nil, "kb", "search", "GPU has fallen off the bus")
	if !strings.HasPrefix(r.out, "driver/xid-79-fallen-off-bus") {
		t.Errorf("search: %s", r.out)
	}
	r = run(t, "", nil, "kb", "list", "--domain", "nccl", "-f", "json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil || len(rows) < 4 {
		t.Errorf("list: %v %d", err, len(rows))
	}
	for _, row := range rows {
		if row["domain"] != "nccl" {
			t.Errorf("list --domain nccl gave %v", row["id"])
		}
	}
	r = run(t, "", nil, "kb", "show", "--lang", "zh", "cuda/misaligned-address")
	if r.code != 0 || !strings.Contains(r.out, "不要浪费时间") {
		t.Errorf("show zh: %s", r.out)
	}
	if testing.Short() {
		return // linting the built-in base takes seconds; knowledge.TestLintClean does it too
	}
	r = run(t, "", nil, "kb", "lint")
	if r.code != 0 || !strings.Contains(r.err, "no problems") {
		t.Errorf("lint of the built-in base: %d %s %s", r.code, r.out, r.err)
	}
}

func TestHelpTeaches(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"diagnose", "--help"}, {"kb", "--help"}, {"kb", "lint", "--help"},
		{"env", "--help"}, {"kb", "show", "--help"}, {"kb", "search", "--help"}, {"kb", "list", "--help"}, {"kb", "convert", "--help"}, {"version", "--help"},
		{"report", "--help"}, {"serve", "--help"}, {"mcp", "--help"}, {"mem", "--help"}} {
		r := run(t, "", nil, args...)
		if r.code != 0 || !strings.Contains(r.out, "Examples:") || !strings.Contains(r.out, "Usage:") {
			t.Errorf("%v: exit %d, no Examples/Usage:\n%s", args, r.code, r.out)
		}
	}
}

// The reasoning parts of the JSON report: environment from the log and
// from --env, ranks, the memory arithmetic, and items that do not apply
// kept with the reason.
func TestDiagnoseReasons(t *testing.T) {
	r := run(t, "", nil, "diagnose", "-f", "json", "--env", "testdata/collect_env.txt", "../../examples/ddp-oom.log")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	var rep struct {
		Environment map[string]any `json:"environment"`
		Ranks       map[string]any `json:"ranks"`
		Diagnoses   []struct {
			ID     string         `json:"id"`
			Memory map[string]any `json:"memory"`
			Why    []string       `json:"why"`
			Work   []struct {
				Applies bool   `json:"applies"`
				Status  string `json:"condition_status"`
				Reason  string `json:"reason"`
			} `json:"workarounds"`
		} `json:"diagnoses"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatal(err)
	}
	// NCCL from the log's own version line; torch and the driver from --env.
	e := rep.Environment
	if e["nccl"] != "2.21.5" || e["torch"] != "2.5.1+cu124" || e["driver"] != "550.54.15" || e["os"] != "linux" {
		t.Errorf("environment %v", e)
	}
	if rep.Ranks["first_failed"] != float64(2) || len(rep.Ranks["only_waited"].([]any)) != 3 {
		t.Errorf("ranks %v", rep.Ranks)
	}
	d := rep.Diagnoses[0]
	if d.Memory["verdict"] != "fragmentation" || d.Memory["requested"] != float64(4<<30) {
		t.Errorf("memory %v", d.Memory)
	}
	last := d.Work[len(d.Work)-1]
	if last.Applies || last.Status != "fails" || last.Reason != "facts.other_processes = 0 B" {
		t.Errorf("last workaround %+v", last)
	}
	if d.Work[0].Status != "holds" {
		t.Errorf("first workaround %+v", d.Work[0])
	}
	if len(d.Why) == 0 || d.Why[0] != "root: nothing found before it leads to it" {
		t.Errorf("why %q", d.Why)
	}
}

func TestExplainAndEnvCommand(t *testing.T) {
	r := run(t, "", nil, "diagnose", "--explain", "--width", "0", "../../examples/ddp-oom.log")
	if !strings.Contains(r.out, "Why ranked here:\n    - after pytorch/cuda-out-of-memory: the knowledge base says pytorch/cuda-out-of-memory leads to nccl/watchdog-timeout") {
		t.Errorf("--explain output:\n%s", r.out)
	}
	if strings.Contains(run(t, "", nil, "diagnose", "../../examples/ddp-oom.log").out, "Why ranked here") {
		t.Error("explanations without --explain")
	}
	r = run(t, "", nil, "env", "--file", "testdata/collect_env.txt")
	for _, want := range []string{"PyTorch                2.5.1+cu124", "NVIDIA driver          550.54.15", "GPU 3                  NVIDIA A100-SXM4-80GB"} {
		if r.code != 0 || !strings.Contains(r.out, want) {
			t.Errorf("gpudx env --file lacks %q:\n%s%s", want, r.out, r.err)
		}
	}
	r = run(t, "", nil, "env", "--file", "testdata/missing.txt")
	if r.code != 2 || !strings.Contains(r.err, "--file testdata/missing.txt") {
		t.Errorf("missing --file: exit %d, %q", r.code, r.err)
	}
	r = run(t, "", nil, "diagnose", "--env", "testdata/missing.txt", "../../examples/ddp-oom.log")
	if r.code != 2 {
		t.Errorf("missing --env: exit %d", r.code)
	}
	bin := filepath.Join(t.TempDir(), "core")
	if err := os.WriteFile(bin, []byte("\x7fELF\x00\x00binary"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{bin, t.TempDir()} {
		r = run(t, "", nil, "env", "--file", bad)
		if r.code != 2 || !strings.Contains(r.err, "--file "+bad+": ") {
			t.Errorf("env --file %s: exit %d, %q", bad, r.code, r.err)
		}
	}
	// Live collection never fails, whatever is installed. It runs Python
	// and nvidia-smi, seconds each.
	if testing.Short() {
		return
	}
	if r = run(t, "", nil, "env", "-f", "json"); r.code != 0 {
		t.Errorf("gpudx env: exit %d %s", r.code, r.err)
	}
}

// With --binary, NUL bytes are read as spaces and never reach the text
// (they did, in the root cause's headline and the evidence).
func TestBinaryNoNUL(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "core.bin")
	os.WriteFile(bin, []byte("\x7fELF\x00\x00\x01\nRuntimeError: CUDA error: out of memory\x00 in step 3\n"), 0o644)
	for _, format := range []string{"text", "json", "markdown"} {
		r := run(t, "", nil, "diagnose", "--binary", "-f", format, bin)
		if r.code != 0 || strings.Contains(r.out, "\x00") || strings.Contains(r.out, `\u0000`) {
			t.Errorf("%s: exit %d, NUL in the output: %q", format, r.code, r.out)
		}
		if !strings.Contains(r.out, "RuntimeError: CUDA error: out of memory  in step 3") {
			t.Errorf("%s: the line is not there with a space for the NUL: %q", format, r.out)
		}
	}
}
