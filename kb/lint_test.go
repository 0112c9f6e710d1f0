package kb

import (
	"github.com/gpudx/gpudx/internal/sharedtest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func readFixture(t *testing.T, name string) File {
	t.Helper()
	p := filepath.Join("testdata", "lint", "cuda", name+".json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return File{Path: filepath.ToSlash(p), Data: data}
}

func problemStrings(ps []Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = strings.TrimPrefix(p.String(), "testdata/lint/cuda/")
	}
	return out
}

// TestLintRules lints one fixture per rule, each alone or beside the valid
// entry, and checks the exact problems reported.
func TestLintRules(t *testing.T) {
	tests := []struct {
		fixture string
		besides bool // lint together with cuda/valid
		want    []string
	}{
		{"valid", false, nil},
		{"missing-field", false, []string{`missing-field.json: root_cause: missing`}},
		{"wrong-type", false, []string{`wrong-type.json: confidence: must be a number`}},
		{"unknown-field", false, []string{`unknown-field.json: severity: unknown field`}},
		{"bad-enum", false, []string{
			`bad-enum.json: category: "oops" is not one of resource_error, version_mismatch, install_error, configuration_error, programming_error, hardware_fault, communication_error, numerical_error, internal_error`,
			`bad-enum.json: verification_tier: "verified" is not one of ai_generated, docs_verified, reproduced, community_confirmed`}},
		{"bad-rate", false, []string{`bad-rate.json: confidence: 1.5 is outside [0,1]`, `bad-rate.json: dead_ends[0].fail_rate: -0.1 is outside [0,1]`}},
		{"bad-date", false, []string{`bad-date.json: first_seen: "2024-13-01" is not a YYYY-MM-DD date`, `bad-date.json: last_updated: "yesterday" is not a YYYY-MM-DD date`}},
		{"id-mismatch", false, []string{`id-mismatch.json: id: "cuda/something-else" does not match the file's path (want <root>/cuda/something-else.json)`}},
		{"domain-mismatch", false, []string{`domain-mismatch.json: domain: "nccl" differs from the id's domain "cuda"`}},
		{"bad-regex", false, []string{"bad-regex.json: regex: not valid RE2: error parsing regexp: invalid named capture: `(?<!x)illegal`"}},
		{"example-no-match", false, []string{`example-no-match.json: examples.match[2]: regex does not match "CUDA error: illegal address"`}},
		{"example-wrapped", false, []string{`example-wrapped.json: examples.match[2]: regex matches only across lines (gpudx matches line by line) "CUDA error: an illegal memory\naccess was encountered"`}},
		{"example-matches-near-miss", false, []string{`example-matches-near-miss.json: examples.no_match[1]: regex matches "an illegal memory access was encountered in kernel foo"`}},
		{"too-few-examples", false, []string{
			`too-few-examples.json: examples.match: 1 examples, want at least 2 real forms of the message`,
			`too-few-examples.json: examples.no_match: no near miss, want at least 1`}},
		{"graph-unknown-id", false, []string{
			`graph-unknown-id.json: transition_graph.leads_to[0]: no entry "cuda/does-not-exist"`,
			`graph-unknown-id.json: transition_graph.frequently_confused_with[0]: no entry "nccl/nope"`}},
		{"bad-condition", false, []string{
			`bad-condition.json: dead_ends[0].condition: not an expression over facts and env: condition "module parameters shown on cpu": unexpected token Identifier("parameters") at column 8`,
			`bad-condition.json: workarounds[0].condition: facts.nope is not a named group of the regex`,
			`bad-condition.json: workarounds[0].condition: env.gpu_name is not provided (known: torch, torch_cuda, cuda, driver_cuda, driver, cudnn, nccl, python, jax, jaxlib, tensorflow, triton, os, gpu, gpu_memory, gpu_capability, gpus)`}},
		{"bad-condition-type", false, []string{
			`bad-condition-type.json: workarounds[0].condition: on example "RuntimeError: driver version 470.82.01 is too old": cannot evaluate: compare versions with a quoted version such as '2.10', not 500`}},
		{"xid-no-operator", false, []string{`xid-no-operator.json: operator: missing: an Xid entry says severity, fault, drain and the next step`}},
		{"bad-operator", false, []string{
			`bad-operator.json: operator.extra: unknown field`,
			`bad-operator.json: operator.severity: "fatal" is not one of critical, error, warning, info`,
			`bad-operator.json: operator.drain: "maybe" is not one of yes, no, if_repeats`,
			`bad-operator.json: operator.action: "REBOOT" is not an NVIDIA resolution bucket (RESTART_APP, RESET_GPU, RESTART_BM, IGNORE, CONTACT_SUPPORT, WORKFLOW_*) or empty`,
			`bad-operator.json: operator.next: empty: say the operator's next step, in English and Chinese (next_zh)`}},
		{"good-operator", false, nil},
		{"zh-length", false, []string{`zh-length.json: dead_ends_zh: 2 items for 1 dead ends`, `zh-length.json: workarounds[0].zh: empty: the Chinese text of the workaround (inline zh, or its place in workarounds_zh)`}},
		{"empty-action", false, []string{
			`empty-action.json: dead_ends[0].action: empty: say what people try`,
			`empty-action.json: workarounds[0].action: empty: say what to do`,
			`empty-action.json: workarounds[0].how: empty: give a command, code line or setting`}},
		{"no-sources", false, []string{
			`no-sources.json: dead_ends[0].sources: none: every dead end and workaround needs a source`,
			`no-sources.json: workarounds[0].sources: "docs.nvidia.com" is not an http(s) URL`}},
		{"overlap", true, []string{`overlap.json: regex: also matches cuda/valid's examples.match[0]; name each other in frequently_confused_with or narrow the regex`}},
		{"overlap-declared", true, nil},
		{"bad-version-bound", false, []string{
			`bad-version-bound.json: versions[0].removed: "2.2 (nightly)" is not a version (want a release such as "2.3.1" or "PyTorch 2.3.1")`,
			`bad-version-bound.json: versions[1].introduced: "2.x" is not a version (want a release such as "2.3.1" or "PyTorch 2.3.1")`,
			`bad-version-bound.json: versions[1].removed: "main" is not a version (want a release such as "2.3.1" or "PyTorch 2.3.1")`}},
		{"no-literal", false, []string{`no-literal.json: regex: warning: no literal of 3 or more bytes that every match must contain, so the regex is tried on every line of every log; anchor it on a fixed part of the message`}},
		{"not-json", false, []string{`not-json.json: not a JSON object: line 1: unexpected end of JSON input`}},
		{"no-basis", false, []string{
			`no-basis.json: dead_ends[0].rate_basis: missing: say what the rate rests on (estimate, reports with rate_reports, or reproduced)`,
			`no-basis.json: workarounds[0].rate_basis: missing: say what the rate rests on (estimate, reports with rate_reports, or reproduced)`,
			`no-basis.json: fix_success_rate_basis: missing: say what fix_success_rate rests on (estimate, reports or reproduced)`}},
		{"bad-basis", false, []string{
			`bad-basis.json: dead_ends[0].rate_basis: "guess" is not one of estimate, reports, reproduced`,
			`bad-basis.json: workarounds[0].rate_reports: missing: a rate counted from reports says how many (rate_reports >= 1)`,
			`bad-basis.json: workarounds[1].rate_reports: set, but rate_basis is "estimate": rate_reports goes with rate_basis "reports"`,
			`bad-basis.json: fix_success_rate_basis: "measured" is not one of estimate, reports, reproduced`}},
		{"counted-basis", false, nil},
		{"check-with-rate", false, []string{
			`check-with-rate.json: workarounds[0].success_rate: a check (kind "check") finds out what is wrong and has no success rate: remove success_rate, rate_basis and rate_reports, or make it a fix`,
			`check-with-rate.json: workarounds[1].success_rate: missing: a fix has a success rate (a diagnostic step is marked "kind": "check" instead)`,
			`check-with-rate.json: workarounds[1].rate_basis: missing: say what the rate rests on (estimate, reports with rate_reports, or reproduced)`,
			`check-with-rate.json: workarounds[2].kind: "maybe" is not one of fix, check`}},
		{"good-check", false, nil},
		{"inline-zh", false, nil},
		{"zh-both", false, []string{
			`zh-both.json: dead_ends[0].zh: Chinese text given both inline and in dead_ends_zh: use one form`,
			`zh-both.json: workarounds[1].zh: empty: the Chinese text of the workaround (inline zh, or its place in workarounds_zh)`}},
		{"checked", false, nil},
		{"regex-not", false, nil},
		{"regex-not-bad", false, []string{
			`regex-not-bad.json: examples.match[1]: regex_not rules out "CUDA error: an illegal memory access was encountered, retrying"`}},
		{"regex-not-invalid", false, []string{
			`regex-not-invalid.json: regex_not: not valid RE2: error parsing regexp: missing closing ): ` + "`(retrying`"}},
		{"checked-bad", false, []string{
			`checked-bad.json: checked.date: 2099-01-01 is in the future`,
			`checked-bad.json: checked.by: empty: name the reader`,
			`checked-bad.json: checked.method: "skimmed" is not one of sources-reread, reproduced`}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			files := []File{readFixture(t, tt.fixture)}
			if tt.besides {
				files = append(files, readFixture(t, "valid"))
			}
			got := problemStrings((&Linter{}).Lint(files))
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

func TestLintDuplicateID(t *testing.T) {
	v := readFixture(t, "valid")
	dup := File{Path: "elsewhere/cuda/valid.json", Data: v.Data}
	got := problemStrings((&Linter{}).Lint([]File{v, dup}))
	want := []string{`elsewhere/cuda/valid.json: id: "cuda/valid" is also the id of testdata/lint/cuda/valid.json`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q", got)
	}
}

func TestLintKnownBaseResolvesGraphAndOverlap(t *testing.T) {
	valid, err := Parse("x", readFixture(t, "valid").Data)
	if err != nil {
		t.Fatal(err)
	}
	known := NewBase()
	known.Add(valid)
	// A file that leads to an entry that exists only in the known base.
	f := readFixture(t, "graph-unknown-id")
	f.Data = []byte(strings.ReplaceAll(strings.ReplaceAll(string(f.Data), "cuda/does-not-exist", "cuda/valid"), "nccl/nope", "cuda/valid"))
	if got := (&Linter{Known: known}).Lint([]File{f}); len(got) != 0 {
		t.Errorf("got %v", got)
	}
	// The overlap rule also looks at the known base.
	got := problemStrings((&Linter{Known: known}).Lint([]File{readFixture(t, "overlap")}))
	if len(got) != 1 || !strings.Contains(got[0], "also matches cuda/valid's") {
		t.Errorf("got %v", got)
	}
}

// TestLintSeed: the project's seed entry loads as it is, and lint reports
// its real defects.
func TestLintSeed(t *testing.T) {
	p := "../../shared/seeds/000_2b8f776f5c20f714.txt"
	data, err := os.ReadFile(p)
	if err != nil {
		sharedtest.Missing(t, "seeds")
	}
	e, err := Parse(p, data)
	if err != nil || e.ID != "cuda/cublas-alloc-failed-cublaslt" || len(e.DeadEnds) != 3 {
		t.Fatalf("seed: %v %+v", err, e)
	}
	got := problemStrings((&Linter{}).Lint([]File{{Path: "seed.txt", Data: data}}))
	want := []string{
		"seed.txt: title: missing",
		"seed.txt: title_zh: missing",
		"seed.txt: examples: missing",
		"seed.txt: dead_ends[0].action: empty: say what people try",
		"seed.txt: dead_ends[0].sources: none: every dead end and workaround needs a source",
		"seed.txt: dead_ends[1].action: empty: say what people try",
		"seed.txt: dead_ends[1].sources: none: every dead end and workaround needs a source",
		"seed.txt: dead_ends[2].action: empty: say what people try",
		"seed.txt: dead_ends[2].sources: none: every dead end and workaround needs a source",
		"seed.txt: workarounds[0].sources: none: every dead end and workaround needs a source",
		"seed.txt: workarounds[1].sources: none: every dead end and workaround needs a source",
		"seed.txt: workarounds[2].sources: none: every dead end and workaround needs a source",
		// The seed's rates predate bases; its dead ends have no Chinese
		// text, in a list or inline.
		"seed.txt: dead_ends[0].rate_basis: missing: say what the rate rests on (estimate, reports with rate_reports, or reproduced)",
		"seed.txt: dead_ends[1].rate_basis: missing: say what the rate rests on (estimate, reports with rate_reports, or reproduced)",
		"seed.txt: dead_ends[2].rate_basis: missing: say what the rate rests on (estimate, reports with rate_reports, or reproduced)",
		"seed.txt: workarounds[0].rate_basis: missing: say what the rate rests on (estimate, reports with rate_reports, or reproduced)",
		"seed.txt: workarounds[1].rate_basis: missing: say what the rate rests on (estimate, reports with rate_reports, or reproduced)",
		"seed.txt: workarounds[2].rate_basis: missing: say what the rate rests on (estimate, reports with rate_reports, or reproduced)",
		"seed.txt: fix_success_rate_basis: missing: say what fix_success_rate rests on (estimate, reports or reproduced)",
		"seed.txt: dead_ends[0].zh: empty: the Chinese text of the dead end (inline zh, or its place in dead_ends_zh)",
		"seed.txt: dead_ends[1].zh: empty: the Chinese text of the dead end (inline zh, or its place in dead_ends_zh)",
		"seed.txt: dead_ends[2].zh: empty: the Chinese text of the dead end (inline zh, or its place in dead_ends_zh)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got:\n  %s", strings.Join(got, "\n  "))
	}
}

// TestLintNames checks the registry rule: names in prose must be recorded,
// a nonexistent name may appear only in a dead end, names from the entry's
// own message and host names are exempt, and malformed or duplicate
// registry records are reported.
func TestLintNames(t *testing.T) {
	reg, err := ReadRegistryFS(os.DirFS("testdata/lint"), ".", "testdata/lint/")
	if err != nil {
		t.Fatal(err)
	}
	if reg.Len() != 5 {
		t.Errorf("registry holds %d names, want 5", reg.Len())
	}
	got := problemStrings((&Linter{Registry: reg}).Lint([]File{readFixture(t, "names")}))
	want := []string{
		`testdata/lint/_registry/names.json: [5].name: "NCCL_DEBUG" is already recorded in testdata/lint/_registry/names.json`,
		`testdata/lint/_registry/names.json: [6].kind: "variable" is not one of env, alloc_conf, flag, api, cli, status, nonexistent`,
		`testdata/lint/_registry/names.json: [6].source: not an http(s) URL`,
		`testdata/lint/_registry/names.json: [7].component: missing or empty`,
		`names.json: root_cause: name "MADE_UP_VAR" is not in the registry (_registry/); record it with an official source, or reword`,
		`names.json: root_cause_zh: name "torch.cuda.free_all" is not in the registry (_registry/); record it with an official source, or reword`,
		`names.json: workarounds[0].how: "CUBLASLT_HEURISTIC_MODE" does not exist (registry, testdata/lint/_registry/names.json); only a dead end may name it`,
		`names.json: workarounds[0].how: allocator setting "garbage_collect_mb" is not in the registry (_registry/); record it with an official source, or reword`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	// Without a registry the rule is off.
	if ps := (&Linter{}).Lint([]File{readFixture(t, "names")}); len(ps) != 0 {
		t.Errorf("registry rule ran without a registry: %v", ps)
	}
}

// An item whose action names a release or a GPU series needs a condition
// (a warning: lint still passes); the same item with one, or an action
// that names none, passes silently.
func TestLintWarnsOnUnconditionedScope(t *testing.T) {
	e := &Entry{
		DeadEnds: []DeadEnd{
			{Action: "Change the driver while keeping a CUDA 10.x build on an RTX 30-series GPU"},
			{Action: "Lower the batch size"},
		},
		Workarounds: []Workaround{
			{Action: "PyTorch 2.3.0: upgrade", Condition: "env.torch >= '2.3.0' && env.torch < '2.3.1'"},
			{Action: "Use float16 autocast on pre-Ampere GPUs"},
			{Action: "Run FP8 on an sm_89+ GPU"},
		},
	}
	var got []string
	for _, w := range unconditionedScope(e) {
		got = append(got, w[0]+" "+strings.SplitN(w[1], " but", 2)[0])
	}
	want := []string{
		`dead_ends[0].condition the action names "CUDA 10.x"`,
		`workarounds[1].condition the action names "Ampere"`,
		`workarounds[2].condition the action names "sm_89"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
