package diagnose

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/env"
	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/scan"
)

type tentry struct {
	id, regex, kind string
	leadsTo         []string
	precededBy      []string
	tags            []string
	versions        []kb.Version
	workarounds     []kb.Workaround
}

func build(t *testing.T, es []tentry, logs ...string) *Report {
	return buildEnv(t, es, env.Environment{}, logs...)
}

// buildEnv diagnoses logs (one file per rank when there are several)
// against entries, with a caller-given environment.
func buildEnv(t *testing.T, es []tentry, given env.Environment, logs ...string) *Report {
	t.Helper()
	var entries []*kb.Entry
	for _, x := range es {
		kind := x.kind
		if kind == "" {
			kind = "specific"
		}
		entries = append(entries, &kb.Entry{ID: x.id, Regex: x.regex, RootCauseType: kind,
			TransitionGraph: kb.TransitionGraph{LeadsTo: x.leadsTo, PrecededBy: x.precededBy}, Tags: x.tags,
			Versions: x.versions, Workarounds: x.workarounds})
	}
	s, err := scan.New(entries)
	if err != nil {
		t.Fatal(err)
	}
	var inputs []scan.Input
	for i, l := range logs {
		inputs = append(inputs, scan.Input{Name: fmt.Sprintf("rank%d.log", i),
			Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(l)), nil }})
	}
	r, err := ReadAll(s, inputs, Options{Env: given})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type want struct {
	id       string
	root     bool
	count    int
	first    int
	causedBy []string
	subsumes []string
}

func check(t *testing.T, r *Report, ws []want) {
	t.Helper()
	if len(r.Diagnoses) != len(ws) {
		var ids []string
		for _, d := range r.Diagnoses {
			ids = append(ids, d.ID)
		}
		t.Fatalf("got diagnoses %v, want %d", ids, len(ws))
	}
	for i, w := range ws {
		d := r.Diagnoses[i]
		if d.ID != w.id || d.Root != w.root || d.Count != w.count || d.FirstLine != w.first ||
			!slices.Equal(d.CausedBy, w.causedBy) || !slices.Equal(d.Subsumes, w.subsumes) {
			t.Errorf("diagnosis %d = {%s root=%v count=%d first=%d caused_by=%v subsumes=%v}, want %+v",
				i, d.ID, d.Root, d.Count, d.FirstLine, d.CausedBy, d.Subsumes, w)
		}
	}
}

var cublas = []tentry{
	{id: "cuda/cublas-alloc-failed", regex: "CUBLAS_STATUS_ALLOC_FAILED when calling `?(?P<call>\\w+)", kind: "generic"},
	{id: "cuda/cublas-alloc-failed-cublaslt", regex: "CUBLAS_STATUS_ALLOC_FAILED when calling `?cublasLtMatmulAlgoGetHeuristic"},
}

func TestSpecificBeatsGenericOnTheSameLine(t *testing.T) {
	r := build(t, cublas, "step 1\nRuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasLtMatmulAlgoGetHeuristic( ltHandle, computeDesc.descriptor())`\n")
	check(t, r, []want{{id: "cuda/cublas-alloc-failed-cublaslt", root: true, count: 1, first: 2,
		subsumes: []string{"cuda/cublas-alloc-failed"}}})
}

func TestGenericStandsWhereTheSpecificDoesNotMatch(t *testing.T) {
	r := build(t, cublas,
		"CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`\n"+
			"CUBLAS_STATUS_ALLOC_FAILED when calling `cublasLtMatmulAlgoGetHeuristic(...)`\n")
	check(t, r, []want{
		{id: "cuda/cublas-alloc-failed", root: true, count: 1, first: 1},
		{id: "cuda/cublas-alloc-failed-cublaslt", root: true, count: 1, first: 2},
	})
	if got := r.Diagnoses[0].Facts["call"]; got != (facts.Fact{Type: facts.Text, Text: "cublasCreate"}) {
		t.Errorf("facts = %v", r.Diagnoses[0].Facts)
	}
}

func TestTwoErrorsOnOneLineBothCount(t *testing.T) {
	r := build(t, []tentry{
		{id: "nccl/unhandled-cuda-error", regex: "unhandled cuda error", kind: "generic"},
		{id: "cuda/illegal-memory-access", regex: "an illegal memory access was encountered", leadsTo: []string{"nccl/unhandled-cuda-error"}},
	}, "NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled cuda error, NCCL version 2.18.1; Last error: Cuda failure 'an illegal memory access was encountered'\n")
	check(t, r, []want{
		{id: "cuda/illegal-memory-access", root: true, count: 1, first: 1},
		{id: "nccl/unhandled-cuda-error", root: false, count: 1, first: 1, causedBy: []string{"cuda/illegal-memory-access"}},
	})
}

var cascade = []tentry{
	{id: "cuda/device-side-assert", regex: `device-side assert triggered|Assertion .* failed`, leadsTo: []string{"cuda/cublas-execution-failed"}},
	{id: "cuda/cublas-execution-failed", regex: `CUBLAS_STATUS_EXECUTION_FAILED`},
	{id: "nccl/watchdog-timeout", regex: `Watchdog caught collective operation timeout`, precededBy: []string{"cuda/device-side-assert"}},
	{id: "cuda/misaligned-address", regex: `misaligned address`},
}

func TestTheGraphPutsTheCauseFirstEvenWhenItIsPrintedLater(t *testing.T) {
	// The cuBLAS failure is printed first (asynchronous error reporting),
	// the assert later; the graph says the assert leads to it.
	r := build(t, cascade, "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm`\n"+
		"x\n"+
		"IndexKernel.cu:92: block: [0,0,0] Assertion `index out of bounds` failed.\n")
	check(t, r, []want{
		{id: "cuda/device-side-assert", root: true, count: 1, first: 3},
		{id: "cuda/cublas-execution-failed", root: false, count: 1, first: 1, causedBy: []string{"cuda/device-side-assert"}},
	})
}

func TestPrecededByAndUnrelatedErrorsInInputOrder(t *testing.T) {
	r := build(t, cascade,
		"[rank1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7)\n"+
			"CUDA error: misaligned address\n",
		"RuntimeError: CUDA error: device-side assert triggered\n")
	check(t, r, []want{
		{id: "cuda/misaligned-address", root: true, count: 1, first: 2},
		{id: "cuda/device-side-assert", root: true, count: 1, first: 1},
		{id: "nccl/watchdog-timeout", root: false, count: 1, first: 1, causedBy: []string{"cuda/device-side-assert"}},
	})
	if r.Diagnoses[1].File != "rank1.log" || r.Diagnoses[2].File != "rank0.log" || r.Stats.Files != 2 {
		t.Errorf("files: %q %q, stats %+v", r.Diagnoses[1].File, r.Diagnoses[2].File, r.Stats)
	}
}

func TestACycleIsBrokenAtTheFirstError(t *testing.T) {
	r := build(t, []tentry{
		{id: "a/x", regex: "XXX", leadsTo: []string{"a/y"}},
		{id: "a/y", regex: "YYY", leadsTo: []string{"a/x"}},
	}, "YYY\nXXX\n")
	// The cycle is broken at the one seen first, which is then a root.
	check(t, r, []want{
		{id: "a/y", root: true, count: 1, first: 1},
		{id: "a/x", root: false, count: 1, first: 2, causedBy: []string{"a/y"}},
	})
	want := "the transition graph has a cycle (a/y and a/x lead to each other); it is broken here, at the one the rules below put first"
	if !slices.Contains(r.Diagnoses[0].Why, want) {
		t.Errorf("why %q", r.Diagnoses[0].Why)
	}
}

func TestTenThousandRepeatsCollapse(t *testing.T) {
	var b strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&b, "[rank%d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%d)\n", i%8, i)
	}
	r := build(t, cascade, b.String())
	check(t, r, []want{{id: "nccl/watchdog-timeout", root: true, count: 10000, first: 1}})
	ev := r.Diagnoses[0].Evidence
	if len(ev) != MaxEvidence || ev[0].Line != 1 || ev[1].Line != 2 || ev[2].Line != 10000 || r.Diagnoses[0].LastLine != 10000 {
		t.Errorf("evidence = %+v", ev)
	}
	if r.Stats.Lines != 10000 {
		t.Errorf("stats = %+v", r.Stats)
	}
}

func TestNothingFound(t *testing.T) {
	r := build(t, cascade, "epoch 1 loss 0.3\nepoch 2 loss 0.2\n")
	if r.Diagnoses == nil || len(r.Diagnoses) != 0 {
		t.Fatalf("got %v", r.Diagnoses)
	}
}

func TestSpecificity(t *testing.T) {
	tests := []struct {
		re   string
		want int
	}{
		{"abc", 3},
		{"abc|de", 2},
		{"ab(c)?d", 3},
		{"x+", 1},
		{`CUBLAS_STATUS_ALLOC_FAILED when calling \x60?(?P<call>\w+)`, 40},
		{`a{3}`, 3},
		{`[ab]c`, 1},
		{`(?<!`, 0},
	}
	for _, tt := range tests {
		if got := specificity(tt.re); got != tt.want {
			t.Errorf("specificity(%q) = %d, want %d", tt.re, got, tt.want)
		}
	}
}

func TestTopLevelBranches(t *testing.T) {
	tests := []struct {
		re   string
		want []string
	}{
		{"abc", []string{"abc"}},
		{"a|b(c|d)|e", []string{"a", "b(c|d)", "e"}},
		{`a\|b|c`, []string{`a\|b`, "c"}},
		{`[|]x|y`, []string{`[|]x`, "y"}},
		{`[]|]x|[^]|]y`, []string{`[]|]x`, `[^]|]y`}},
		{`(?:a|b)|(?P<n>c|d)`, []string{"(?:a|b)", "(?P<n>c|d)"}},
	}
	for _, tt := range tests {
		if got := topLevelBranches(tt.re); !slices.Equal(got, tt.want) {
			t.Errorf("topLevelBranches(%q) = %q, want %q", tt.re, got, tt.want)
		}
	}
}

// A line matched by a narrow branch of a broad entry's regex goes to that
// entry, not to a rival whose whole regex is more specific than the broad
// entry's shortest branch.
func TestMatchedBranchDecidesSpecificity(t *testing.T) {
	es := []tentry{
		{id: "driver/xid-45", regex: `NVRM: Xid \(PCI:[0-9a-f:]+\): 45, pid=[0-9]+, Ch [0-9a-f]+`},
		{id: "driver/xid-149", regex: `NVRM: Xid \(PCI:[0-9a-f:]+\): 149, |NVRM: Xid \(PCI:[0-9a-f:]+\): 45, [^\n]*? caused by previous Xid 149`},
	}
	for _, tt := range []struct{ line, want string }{
		{"NVRM: Xid (PCI:0000:5d:00): 45, pid=7, Ch 00000004 caused by previous Xid 149", "driver/xid-149"},
		{"NVRM: Xid (PCI:0000:5d:00): 45, pid=7, Ch 00000004", "driver/xid-45"},
	} {
		r := build(t, es, tt.line)
		if len(r.Diagnoses) != 1 || r.Diagnoses[0].ID != tt.want {
			var got []string
			for _, d := range r.Diagnoses {
				got = append(got, d.ID)
			}
			t.Errorf("%q: diagnosed %v, want [%s]", tt.line, got, tt.want)
		}
	}
}

// A wrapper (root cause generic) gives way to the specific error it
// wraps on the same text, even when its regex demands more literal text.
func TestGenericYieldsToSpecific(t *testing.T) {
	es := []tentry{
		{id: "pytorch/cuda-get-device-count-unexpected", kind: "generic",
			regex: `Unexpected error from cudaGetDeviceCount\(\)\.[^\n]*Error (?P<code>[0-9]+): `},
		{id: "cuda/system-not-ready", kind: "environment", regex: `Error 802: system not yet initialized`},
	}
	line := "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized"
	if specificity(es[0].regex) <= specificity(es[1].regex) {
		t.Fatal("the wrapper's regex must be the longer one for this test to mean anything")
	}
	r := build(t, es, line)
	check(t, r, []want{
		{id: "cuda/system-not-ready", root: true, count: 1, first: 1, subsumes: []string{"pytorch/cuda-get-device-count-unexpected"}},
	})
}

var warningAndError = []tentry{
	{id: "nccl/barrier-device-unknown", regex: "perform barrier as devices used by this process are currently unknown", tags: []string{"warning"}},
	{id: "pytorch/cuda-out-of-memory", regex: "CUDA out of memory"},
}

// A warning healthy runs print too is not a finding alone, and ranks after
// an error even when printed first.
func TestWarningsAreContextForErrors(t *testing.T) {
	warn := "[W ProcessGroupNCCL.cpp:4115] using GPU 0 to perform barrier as devices used by this process are currently unknown.\n"
	check(t, build(t, warningAndError, warn+"step 10 loss 2.1\n"), nil)
	r := build(t, warningAndError, warn+"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
	check(t, r, []want{
		{id: "pytorch/cuda-out-of-memory", root: true, count: 1, first: 2},
		{id: "nccl/barrier-device-unknown", root: true, count: 1, first: 1},
	})
}

// Facts are typed from the first occurrence.
func TestFactsAreTyped(t *testing.T) {
	r := build(t, []tentry{{id: "pytorch/cuda-out-of-memory",
		regex: `Tried to allocate (?P<requested>[0-9.]+ [KMG]iB)\. GPU (?P<gpu>\d+)`}},
		"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB\n"+
			"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 1 has a total capacity of 79.15 GiB\n")
	f := r.Diagnoses[0].Facts
	if f["requested"] != (facts.Fact{Type: facts.Size, Text: "2.00 GiB", Num: 2 << 30}) ||
		f["gpu"] != (facts.Fact{Type: facts.Int, Text: "3", Num: 3}) {
		t.Errorf("facts = %+v", f)
	}
}
