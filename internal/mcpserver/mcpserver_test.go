package mcpserver

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var toolNames = []string{"analyze_memory_snapshot", "check_versions", "diagnose_log", "error_chain", "get_entry", "list_domains",
	"lookup_error", "lookup_errors", "report_outcome", "search_entries"}

// TestHTTP lists and calls every tool over streamable HTTP, as gpudx serve
// mounts it at /mcp, with a real SQLite outcome store.
func TestHTTP(t *testing.T) {
	cs := connectHTTP(t, newService(t, sqliteStore(t)), Options{Version: "test"})
	ctx := context.Background()

	if got := cs.InitializeResult().ServerInfo; got.Name != "gpudx" || got.Version != "test" {
		t.Errorf("server info %+v", got)
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		in, _ := tool.InputSchema.(map[string]any)
		if in["type"] != "object" || tool.OutputSchema == nil || len(tool.Description) < 100 {
			t.Errorf("%s: input schema %v, output schema %v, description %q", tool.Name, tool.InputSchema, tool.OutputSchema != nil, tool.Description)
		}
		// Over HTTP the path argument says it is refused.
		props, _ := in["properties"].(map[string]any)
		if p, ok := props["path"].(map[string]any); ok &&
			!strings.HasPrefix(p["description"].(string), "not available on this server") {
			t.Errorf("%s: path description %q", tool.Name, p["description"])
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, toolNames) {
		t.Fatalf("tools %v, want %v", names, toolNames)
	}

	t.Run("diagnose_log", func(t *testing.T) {
		var out DiagnoseOut
		text := call(t, cs, "diagnose_log", map[string]any{"log": string(readFile(t, "examples/ddp-oom.log"))}, &out)
		checkDDPOOM(t, &out, text)
	})
	t.Run("path refused", func(t *testing.T) {
		for _, tool := range []string{"diagnose_log", "analyze_memory_snapshot"} {
			msg := callErr(t, cs, tool, map[string]any{"path": "/etc/hostname"})
			if want := "path: this server does not read files (it is reached over HTTP and cannot see your disk); send the content instead"; msg != want {
				t.Errorf("%s: %q, want %q", tool, msg, want)
			}
		}
	})
	t.Run("analyze_memory_snapshot", func(t *testing.T) {
		var out SnapshotOut
		text := call(t, cs, "analyze_memory_snapshot", map[string]any{
			"snapshot_base64": base64.StdEncoding.EncodeToString(readFile(t, "snapshot/testdata/hand-p4.pickle"))}, &out)
		checkHandP4(t, &out, text)
	})
	t.Run("lookup_error", func(t *testing.T) { checkLookup(t, cs) })
	t.Run("search_entries", func(t *testing.T) {
		var out SearchOut
		text := call(t, cs, "search_entries", map[string]any{"query": "illegal memory access", "domain": "cuda", "limit": 2}, &out)
		if len(out.Results) != 2 || out.Results[0].ID != "cuda/illegal-memory-access" || out.Results[0].ErrorCode != "cudaErrorIllegalAddress" {
			t.Errorf("results %+v", out.Results)
		}
		for _, r := range out.Results {
			if r.Domain != "cuda" {
				t.Errorf("%s is outside the cuda domain", r.ID)
			}
		}
		if !strings.HasPrefix(text, "cuda/illegal-memory-access: RuntimeError: CUDA error: an illegal memory access was encountered\n") {
			t.Errorf("text %q", text)
		}
	})
	t.Run("list_domains", func(t *testing.T) {
		var out DomainsOut
		text := call(t, cs, "list_domains", map[string]any{}, &out)
		// The counts are the knowledge base's own, counted here apart.
		want := map[string]int{}
		for _, e := range entries {
			want[e.Domain]++
		}
		got := map[string]int{}
		for _, d := range out.Domains {
			got[d.Name] = d.Entries
		}
		if out.Entries != len(entries) || !reflect.DeepEqual(got, want) {
			t.Errorf("entries %d, domains %v; want %d, %v", out.Entries, got, len(entries), want)
		}
		if !strings.HasPrefix(text, fmt.Sprintf("%d entries in %d domains\n", len(entries), len(want))) {
			t.Errorf("text %q", text)
		}
	})
	t.Run("report_outcome then get_entry", func(t *testing.T) { checkReport(t, cs) })
}

// checkDDPOOM checks the diagnosis of examples/ddp-oom.log: rank 2 ran
// out of memory (fragmentation) and ranks 0, 1, 3 timed out waiting.
func checkDDPOOM(t *testing.T, out *DiagnoseOut, text string) {
	t.Helper()
	var ids []string
	for _, d := range out.Diagnoses {
		ids = append(ids, d.ID)
	}
	wantIDs := []string{"pytorch/cuda-out-of-memory", "nccl/watchdog-timeout", "nccl/async-error-handling-teardown", "nccl/elastic-child-failed"}
	if !slices.Equal(ids, wantIDs) {
		t.Fatalf("diagnoses %v, want %v", ids, wantIDs)
	}
	if out.Summary != "4 known error(s) found; root cause: pytorch/cuda-out-of-memory" ||
		!slices.Equal(out.RootCauses, []string{"pytorch/cuda-out-of-memory"}) || out.Lines != 29 || out.Bytes != 3848 {
		t.Errorf("summary %q, roots %v, lines %d, bytes %d", out.Summary, out.RootCauses, out.Lines, out.Bytes)
	}
	if r := out.Ranks; r == nil || r.FirstFailed == nil || *r.FirstFailed != 2 || !slices.Equal(r.OnlyWaited, []int{0, 1, 3}) {
		t.Errorf("ranks %+v", out.Ranks)
	}
	d := out.Diagnoses[0]
	if !d.Root || d.FirstLine != 21 || d.Count != 1 || !slices.Equal(d.Ranks, []int{2}) || d.Facts["requested"] != "4.00 GiB" || d.Facts["reserved_unallocated"] != "4.66 GiB" {
		t.Errorf("root: root %v line %d count %d ranks %v facts %v", d.Root, d.FirstLine, d.Count, d.Ranks, d.Facts)
	}
	if m := d.Memory; m == nil || m.Verdict != "fragmentation" || m.Requested != 4294967296 || m.ReservedUnallocated != 5003636900 || m.Capacity != 84986665370 || m.GPU != 2 {
		t.Errorf("memory %+v", d.Memory)
	}
	var deIdx, wIdx []int
	var deApply, wApply []bool
	for _, x := range d.DeadEnds {
		deIdx, deApply = append(deIdx, x.Index), append(deApply, x.Applies)
	}
	for _, w := range d.Workarounds {
		wIdx, wApply = append(wIdx, w.Index), append(wApply, w.Applies)
	}
	// The PyTorch 2.9-only dead end (3) comes after the one with no
	// condition: the log does not say the version.
	if !slices.Equal(deIdx, []int{0, 3, 2, 1}) || !slices.Equal(deApply, []bool{true, true, false, false}) {
		t.Errorf("dead ends %v applies %v", deIdx, deApply)
	}
	if !slices.Equal(wIdx, []int{0, 2, 3, 1}) || !slices.Equal(wApply, []bool{true, true, true, false}) {
		t.Errorf("workarounds %v applies %v", wIdx, wApply)
	}
	if x := d.DeadEnds[0]; x.FailRate != 0.85 || x.Rate.Curated != 0.85 || x.Rate.Reports != 0 || x.Rate.PriorWeight != 10 {
		t.Errorf("dead end 0: %+v", x)
	}
	if w := d.Workarounds[3]; w.ConditionStatus != "fails" || w.ConditionReason != "facts.other_processes = 0 B" || w.Condition != "facts.other_processes > 0" {
		t.Errorf("workaround 1: %+v", w.Applicability)
	}
	if c := out.Diagnoses[1]; c.Root || !slices.Equal(c.CausedBy, []string{"pytorch/cuda-out-of-memory"}) || c.Count != 3 || !slices.Equal(c.Ranks, []int{0, 1, 3}) {
		t.Errorf("watchdog: root %v caused by %v count %d ranks %v", c.Root, c.CausedBy, c.Count, c.Ranks)
	}
	// The text: root cause, then what not to try, then what to try; items
	// whose condition fails are left out.
	before(t, text, "Root cause: pytorch/cuda-out-of-memory (line 21, ranks 2)", "Do not try first")
	before(t, text, "Do not try first (usually fails):\n  ✗ 1. Call torch.cuda.empty_cache()", "  ✗ 2. Switch to the new variable name")
	before(t, text, "[dead_end item 1]", "[dead_end item 4]")
	before(t, text, "[dead_end item 4]", "Try (best first):\n  ✓ 1. Enable expandable segments")
	before(t, text, "[workaround item 3]", "  ✓ 3. Stop keeping autograd history")
	before(t, text, "(3 more item(s) of pytorch/cuda-out-of-memory do not apply", "- nccl/watchdog-timeout (line 22–24, ×3, ranks 0, 1, 3), caused by pytorch/cuda-out-of-memory")
	for _, absent := range []string{"dead_end item 3]", "dead_end item 2]", "workaround item 2]"} {
		if strings.Contains(text, absent) {
			t.Errorf("text lists %q, whose condition fails", absent)
		}
	}
	// The entry count is the knowledge base's own (it grows); the rest is
	// this log's.
	head := fmt.Sprintf("4 known error(s) found (read 29 lines, 3,848 bytes; %d entries checked).\nRanks: rank 2 failed first (torchrun reported its process, pid 139832", out.Entries)
	if out.Entries < 282 || !strings.HasPrefix(text, head) {
		t.Errorf("text starts %q", text[:min(len(text), 200)])
	}
}

// checkHandP4 checks the analysis of snapshot/testdata/hand-p4.pickle: a
// 40 MiB request on cuda:0 failed with 8 MiB the largest free block.
func checkHandP4(t *testing.T, out *SnapshotOut, text string) {
	t.Helper()
	o := out.OOM
	if o == nil {
		t.Fatal("no oom")
	}
	if o.Source != "trace" || o.Device != 0 || o.RequestedBytes != 40<<20 || o.LargestFreeBlockBytes != 8<<20 ||
		o.ReservedBytes != 20<<20 || o.AllocatedBytes != 12<<20 || o.DeviceFreeBytes == nil || *o.DeviceFreeBytes != 123456789 ||
		o.Verdict != "live_tensors" || o.Site != "<module> (run.py)" || o.Pool != "large" {
		t.Errorf("oom %+v", o)
	}
	if len(out.Devices) != 2 {
		t.Fatalf("devices %+v", out.Devices)
	}
	d := out.Devices[0]
	if d.Device != 0 || d.ReservedBytes != 20<<20 || d.AllocatedBytes != 10<<20 || d.FreeInReservedBytes != 8<<20 ||
		d.StrandedBytes != 8<<20 || d.ReleasableBytes != 0 || d.Fragmentation != 0 || d.Segments != 1 || d.Blocks != 3 {
		t.Errorf("cuda:0 %+v", d)
	}
	if d := out.Devices[1]; d.ReservedBytes != 2<<20 || d.AllocatedBytes != 512 {
		t.Errorf("cuda:1 %+v", d)
	}
	if len(out.TopSites) != 2 || out.TopSites[0].Site != "forward (model.py:54)" || out.TopSites[0].Blocks != 2 ||
		out.TopSites[0].Bytes != 10486272 || out.TopSites[1].Site != "<module> (run.py)" {
		t.Errorf("top sites %+v", out.TopSites)
	}
	if p := out.Peak; p == nil || p.Bytes != 12000000 || p.Device != 0 {
		t.Errorf("peak %+v", out.Peak)
	}
	if out.Info.TraceEvents != 12 || out.Info.ExpandableSegments == nil || !*out.Info.ExpandableSegments || !strings.HasPrefix(out.Info.Format, "dict, pickle protocol 4") {
		t.Errorf("info %+v", out.Info)
	}
	want := "Out of memory on cuda:0: 40.00 MiB requested; largest free block 8.00 MiB; reserved 20.00 MiB, allocated 12.00 MiB.\n" +
		"Verdict: live_tensors: Live tensors fill the memory PyTorch reserved on device 0"
	if !strings.HasPrefix(text, want) {
		t.Errorf("text starts %q, want %q", text[:min(len(text), len(want))], want)
	}
	before(t, text, "Do not try first: torch.cuda.empty_cache()", "Try: The largest holder is forward (model.py:54) with 10.00 MiB in 2 blocks.")
	before(t, text, "Who holds the memory:", "  1. forward (model.py:54): 10.00 MiB in 2 block(s)")
}

func checkLookup(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	for _, tt := range []struct {
		msg, id, code string
		regex         bool
		text          string
	}{
		// An error name: the entry's name matches, its message pattern
		// (which needs the surrounding text) does not.
		{"CUBLAS_STATUS_ALLOC_FAILED", "cuda/cublas-alloc-failed", "CUBLAS_STATUS_ALLOC_FAILED", false,
			"Best match: cuda/cublas-alloc-failed (only its words or name matched, not its message pattern)\n"},
		{"NCCL WARN ... unhandled system error", "nccl/unhandled-system-error", "ncclSystemError (2)", true,
			"Best match: nccl/unhandled-system-error (its message pattern matched the text)\n"},
		{"RuntimeError: CUDA error: an illegal memory access was encountered", "cuda/illegal-memory-access", "cudaErrorIllegalAddress", true,
			"Best match: cuda/illegal-memory-access (its message pattern matched the text)\n"},
	} {
		var out LookupOut
		text := call(t, cs, "lookup_error", map[string]any{"message": tt.msg}, &out)
		if len(out.Matches) == 0 {
			t.Fatalf("%q: no match", tt.msg)
		}
		m := out.Matches[0]
		if m.ID != tt.id || m.ErrorCode != tt.code || m.RegexMatched != tt.regex || len(m.Workarounds) == 0 || len(m.DeadEnds) == 0 {
			t.Errorf("%q: best %s (code %q, regex %v, %d workarounds)", tt.msg, m.ID, m.ErrorCode, m.RegexMatched, len(m.Workarounds))
		}
		if !strings.HasPrefix(text, tt.text) {
			t.Errorf("%q: text starts %q", tt.msg, text[:min(len(text), 120)])
		}
		before(t, text, "Do not try first", "Try:")
	}
}

// checkReport reports that workaround 1 of the out-of-memory entry failed,
// twice with one request id (by its index from 0, as earlier answers gave
// it), reports dead end 1 by its item number, and reads the entry back.
func checkReport(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	args := map[string]any{"entry_id": "pytorch/cuda-out-of-memory", "kind": "workaround", "index": 0, "worked": false, "request_id": "req-1", "note": "2.3.1"}
	for i, dup := range []bool{false, true} {
		var out ReportOut
		text := call(t, cs, "report_outcome", args, &out)
		want := ReportOut{Stored: !dup, Duplicate: dup, EntryID: "pytorch/cuda-out-of-memory", Kind: "workaround", Item: 1, Index: 0,
			Action: "Enable expandable segments when 'reserved by PyTorch but unallocated' is large",
			Rate:   6.0 / 11, Curated: 0.6, Basis: "estimate", Label: "≈55%, estimate + 1 report", Reports: 1, Worked: 0, Failed: 1}
		if out != want {
			t.Errorf("report %d: %+v, want %+v", i, out, want)
		}
		if !strings.Contains(text, "success rate now ≈55%, estimate + 1 report (0 worked, 1 failed); the curated rate is ~60%, estimate.") {
			t.Errorf("report %d: text %q", i, text)
		}
	}
	var dead ReportOut
	call(t, cs, "report_outcome", map[string]any{"entry_id": "pytorch/cuda-out-of-memory", "kind": "dead_end", "item": 1, "worked": false}, &dead)
	if dead.Rate != (0.85*10+1)/11 || dead.Reports != 1 || dead.Failed != 1 {
		t.Errorf("dead end report %+v", dead)
	}

	var e EntryOut
	text := call(t, cs, "get_entry", map[string]any{"id": "pytorch/cuda-out-of-memory"}, &e)
	if len(e.Workarounds) != 4 || len(e.DeadEnds) != 4 || e.PriorWeight != 10 {
		t.Fatalf("entry: %d workarounds, %d dead ends, prior %d", len(e.Workarounds), len(e.DeadEnds), e.PriorWeight)
	}
	if w := e.Workarounds[0]; w.Rate != 6.0/11 || w.Curated != 0.6 || w.Reports != 1 || w.Failed != 1 {
		t.Errorf("workaround 0 %+v", w)
	}
	if w := e.Workarounds[1]; w.Rate != 0.7 || w.Reports != 0 {
		t.Errorf("workaround 1 %+v", w)
	}
	if !strings.Contains(text, "✓ workaround item 1: Enable expandable segments when 'reserved by PyTorch but unallocated' is large (works ≈55%, estimate + 1 report)") {
		t.Errorf("get_entry text:\n%s", text)
	}
	before(t, text, "✗ dead_end item 1: Call torch.cuda.empty_cache() in the except handler (or before the failing line) and retry the same batch (fails ≈86%, estimate + 1 report)", "Try:")

	// A diagnosis blends the report in too.
	var d DiagnoseOut
	call(t, cs, "diagnose_log", map[string]any{"log": string(readFile(t, "examples/ddp-oom.log"))}, &d)
	if w := d.Diagnoses[0].Workarounds[0]; w.Index != 0 || w.SuccessRate != 6.0/11 || w.Rate.Reports != 1 || w.Rate.Curated != 0.6 {
		t.Errorf("diagnosis workaround 0 %+v", w)
	}
}

// An Xid from a kernel log reaches the agent with the operator's block:
// in the structured result and in the text it reads first.
func TestOperator(t *testing.T) {
	cs := connectMem(t, newService(t, nil), Options{})
	var out DiagnoseOut
	text := call(t, cs, "diagnose_log", map[string]any{"log": string(readFile(t, "examples/xid79-dmesg.log"))}, &out)
	if len(out.Diagnoses) == 0 || out.Diagnoses[0].ID != "driver/xid-79-fallen-off-bus" {
		t.Fatalf("diagnoses %+v", out.Diagnoses)
	}
	op := out.Diagnoses[0].Operator
	if op == nil || op.Severity != "critical" || op.Fault != "hardware" || op.Drain != "yes" || op.Action != "RESTART_BM" {
		t.Errorf("operator %+v", op)
	}
	if !strings.Contains(text, "Operator: critical: GPU or node unusable until acted on · hardware fault · drain the node · NVIDIA action RESTART_BM. Drain the node") {
		t.Errorf("text lacks the operator line:\n%s", text)
	}
	var e EntryOut
	call(t, cs, "get_entry", map[string]any{"id": "driver/xid-79-fallen-off-bus"}, &e)
	if e.Operator == nil || e.Operator.Drain != "yes" {
		t.Errorf("get_entry operator %+v", e.Operator)
	}
}
