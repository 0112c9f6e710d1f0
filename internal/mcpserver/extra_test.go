package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBatchLookup looks up three messages in one call over HTTP.
func TestBatchLookup(t *testing.T) {
	cs := connectHTTP(t, newService(t, nil), Options{})
	var out BatchLookupOut
	text := call(t, cs, "lookup_errors", map[string]any{"messages": []string{
		"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
		"CUBLAS_STATUS_ALLOC_FAILED",
		"zzzz qqqq",
	}, "limit": 2}, &out)
	if len(out.Results) != 3 {
		t.Fatalf("%d results", len(out.Results))
	}
	first := out.Results[0].Matches
	if len(first) == 0 || first[0].ID != "driver/xid-79-fallen-off-bus" || !first[0].RegexMatched || len(first) > 2 {
		t.Errorf("Xid 79 line: %+v", first)
	}
	if m := out.Results[1].Matches; len(m) == 0 || m[0].ErrorCode != "CUBLAS_STATUS_ALLOC_FAILED" {
		t.Errorf("CUBLAS_STATUS_ALLOC_FAILED: %+v", m)
	}
	if len(out.Results[2].Matches) != 0 || !strings.Contains(text, "3. zzzz qqqq\n   no known error\n") {
		t.Errorf("nonsense matched %+v; text:\n%s", out.Results[2].Matches, text)
	}
	if !strings.HasPrefix(text, "1. NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n   driver/xid-79-fallen-off-bus (message matched)\n") {
		t.Errorf("text:\n%s", text)
	}
	for _, tt := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"messages": []string{}}, "messages is empty: give one or more error names or lines"},
		{map[string]any{"messages": []string{"a", " "}}, "messages[1] is empty"},
		{map[string]any{"messages": make([]string, 101)}, "101 messages; lookup_errors takes at most 100 per call"},
		{map[string]any{"messages": []string{"a"}, "limit": 9}, "limit 9: want 1 to 5"},
	} {
		if got := callErr(t, cs, "lookup_errors", tt.args); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestErrorChain follows Xid 79's graph both ways, with reverse edges.
func TestErrorChain(t *testing.T) {
	cs := connectMem(t, newService(t, nil), Options{})
	var out ChainOut
	text := call(t, cs, "error_chain", map[string]any{"id": "driver/xid-79-fallen-off-bus"}, &out)
	// Xid 79 names no cause itself; Xid 32's leads_to names it.
	if len(out.Causes) != 1 || out.Causes[0] != (ChainLink{ID: "driver/xid-32-pushbuffer-stream", Title: out.Causes[0].Title, Depth: 1,
		From: "driver/xid-79-fallen-off-bus", Via: "leads_to of driver/xid-32-pushbuffer-stream", Known: true}) || out.Causes[0].Title == "" {
		t.Errorf("causes %+v", out.Causes)
	}
	var ids []string
	for _, l := range out.Consequences {
		ids = append(ids, l.ID)
	}
	// Its own leads_to first, in order; then entries whose preceded_by
	// names Xid 79, each once.
	want := []string{"driver/gpu-lost", "cuda/unknown-error", "cuda/unspecified-launch-failure", "nccl/watchdog-timeout", "nccl/unhandled-cuda-error", "driver/nvidia-smi-cannot-communicate", "container/k8s-device-plugin-gpu-unhealthy"}
	if len(ids) != 13 || !slices.Equal(ids[:7], want) {
		t.Errorf("consequences %v", ids)
	}
	for _, id := range []string{"driver/xid-154-recovery-action-changed", "driver/xid-74-nvlink-error", "nccl/heartbeat-monitor", "jax/no-visible-gpu"} {
		i := slices.Index(ids, id)
		if i < 7 || !strings.HasPrefix(out.Consequences[i].Via, "preceded_by of "+id) {
			t.Errorf("%s missing or not a reverse edge: %+v", id, out.Consequences)
		}
	}
	if !strings.Contains(text, "Caused by (look earlier in the log):\n  - driver/xid-32-pushbuffer-stream ") {
		t.Errorf("text:\n%s", text)
	}
	// Depth 2 reaches further without repeating an id.
	var deep ChainOut
	call(t, cs, "error_chain", map[string]any{"id": "driver/xid-79-fallen-off-bus", "depth": 2}, &deep)
	for _, links := range [][]ChainLink{deep.Causes, deep.Consequences} {
		seen := map[string]bool{}
		for _, l := range links {
			if l.ID == "driver/xid-79-fallen-off-bus" || seen[l.ID] {
				t.Errorf("%s is the entry itself or listed twice", l.ID)
			}
			seen[l.ID] = true
		}
	}
	// Xid 32 has no recorded cause; the consequences reach further.
	if len(deep.Causes) != 1 || len(deep.Consequences) <= len(out.Consequences) || deep.Consequences[len(deep.Consequences)-1].Depth != 2 {
		t.Errorf("depth 2: %d causes, %d consequences", len(deep.Causes), len(deep.Consequences))
	}
	if got := callErr(t, cs, "error_chain", map[string]any{"id": "driver/xid-79-fallen-off-bus", "depth": 4}); got != "depth 4: want 1 to 3" {
		t.Errorf("depth 4: %q", got)
	}
	if got := callErr(t, cs, "error_chain", map[string]any{"id": ""}); !strings.HasPrefix(got, "id is empty") {
		t.Errorf("empty id: %q", got)
	}
}

// TestCheckVersions judges PyTorch releases against the version tables.
func TestCheckVersions(t *testing.T) {
	cs := connectMem(t, newService(t, nil), Options{})
	type row struct{ id, status, fixedIn string }
	rows := func(hits []VersionHit) []row {
		var r []row
		for _, h := range hits {
			r = append(r, row{h.ID, h.Status, h.FixedIn})
		}
		return r
	}
	var out VersionsOut
	text := call(t, cs, "check_versions", map[string]any{"environment": map[string]any{"torch": "1.8.0"}, "domain": "cuda"}, &out)
	wantAffected := []row{
		{"cuda/cublas-internal-error", "upgrade", "1.8.1"},
		{"cuda/cublas-internal-error-cublascreate", "upgrade", "1.8.1"},
		{"cuda/cudnn-not-initialized", "upgrade", "1.8.1"},
		{"cuda/cufft-internal-error", "upgrade", "2.1.0"},
	}
	if got := rows(out.Affected); !slices.Equal(sorted(got), wantAffected) {
		t.Errorf("affected %+v", got)
	}
	if got := rows(out.RuledOut); !slices.Equal(got, []row{{"cuda/cudnn-frontend-no-plan", "not_affected", "2.3.1"}}) {
		t.Errorf("ruled out %+v", got)
	}
	if out.Unknown != 3 || !strings.HasPrefix(text, "Affected: 4 known problems.\n") {
		t.Errorf("unknown %d; text:\n%s", out.Unknown, text)
	}
	// Versions read from collect_env text: 2.3.1 carries the cuDNN
	// frontend fix.
	out = VersionsOut{}
	call(t, cs, "check_versions", map[string]any{"text": "PyTorch version: 2.3.1+cu121\nIs debug build: False\nCUDA used to build PyTorch: 12.1\n", "domain": "cuda"}, &out)
	if out.Environment.Torch != "2.3.1+cu121" || !slices.Contains(rows(out.RuledOut), row{"cuda/cudnn-frontend-no-plan", "fixed_installed", "2.3.1"}) || len(out.Affected) != 0 {
		t.Errorf("env %+v affected %+v ruled out %+v", out.Environment, rows(out.Affected), rows(out.RuledOut))
	}
	if got := callErr(t, cs, "check_versions", map[string]any{"text": "nothing here"}); !strings.HasPrefix(got, "no versions: give environment") {
		t.Errorf("no versions: %q", got)
	}
}

func sorted[T any](s []T) []T {
	slices.SortFunc(s, func(a, b T) int {
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		return strings.Compare(string(x), string(y))
	})
	return s
}

// TestResourcesAndPrompts reads entries through the URI template and
// gets each prompt.
func TestResourcesAndPrompts(t *testing.T) {
	cs := connectHTTP(t, newService(t, nil), Options{})
	ctx := context.Background()
	tmpls, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tmpls.ResourceTemplates) != 1 || tmpls.ResourceTemplates[0].URITemplate != "gpudx://entries/{domain}/{slug}" {
		t.Fatalf("templates %+v %v", tmpls, err)
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "gpudx://entries/driver/xid-79-fallen-off-bus"})
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		ID       string `json:"id"`
		Operator struct {
			Drain, Action string
		} `json:"operator"`
	}
	if len(res.Contents) != 1 || res.Contents[0].MIMEType != "application/json" || json.Unmarshal([]byte(res.Contents[0].Text), &e) != nil ||
		e.ID != "driver/xid-79-fallen-off-bus" || e.Operator.Drain != "yes" || e.Operator.Action != "RESTART_BM" {
		t.Errorf("entry resource %+v", res.Contents)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "gpudx://entries/driver/no-such-entry"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("unknown entry: %v", err)
	}
	idx, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "gpudx://entries"})
	if err != nil {
		t.Fatal(err)
	}
	var items []IndexItem
	if err := json.Unmarshal([]byte(idx.Contents[0].Text), &items); err != nil || len(items) < 100 ||
		!slices.Contains(items, IndexItem{"driver/xid-79-fallen-off-bus", "gpudx://entries/driver/xid-79-fallen-off-bus", "Xid 79: GPU has fallen off the bus", "driver"}) {
		t.Errorf("index: %d items, %v", len(items), err)
	}

	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"diagnose_job", "explain_oom", "node_health"}) {
		t.Errorf("prompts %v", names)
	}
	for _, tt := range []struct {
		name string
		args map[string]string
		want []string
	}{
		{"diagnose_job", map[string]string{"log": "RuntimeError: CUDA error: an illegal memory access was encountered"},
			[]string{"Call diagnose_log with this output as \"log\":\n\n```\nRuntimeError: CUDA error: an illegal memory access was encountered\n```", "error_chain", "check_versions", "report_outcome"}},
		{"explain_oom", map[string]string{"message": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "snapshot_path": "/tmp/snap.pickle"},
			[]string{"Call diagnose_log with this message", `analyze_memory_snapshot with "path": "/tmp/snap.pickle"`}},
		{"node_health", map[string]string{"kernel_log": "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus."},
			[]string{"GPU has fallen off the bus.\n```", "if_repeats", "gpudx check"}},
	} {
		r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: tt.name, Arguments: tt.args})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		tc, ok := r.Messages[0].Content.(*mcp.TextContent)
		if len(r.Messages) != 1 || r.Messages[0].Role != "user" || !ok {
			t.Fatalf("%s: %+v", tt.name, r.Messages)
		}
		for _, w := range tt.want {
			if !strings.Contains(tc.Text, w) {
				t.Errorf("%s: missing %q in:\n%s", tt.name, w, tc.Text)
			}
		}
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "explain_oom"}); err == nil || !strings.Contains(err.Error(), "message is required") {
		t.Errorf("explain_oom without message: %v", err)
	}
}
