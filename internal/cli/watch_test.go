package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestWatchJSONLines: standard input and a command's output, followed to
// their end; one JSON object a line per event, with the fields of
// diagnose --format json's diagnoses beside the event's own.
func TestWatchJSONLines(t *testing.T) {
	needSh(t)
	in := "step 1\nNVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n" +
		"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
	r := run(t, in, nil, "watch", "--format", "jsonl", "-",
		"--cmd", "echo 'RuntimeError: CUDA error: an illegal memory access was encountered' >&2")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	lines := strings.Split(strings.TrimSuffix(r.out, "\n"), "\n")
	got := map[string]string{}
	for _, l := range lines {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		for _, k := range []string{"time", "source", "event", "occurrences", "id", "title", "domain", "root", "count",
			"first_line", "last_line", "evidence", "facts", "root_cause", "dead_ends", "workarounds", "leads_to"} {
			if _, ok := e[k]; !ok {
				t.Errorf("event %s lacks %q", e["id"], k)
			}
		}
		got[e["source"].(string)+" "+e["event"].(string)+" "+e["id"].(string)] = strings.TrimSuffix(strings.TrimPrefix(
			strings.Join([]string{jsonNum(e["occurrences"]), jsonNum(e["first_line"]), jsonNum(e["last_line"])}, " "), ""), "")
	}
	want := map[string]string{
		"- new driver/xid-79-fallen-off-bus": "2 2 3",
		"echo 'RuntimeError: CUDA error: an illegal memory access was encountered' >&2 new cuda/illegal-memory-access": "1 1 1",
	}
	if len(got) != len(want) {
		t.Errorf("events %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: occurrences, first and last line %q, want %q", k, got[k], v)
		}
	}
	if !strings.Contains(r.err, "the command exited with status 0") {
		t.Errorf("stderr: %s", r.err)
	}
}

func jsonNum(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestWatchUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"watch"}, "nothing to watch"},
		{[]string{"watch", "--format", "xml", "-"}, "--format: want text, jsonl"},
		{[]string{"watch", "--window", "0s", "-"}, "--window and --poll must be positive"},
		{[]string{"watch", "--metrics", "256.0.0.1:1", "-"}, "--metrics:"},
	} {
		r := run(t, "", nil, tt.args...)
		if r.code != ExitUsage || !strings.Contains(r.err, tt.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, r.code, r.err, ExitUsage, tt.msg)
		}
	}
}

// TestWatchText: the text event for a person.
func TestWatchText(t *testing.T) {
	r := run(t, "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n", nil, "watch", "-")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	_, rest, ok := strings.Cut(r.out, "Z  -  ROOT CAUSE  driver/xid-79-fallen-off-bus  [critical, drain: yes, RESTART_BM]  GPU 0000:3b:00\n  Xid 79: GPU has fallen off the bus\n  1: NVRM: Xid (PCI:0000:3b:00): 79")
	if !ok || !strings.Contains(rest, "\n  → Drain the node") || !strings.HasSuffix(rest, "  gpudx kb show driver/xid-79-fallen-off-bus\n") {
		t.Errorf("text:\n%s", r.out)
	}
}
