package cli

import (
	"strings"
	"testing"
	"time"
)

// TestCheckFormats pins gpudx check's exit codes and one-line messages in
// the formats node-problem-detector and NHC read.
func TestCheckFormats(t *testing.T) {
	const td = "../../health/testdata/"
	for _, tt := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--format", "npd", "--kernel-log", td + "healthy.dmesg"}, 0, "gpudx: no GPU fault in the kernel log\n"},
		{[]string{"--format", "nhc", "--kernel-log", td + "healthy.dmesg"}, 0, ""},
		{[]string{"--format", "npd", "--kernel-log", td + "xid79.dmesg"}, 1, "gpudx: drain: Xid 79 on GPU 0000:3b:00, RESTART_BM\n"},
		{[]string{"--format", "nhc", "--kernel-log", td + "xid79.dmesg"}, 1, "gpudx: drain: Xid 79 on GPU 0000:3b:00 (1x, RESTART_BM)\n"},
		{[]string{"--format", "npd", "--kernel-log", td + "xid13-once.dmesg"}, 0, "gpudx: no drain: Xid 13 on GPU 0000:cb:00, RESTART_APP\n"},
		{[]string{"--format", "nhc", "--kernel-log", td + "xid13-twice.dmesg"}, 1, "gpudx: drain: Xid 13 on GPU 0000:cb:00 (2x, RESTART_APP)\n"},
		{[]string{"--format", "nhc", "--repeats", "3", "--kernel-log", td + "xid13-twice.dmesg"}, 0, ""},
		{[]string{"--format", "npd", "--kernel-log", td + "xid48-journal.log"}, 1, "gpudx: drain: Xid 48 on GPU 0000:07:00, WORKFLOW_XID_48\n"},
		// A narrow limit drops NVIDIA's action, then cuts.
		{[]string{"--format", "npd", "--max-output-length", "40", "--kernel-log", td + "xid48-journal.log"}, 1, "gpudx: drain: Xid 48 on GPU 0000:07:00\n"},
		{[]string{"--format", "npd", "--max-output-length", "30", "--kernel-log", td + "xid48-journal.log"}, 1, "gpudx: drain: Xid 48 on GPU 00\n"},
		{[]string{"--format", "npd", "--since", "2026-11-27T08:00:00Z", "--kernel-log", td + "xid48-journal.log"}, 0, "gpudx: no drain: Xid 63 on GPU 0000:07:00, IGNORE\n"},
		{[]string{"--format", "nhc", "--kmsg", td + "xid79.kmsg"}, 1, "gpudx: drain: Xid 79 on GPU 0000:3b:00 (1x, RESTART_BM)\n"},
		// Unknown (2): the reason on stdout, where NPD and NHC read it.
		{[]string{"--format", "npd", "--kernel-log", td + "absent.log"}, 2, "gpudx: cannot check: --kernel-log ../../health/testdata/absent.log: no such file\n"},
		{[]string{"--format", "nhc", "--since", "yesterday", "--kernel-log", td + "xid79.dmesg"}, 2,
			"gpudx: cannot check: --since: want RFC 3339 (2026-11-27T08:00:00Z), '2026-11-27 08:00:00' (UTC) or a duration (6h), got \"yesterday\"\n"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := run(t, "", nil, append([]string{"check"}, tt.args...)...)
			if r.code != tt.code || r.out != tt.out {
				t.Errorf("exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q", r.code, r.out, r.err, tt.code, tt.out)
			}
			if len(strings.TrimSpace(r.out)) > npdMaxOutput && tt.args[1] == "npd" {
				t.Errorf("npd message is %d bytes, over node-problem-detector's default %d", len(r.out), npdMaxOutput)
			}
		})
	}
}

func TestCheckText(t *testing.T) {
	r := run(t, "", nil, "check", "--kernel-log", "../../health/testdata/xid79.dmesg")
	if r.code != 1 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	for _, want := range []string{
		"DRAIN this node: 1 of 2 GPU events found call for it.\n",
		"! Xid 79 on GPU 0000:3b:00 — Xid 79: GPU has fallen off the bus (critical, hardware fault)\n    drain on the first event: seen once on GPU 0000:3b:00\n    NVIDIA action: RESTART_BM\n",
		"  Xid 43 on GPU 0000:86:00 — ",
		"Read 9 lines from ../../health/testdata/xid79.dmesg. NVML not consulted: gpudx is built without cgo.\n",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("missing %q in:\n%s", want, r.out)
		}
	}
	r = run(t, "", nil, "check", "--kernel-log", "../../health/testdata/xid-unknown.dmesg")
	if want := "\nNot judged (no operator rule in the knowledge base):\n  Xid 8 on GPU 0000:01:00, 2 lines, first at line 2: [20418.551203] NVRM: Xid (PCI:0000:01:00): 8, pid=30112, name=python, Channel 00000010\n"; r.code != 0 || !strings.Contains(r.out, want) {
		t.Errorf("unknown Xid: exit %d\n%s", r.code, r.out)
	}
	r = run(t, "", nil, "check", "--format", "json", "--kernel-log", "-")
	if r.code != 0 || !strings.Contains(r.out, `"drain": false`) || !strings.Contains(r.out, `"source": "standard input"`) {
		t.Errorf("json on empty stdin: exit %d\n%s%s", r.code, r.out, r.err)
	}
	r = run(t, "", nil, "check", "--format", "yaml")
	if r.code != 2 || r.err != "gpudx: --format: want text, npd, nhc, json, got \"yaml\"\n" {
		t.Errorf("bad format: %d %q", r.code, r.err)
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]string{
		"6h":                   "2026-11-27T06:00:00Z",
		"2026-11-27T08:00:00Z": "2026-11-27T08:00:00Z",
		"2026-11-27 08:00:00":  "2026-11-27T08:00:00Z",
		"2026-11-26":           "2026-11-26T00:00:00Z",
	} {
		got, err := parseSince(in, now)
		if err != nil || got.Format(time.RFC3339) != want {
			t.Errorf("%q: %v %v, want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"-1h", "soon"} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
