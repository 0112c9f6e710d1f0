package diagnose

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/env"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
	"github.com/gpudx/gpudx/oom"
	"github.com/gpudx/gpudx/scan"
)

func TestParseRank(t *testing.T) {
	tests := []struct {
		line string
		rank int
		ok   bool
	}{
		{"[rank3]: torch.OutOfMemoryError: CUDA out of memory.", 3, true},
		{"[rank12]:[E1121 10:43:12.503117902 ProcessGroupNCCL.cpp:616] [Rank 12] Watchdog caught", 12, true},
		{"[default5]:RuntimeError: CUDA error: an illegal memory access was encountered", 5, true},
		{"[E ProcessGroupNCCL.cpp:475] [Rank 7] Watchdog caught collective operation timeout", 7, true},
		{"[E1121 10:43:12.612540311 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 1] Exception", 1, true},
		{"  [rank0]: NCCL version 2.21.5+cuda12.4", 0, true},
		{"step 100 rank 3 loss 2.1", 0, false}, // free text is not a prefix
		{"Rank 3 has 2 GPUs", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		r, ok := parseRank([]byte(tt.line))
		if r != tt.rank || ok != tt.ok {
			t.Errorf("parseRank(%q) = %d, %v; want %d, %v", tt.line, r, ok, tt.rank, tt.ok)
		}
	}
	for name, want := range map[string]int{"logs/rank3.log": 3, "node1/worker_rank-12.txt": 12, "RANK_0.out": 0} {
		if r, ok := fileRankOf(name); !ok || r != want {
			t.Errorf("fileRankOf(%q) = %d, %v", name, r, ok)
		}
	}
	if _, ok := fileRankOf("logs/train.log"); ok {
		t.Error("train.log has a rank")
	}
}

func TestParseStamp(t *testing.T) {
	a := parseStamp([]byte("2024-11-21 10:31:04,966 ERROR x"))
	b := parseStamp([]byte("2024-11-21T10:31:05.402Z ERROR x"))
	g1 := parseStamp([]byte("[rank1]:[E1121 10:41:07.772301775 ProcessGroupNCCL.cpp:616]"))
	g2 := parseStamp([]byte("E1121 10:41:07.772014511 x"))
	if a.kind != 'i' || b.kind != 'i' || b.ns-a.ns != 436_000_000 {
		t.Errorf("iso: %+v %+v", a, b)
	}
	if g1.kind != 'g' || g1.ns-g2.ns != 287_264 {
		t.Errorf("glog: %+v %+v (diff %d)", g1, g2, g1.ns-g2.ns)
	}
	if a.comparable(g1) || parseStamp([]byte("step 1")).kind != 0 {
		t.Error("kinds")
	}
}

// The ddp-oom example: rank 2 runs out of memory, ranks 0, 1 and 3 time
// out in the allreduce waiting for it, torchrun reports pid 139832, which
// NCCL's init line says is rank 2.
func TestCascadeOnOneMultiRankLog(t *testing.T) {
	log, err := os.ReadFile("../examples/ddp-oom.log")
	if err != nil {
		t.Fatal(err)
	}
	r := build(t, []tentry{
		{id: "pytorch/cuda-out-of-memory", regex: `CUDA out of memory\. Tried to allocate (?P<requested>[0-9.]+ [KMGT]iB)`, tags: []string{"out-of-memory"}},
		{id: "nccl/watchdog-timeout", regex: `Watchdog caught collective operation timeout`, precededBy: []string{"pytorch/cuda-out-of-memory"}, tags: waiter},
		{id: "pytorch/elastic-child-failed", regex: `failed \(exitcode: \d+\) local_rank`, precededBy: []string{"nccl/watchdog-timeout"}, tags: waiter},
	}, string(log))
	check(t, r, []want{
		{id: "pytorch/cuda-out-of-memory", root: true, count: 1, first: 21},
		{id: "nccl/watchdog-timeout", count: 3, first: 22, causedBy: []string{"pytorch/cuda-out-of-memory"}},
		{id: "pytorch/elastic-child-failed", count: 1, first: 29, causedBy: []string{"nccl/watchdog-timeout"}},
	})
	rs := r.Ranks
	if rs == nil || rs.FirstFailed == nil || *rs.FirstFailed != 2 || !slices.Equal(rs.Failed, []int{2}) ||
		!slices.Equal(rs.OnlyWaited, []int{0, 1, 3}) || !slices.Equal(rs.Seen, []int{0, 1, 2, 3}) {
		t.Fatalf("ranks = %+v", rs)
	}
	if rs.Reason != "torchrun reported its process, pid 139832, as the failed one; rank(s) 0, 1, 3 only timed out or were torn down waiting for it" {
		t.Errorf("reason = %q", rs.Reason)
	}
	if !slices.Equal(r.Diagnoses[1].Ranks, []int{0, 1, 3}) {
		t.Errorf("watchdog ranks %v", r.Diagnoses[1].Ranks)
	}
	if r.Environment.NCCL != "2.21.5" {
		t.Errorf("environment %+v", r.Environment)
	}
	m := r.Diagnoses[0].Memory
	// 4.66 GiB reserved but unallocated is more than the 4.00 GiB asked.
	if m == nil || m.Verdict != oom.Fragmentation || m.Requested != 4<<30 {
		t.Fatalf("memory = %+v", m)
	}
	if f := r.Diagnoses[0].Facts["reserved_unallocated"]; f.Text != "4.66 GiB" {
		t.Errorf("derived fact reserved_unallocated = %+v", f)
	}
}

// One file per rank: ranks 1 and 3 both hit the illegal access; rank 3's
// timestamp is earlier although its file comes later.
func TestCascadeAcrossRankFiles(t *testing.T) {
	var logs []string
	for i := range 4 {
		b, err := os.ReadFile(filepath.Join("testdata", "ranks", "rank"+string(rune('0'+i))+".log"))
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, string(b))
	}
	r := build(t, []tentry{
		{id: "cuda/illegal-memory-access", regex: `an illegal memory access was encountered`, leadsTo: []string{"nccl/watchdog-timeout"}},
		{id: "nccl/watchdog-timeout", regex: `Watchdog caught collective operation timeout`, tags: waiter},
	}, logs...)
	check(t, r, []want{
		{id: "cuda/illegal-memory-access", root: true, count: 2, first: 2},
		{id: "nccl/watchdog-timeout", count: 3, first: 2, causedBy: []string{"cuda/illegal-memory-access"}},
	})
	rs := r.Ranks
	if rs == nil || rs.FirstFailed == nil || *rs.FirstFailed != 3 || !slices.Equal(rs.Failed, []int{1, 3}) ||
		!slices.Equal(rs.OnlyWaited, []int{0, 2}) {
		t.Fatalf("ranks = %+v", rs)
	}
	if !strings.HasPrefix(rs.Reason, "rank 3 printed the root error first (by timestamp) of ranks 1, 3") {
		t.Errorf("reason %q", rs.Reason)
	}
	d := r.Diagnoses[0]
	if len(d.Files) != 2 || d.Files[0] != (FileHits{"rank1.log", 1, 2}) || d.Files[1] != (FileHits{"rank3.log", 1, 2}) {
		t.Errorf("files %+v", d.Files)
	}
	if !slices.Equal(r.Diagnoses[1].Ranks, []int{0, 1, 2}) {
		t.Errorf("watchdog ranks %v", r.Diagnoses[1].Ranks)
	}
}

// Across files without a graph edge, timestamps decide which comes first.
func TestTimestampsOrderAcrossFiles(t *testing.T) {
	r := build(t, []tentry{
		{id: "a/late", regex: `LATE`},
		{id: "a/early", regex: `EARLY`},
	}, "2024-11-21 10:00:09,000 LATE\n", "2024-11-21 10:00:01,000 EARLY\n")
	if r.Diagnoses[0].ID != "a/early" {
		t.Fatalf("order %s, %s", r.Diagnoses[0].ID, r.Diagnoses[1].ID)
	}
	want := "before a/late: seen earlier by the timestamps of their first lines (rank1.log:1 before rank0.log:1)"
	if !slices.Contains(r.Diagnoses[0].Why, want) {
		t.Errorf("why = %q", r.Diagnoses[0].Why)
	}
}

var fixedBug = []tentry{
	{id: "cuda/cublas-internal-error", regex: `CUBLAS_STATUS_INTERNAL_ERROR`, versions: []kb.Version{
		{Version: "PyTorch 1.8.0", Removed: ptr("1.8.1"), Status: "fixed"},
	}},
	{id: "cuda/illegal-memory-access", regex: `an illegal memory access`},
}

const twoErrors = "RuntimeError: CUDA error: CUBLAS_STATUS_INTERNAL_ERROR when calling `cublasSgemm`\n" +
	"RuntimeError: CUDA error: an illegal memory access was encountered\n"

func ptr(s string) *string { return &s }

func TestVersionsRuleOutOrAdviseUpgrade(t *testing.T) {
	tests := []struct {
		torch, status, text string
		first               string
	}{
		{"2.1.0+cu121", FixedInstalled, "PyTorch 1.8.1 fixed the PyTorch 1.8.0 problem; 2.1.0+cu121 is installed, so that cause is ruled out.", "cuda/illegal-memory-access"},
		{"1.8.0", Upgrade, "Installed PyTorch 1.8.0 is older than the fix: upgrade to PyTorch 1.8.1 or newer.", "cuda/cublas-internal-error"},
		{"1.8.1", FixedInstalled, "PyTorch 1.8.1 fixed the PyTorch 1.8.0 problem; 1.8.1 is installed, so that cause is ruled out.", "cuda/illegal-memory-access"},
		{"", VersionUnknown, "PyTorch 1.8.0 is affected and 1.8.1 fixes it; the installed version is not known.", "cuda/cublas-internal-error"},
	}
	for _, tt := range tests {
		r := buildEnv(t, fixedBug, env.Environment{Torch: tt.torch}, twoErrors)
		var d *Diagnosis
		for _, x := range r.Diagnoses {
			if x.ID == "cuda/cublas-internal-error" {
				d = x
			}
		}
		if len(d.VersionNotes) != 1 || d.VersionNotes[0].Status != tt.status || d.VersionNotes[0].Text != tt.text {
			t.Errorf("torch %q: notes %+v", tt.torch, d.VersionNotes)
		}
		if r.Diagnoses[0].ID != tt.first {
			t.Errorf("torch %q: first %s", tt.torch, r.Diagnoses[0].ID)
		}
		if tt.status == FixedInstalled && !slices.Contains(r.Diagnoses[0].Why,
			"before cuda/cublas-internal-error: cuda/cublas-internal-error's known causes are ruled out by the installed versions") {
			t.Errorf("why %q", r.Diagnoses[0].Why)
		}
	}
}

// Conditions: the items that apply come first; the others stay, marked
// with the values that rule them out.
func TestConditionsOrderAdvice(t *testing.T) {
	es := []tentry{{
		id:    "pytorch/cuda-out-of-memory",
		regex: `CUDA out of memory\. Tried to allocate (?P<requested>[0-9.]+ [KMGT]iB)`,
		tags:  []string{"out-of-memory"},
		workarounds: []kb.Workaround{
			{Action: "expandable segments", SuccessRate: 0.9, Condition: "facts.reserved_unallocated >= facts.requested"},
			{Action: "smaller batch", SuccessRate: 0.8},
			{Action: "2.9 workaround", SuccessRate: 0.95, Condition: "env.torch >= '2.9' && env.torch < '2.10'"},
			{Action: "other process", SuccessRate: 0.7, Condition: "facts.other_processes > 0"},
		},
	}}
	line := "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free. " +
		"Process 4242 has 20.00 GiB memory in use. Process 5151 has 58.11 GiB memory in use. Including non-PyTorch memory, this process has 58.11 GiB memory in use. " +
		"Of the allocated memory 55.20 GiB is allocated by PyTorch, and 1.30 GiB is reserved by PyTorch but unallocated.\n"
	r := buildEnv(t, es, env.Environment{Torch: "2.10.0"}, line)
	var got []string
	for _, w := range r.Diagnoses[0].Workarounds {
		got = append(got, w.Action+"|"+w.ConditionStatus+"|"+w.Reason)
		if w.Applies != (w.ConditionStatus != "fails") {
			t.Errorf("%s applies=%v", w.Action, w.Applies)
		}
	}
	want := []string{
		"other process|holds|facts.other_processes = 20.00 GiB",
		"smaller batch||",
		"2.9 workaround|fails|env.torch = 2.10.0",
		"expandable segments|fails|facts.reserved_unallocated = 1.30 GiB, facts.requested = 2.00 GiB",
	}
	if !slices.Equal(got, want) {
		t.Errorf("workarounds\n got %q\nwant %q", got, want)
	}
	if m := r.Diagnoses[0].Memory; m == nil || m.Verdict != oom.OtherProcess {
		t.Errorf("memory %+v", m)
	}
	// The version not known: the 2.9-only item goes below the item with no
	// condition, though its rate is higher.
	r = build(t, es, line)
	got = got[:0]
	for _, w := range r.Diagnoses[0].Workarounds {
		got = append(got, w.Action+"|"+w.ConditionStatus)
	}
	want = []string{"other process|holds", "smaller batch|", "2.9 workaround|unknown", "expandable segments|fails"}
	if !slices.Equal(got, want) {
		t.Errorf("torch unknown: workarounds\n got %q\nwant %q", got, want)
	}
}

// The log's own environment lines are read; what the caller gives fills
// the gaps and never overrides the log.
func TestEnvironmentFromLogAndCaller(t *testing.T) {
	log := "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n" +
		"gpu-node-07:139830:139830 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n" +
		"RuntimeError: CUDA error: an illegal memory access was encountered\n"
	r := buildEnv(t, fixedBug, env.Environment{Driver: "550.54.15", Torch: "2.1.0"}, log)
	e := r.Environment
	if e.Driver != "535.104.05" || e.NCCL != "2.18.1" || e.Torch != "2.1.0" {
		t.Errorf("environment %+v", e)
	}
}

// The names lint lets conditions read are the names the packages provide.
func TestConditionNamesMatchProviders(t *testing.T) {
	full := env.Environment{Torch: "2.4.0", TorchCUDA: "12.1", CUDA: "12.4.131", DriverCUDA: "12.4", Driver: "550.54.15",
		CUDNN: "9.1.0", NCCL: "2.21.5", Python: "3.11.7", OS: "linux",
		GPUs:     []env.GPU{{Index: 0, Name: "NVIDIA H100 80GB HBM3", MemoryBytes: 85520809984, Capability: "9.0"}},
		Packages: map[string]string{"jax": "0.4.30", "jaxlib": "0.4.30", "tensorflow": "2.16.1", "triton": "3.0.0"}}
	for k := range full.Values() {
		if !slices.Contains(kb.EnvNames, k) {
			t.Errorf("env provides %q, which kb.EnvNames lacks", k)
		}
	}
	for _, k := range kb.EnvNames {
		if _, ok := full.Values()[k]; !ok {
			t.Errorf("kb.EnvNames has %q, which env does not provide", k)
		}
	}
	a := oom.Analyze("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free. "+
		"Process 4242 has 20.00 GiB memory in use. Including non-PyTorch memory, this process has 58.11 GiB memory in use. "+
		"Of the allocated memory 55.20 GiB is allocated by PyTorch, and 1.30 GiB is reserved by PyTorch but unallocated.", "")
	for k := range a.Facts() {
		if !slices.Contains(kb.MemoryFacts, k) {
			t.Errorf("oom provides %q, which kb.MemoryFacts lacks", k)
		}
	}
}

// torchrun's failure summary names the first observed failure: rank 1,
// although rank 3's error comes first in the merged output.
func TestTorchrunSummaryNamesTheFirstFailure(t *testing.T) {
	log, err := os.ReadFile("testdata/ranks/torchrun-summary.log")
	if err != nil {
		t.Fatal(err)
	}
	r := build(t, []tentry{
		{id: "cuda/illegal-memory-access", regex: `an illegal memory access was encountered`, leadsTo: []string{"nccl/watchdog-timeout"}},
		{id: "nccl/watchdog-timeout", regex: `Watchdog caught collective operation timeout`, tags: waiter},
	}, string(log))
	rs := r.Ranks
	if rs == nil || rs.FirstFailed == nil || *rs.FirstFailed != 1 || !slices.Equal(rs.Failed, []int{1, 3}) ||
		!slices.Equal(rs.OnlyWaited, []int{0, 2}) {
		t.Fatalf("ranks = %+v", rs)
	}
	if rs.Reason != "torchrun's error summary names it as the first observed failure; rank(s) 0, 2 only timed out or were torn down waiting for it" {
		t.Errorf("reason %q", rs.Reason)
	}
}

// TensorFlow prints the BFC allocator's limit and use before the error
// line; the arithmetic reads them from there.
func TestTensorFlowOOMReadsTheAllocatorSummary(t *testing.T) {
	log, err := os.ReadFile("testdata/tf-bfc-oom.log")
	if err != nil {
		t.Fatal(err)
	}
	r := build(t, []tentry{{id: "tensorflow/oom-when-allocating-tensor",
		regex: `OOM when allocating tensor with shape\[(?P<shape>[0-9,]*)\] and type (?P<dtype>\w+)`,
		tags:  []string{"out-of-memory"}}}, string(log))
	m := r.Diagnoses[0].Memory
	if m == nil || m.Verdict != oom.LiveTensors || m.Requested != 102760448 || m.Capacity != 10990990131 || m.Allocated != 10948224000 {
		t.Fatalf("memory %+v", m)
	}
	if f := r.Diagnoses[0].Facts["total_capacity"]; f.Num != 10990990131 {
		t.Errorf("total_capacity fact %+v", f)
	}
}

// The order is one total order: it does not depend on the order the
// diagnoses arrive in, and a diagnosis without a timestamp makes the whole
// report fall back to input order rather than mixing the two.
func TestOrderIsTotal(t *testing.T) {
	es := []tentry{{id: "a/one", regex: `ONE`}, {id: "a/two", regex: `TWO`}, {id: "a/three", regex: `THREE`}}
	logs := []string{"2024-11-21 10:00:09,000 ONE\nTHREE\n", "2024-11-21 10:00:01,000 TWO\n"}
	var first []string
	for range 30 {
		r := build(t, es, logs...)
		var ids []string
		for _, d := range r.Diagnoses {
			ids = append(ids, d.ID)
		}
		if first == nil {
			first = ids
		} else if !slices.Equal(ids, first) {
			t.Fatalf("order changed: %v then %v", first, ids)
		}
	}
	if !slices.Equal(first, []string{"a/one", "a/three", "a/two"}) {
		t.Errorf("order %v, want input order (a/three has no timestamp)", first)
	}
}

// Rank attribution: a sub-communicator's init line does not replace the
// world rank; a merged log with several GLOBAL_RANK lines names no rank for
// its unprefixed lines; only a file's base name carries a rank.
func TestRankAttribution(t *testing.T) {
	es := []tentry{{id: "nccl/remote-error", regex: `NCCL WARN .*remote process exited`}}
	r := build(t, es, "h1:2005:2100 [5] NCCL INFO comm 0x1 rank 5 nranks 8 cudaDev 5 busId 9e000 commId 0xa - Init COMPLETE\n"+
		"h1:2005:2200 [5] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 5 busId 9e000 commId 0xb - Init COMPLETE\n"+
		"h1:2005:2300 [5] NCCL WARN NET/IB : remote process exited or there was a network error\n")
	if got := r.Diagnoses[0].Ranks; !slices.Equal(got, []int{5}) {
		t.Errorf("sub-communicator: ranks %v, want [5]", got)
	}
	es = []tentry{{id: "cuda/illegal-memory-access", regex: `an illegal memory access was encountered`}}
	merged := "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4\nInitializing distributed: GLOBAL_RANK: 1, MEMBER: 2/4\n" +
		"RuntimeError: CUDA error: an illegal memory access was encountered\n"
	if r := build(t, es, merged); r.Ranks != nil || len(r.Diagnoses[0].Ranks) != 0 {
		t.Errorf("merged GLOBAL_RANK log: ranks %v %+v", r.Diagnoses[0].Ranks, r.Ranks)
	}
	single := "Initializing distributed: GLOBAL_RANK: 3, MEMBER: 4/4\nRuntimeError: CUDA error: an illegal memory access was encountered\n"
	if r := build(t, es, single); !slices.Equal(r.Diagnoses[0].Ranks, []int{3}) {
		t.Errorf("one GLOBAL_RANK: ranks %v", r.Diagnoses[0].Ranks)
	}
	for name, want := range map[string]int{"runs/lora-rank-64/node0.log": -1, "frank_1.log": -1, "logs/rank3.log": 3, "rank_12-of-16.txt": 12} {
		got, ok := fileRankOf(name)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("fileRankOf(%q) = %d, want %d", name, got, want)
		}
	}
}

// A rank that printed only warnings did not wait for anything; the rank
// torchrun names first is not blamed when it only timed out.
func TestRankSummaryIsConsistent(t *testing.T) {
	es := []tentry{
		{id: "cuda/illegal-memory-access", regex: `an illegal memory access`, leadsTo: []string{"nccl/watchdog-timeout"}},
		{id: "nccl/watchdog-timeout", regex: `Watchdog caught`, tags: waiter},
		{id: "nccl/barrier-device-unknown", regex: `devices used by this process are currently unknown`, tags: []string{"warning"}},
	}
	log := "[rank4]:[W ProcessGroupNCCL.cpp:4115] using GPU 0 to perform barrier as devices used by this process are currently unknown.\n" +
		"[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n" +
		"[rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout\n" +
		"[rank2]:[E ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation timeout\n" +
		"Root Cause (first observed failure):\n[0]:\n  time      : 2024-11-21_10:43:13\n  host      : n1\n  rank      : 2 (local_rank: 2)\n"
	r := build(t, es, log)
	rs := r.Ranks
	// torchrun names rank 2, which only timed out: rank 0 failed.
	if rs == nil || *rs.FirstFailed != 0 || !slices.Equal(rs.Failed, []int{0}) || !slices.Equal(rs.OnlyWaited, []int{1, 2}) ||
		!slices.Equal(rs.Seen, []int{0, 1, 2, 4}) {
		t.Fatalf("ranks %+v", rs)
	}
}

// waiter tags an entry whose lines a rank prints while waiting for another.
var waiter = []string{kb.TagWaiter}

// Entries as the knowledge base has them (regexes cut to what the logs
// below need): the timeout, the teardown and torchrun's report only wait.
var waitEntries = []tentry{
	{id: "nccl/watchdog-timeout", regex: `Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+)`, tags: waiter},
	{id: "nccl/async-error-handling-teardown", regex: `To avoid data inconsistency, we are taking the entire process down`,
		precededBy: []string{"nccl/watchdog-timeout"}, tags: waiter},
	{id: "nccl/elastic-child-failed", regex: `failed \(exitcode: (?P<exitcode>-?\d+)\) local_rank: \d+ \(pid: \d+\) of binary`,
		precededBy: []string{"nccl/watchdog-timeout"}, tags: waiter},
}

// A rank that printed only waiters' lines is never blamed; when every rank
// only waited the summary says so and names the ranks the lines point at.
func TestWaitersAreNotBlamed(t *testing.T) {
	tests := []struct {
		file         string
		pointed      []int
		onlyWaited   []int
		reason       string
		pointedWhyIn string
	}{
		{"rank0-timeout-only.log", nil, []int{0},
			"no rank printed an error of its own: rank(s) 0 only timed out or were torn down waiting for another; the log does not say which rank they waited for (its log may be missing)", ""},
		// torchrun names rank 0, whose watchdog fired first; rank 2's
		// heartbeat line says it never enqueued collective 4410.
		{"waiters-only.log", []int{2}, []int{0, 1, 3},
			"torchrun names rank 0 as the first observed failure, but rank 0 only printed a timeout or teardown: it exited first, it did not fail first; " +
				"no rank printed an error of its own: rank(s) 0, 1, 3 only timed out or were torn down waiting for another; " +
				"their lines point at rank(s) 2: their last enqueued collective is 4409 in process group 0, before collective 4410 that rank(s) 0, 1, 3 timed out in: they never joined it",
			""},
		{"missing-rank.log", []int{2}, []int{0, 1, 3}, "",
			"of the 4 ranks (NCCL's nranks), every other one timed out in collective SeqNum 88 (BROADCAST) and these printed no timeout: they never joined it"},
		{"desync-report.log", []int{2}, []int{0}, "",
			"PyTorch's desync report (TORCH_NCCL_DESYNC_DEBUG) names them as the lagging ranks"},
		{"seq-differs.log", []int{2}, []int{0, 1, 2, 3}, "",
			"they timed out in a different collective than rank(s) 0, 1, 3, which timed out in collective 6463: they are out of step with the others"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			log, err := os.ReadFile(filepath.Join("testdata", "ranks", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			r := build(t, waitEntries, string(log))
			rs := r.Ranks
			if rs == nil {
				t.Fatal("no rank summary")
			}
			if rs.FirstFailed != nil || len(rs.Failed) != 0 || !rs.OnlyWaiters {
				t.Errorf("blamed: first %v failed %v only_waiters %v", rs.FirstFailed, rs.Failed, rs.OnlyWaiters)
			}
			if !slices.Equal(rs.PointedAt, tt.pointed) || !slices.Equal(rs.OnlyWaited, tt.onlyWaited) {
				t.Errorf("pointed at %v (%s), only waited %v; want %v, %v", rs.PointedAt, rs.PointedWhy, rs.OnlyWaited, tt.pointed, tt.onlyWaited)
			}
			if tt.reason != "" && rs.Reason != tt.reason {
				t.Errorf("reason\n got %q\nwant %q", rs.Reason, tt.reason)
			}
			if tt.pointedWhyIn != "" && rs.PointedWhy != tt.pointedWhyIn {
				t.Errorf("pointed why\n got %q\nwant %q", rs.PointedWhy, tt.pointedWhyIn)
			}
			if rs.ReasonZh == "" || strings.Contains(rs.ReasonZh, "only") {
				t.Errorf("reason_zh %q", rs.ReasonZh)
			}
		})
	}
}

// A rank with an error of its own is blamed even when it also timed out;
// torchrun's pick stands when its rank printed no waiter's line (a process
// killed by the OOM killer prints nothing).
func TestOwnErrorIsBlamed(t *testing.T) {
	es := append([]tentry{{id: "cuda/illegal-memory-access", regex: `an illegal memory access was encountered`,
		leadsTo: []string{"nccl/watchdog-timeout"}}}, waitEntries...)
	log := "[rank1]:RuntimeError: CUDA error: an illegal memory access was encountered\n" +
		"[rank0]:[E1121 10:41:07.772014511 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600019 milliseconds before timing out.\n" +
		"[rank1]:[E1121 10:41:07.772014599 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600019 milliseconds before timing out.\n"
	rs := build(t, es, log).Ranks
	if rs == nil || rs.FirstFailed == nil || *rs.FirstFailed != 1 || !slices.Equal(rs.OnlyWaited, []int{0}) || rs.OnlyWaiters {
		t.Fatalf("ranks %+v", rs)
	}
	if rs.Reason != "only rank 1 printed an error of its own; rank(s) 0 only timed out or were torn down waiting for it" {
		t.Errorf("reason %q", rs.Reason)
	}
	killed := "[rank0]:[E1121 10:41:07.772014511 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600019 milliseconds before timing out.\n" +
		"Root Cause (first observed failure):\n[0]:\n  time      : 2024-11-21_10:43:13\n  host      : n1\n  rank      : 1 (local_rank: 1)\n  exitcode  : -9 (pid: 2291)\n"
	rs = build(t, es, killed).Ranks
	if rs == nil || rs.FirstFailed == nil || *rs.FirstFailed != 1 || !slices.Equal(rs.OnlyWaited, []int{0}) {
		t.Fatalf("killed: ranks %+v", rs)
	}
}

// With the knowledge base itself: the case, a log where rank 0
// printed only a watchdog timeout and its teardown, blames no rank.
func TestOnlyTimeoutBlamesNoRankWithOurKB(t *testing.T) {
	es, err := kb.LoadFS(knowledge.FS, ".", "knowledge/")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := scan.New(es)
	for _, name := range []string{"rank0-timeout-only.log", "waiters-only.log"} {
		f, err := os.Open(filepath.Join("testdata", "ranks", name))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Read(s, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if rs := r.Ranks; rs == nil || rs.FirstFailed != nil || !rs.OnlyWaiters {
			t.Errorf("%s: ranks %+v", name, rs)
		}
	}
}
