package diagnose

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
	"github.com/gpudx/gpudx/scan"
)

// readLogs diagnoses inputs (one file each, named) with scanner s.
func readLogs(t *testing.T, s *scan.Scanner, names []string, logs ...string) *Report {
	t.Helper()
	c := NewCollector(s.Entries())
	for i, l := range logs {
		if len(logs) > 1 {
			c.File(names[i])
		}
		st, err := Plan(s).Visit(strings.NewReader(l), c)
		if err != nil {
			t.Fatal(err)
		}
		c.AddStats(st)
	}
	return c.Report()
}

// After a fatal hardware event, the CUDA error the job printed follows
// from it: one root cause, the Xid, whether the kernel log is a file of
// its own (a node's dmesg next to the job's output) or comes first in the
// same file. Every family the knowledge base holds is tried, with the
// entry's own first example line as the kernel log.
func TestHardwareEventIsTheRoot(t *testing.T) {
	es, err := kb.LoadFS(knowledge.FS, ".", "knowledge/")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := scan.New(es)
	const app = "2026-11-21 03:12:51,407 ERROR train.py:212 RuntimeError: CUDA error: unspecified launch failure\n"
	var families []string
	for _, e := range es {
		d := &Diagnosis{entry: e}
		if !hardwareEvent(d) {
			continue
		}
		families = append(families, e.ID)
		if len(e.Examples.Match) == 0 {
			t.Errorf("%s: no example line", e.ID)
			continue
		}
		dmesg := e.Examples.Match[0] + "\n"
		for _, tc := range []struct {
			name string
			r    *Report
		}{
			{"two files", readLogs(t, s, []string{"dmesg.txt", "train.log"}, dmesg, app)},
			{"one file", readLogs(t, s, nil, dmesg+app)},
		} {
			var roots []string
			var cuda *Diagnosis
			for _, d := range tc.r.Diagnoses {
				if d.Root {
					roots = append(roots, d.ID)
				}
				if d.ID == "cuda/unspecified-launch-failure" {
					cuda = d
				}
			}
			if cuda == nil {
				t.Errorf("%s, %s: the CUDA error was not found", e.ID, tc.name)
				continue
			}
			if !slices.Contains(roots, e.ID) || slices.Contains(roots, cuda.ID) || !slices.Contains(cuda.CausedBy, e.ID) {
				t.Errorf("%s, %s: roots %v, CUDA error caused by %v", e.ID, tc.name, roots, cuda.CausedBy)
			}
		}
	}
	// The families the issue names are all hardware events.
	for _, id := range []string{"driver/xid-79-fallen-off-bus", "driver/xid-48-double-bit-ecc", "driver/xid-64-row-remap-failed",
		"driver/xid-94-contained-ecc", "driver/xid-95-uncontained-ecc", "driver/xid-119-gsp-rpc-timeout",
		"driver/xid-120-gsp-error", "driver/xid-140-unrecovered-ecc", "driver/gpu-lost"} {
		if !slices.Contains(families, id) {
			t.Errorf("%s is not treated as a hardware event (families: %v)", id, families)
		}
	}
}

// The case, and the limits: a CUDA error printed before the Xid in
// the same file does not follow from it, nor one on another host.
func TestHardwareEventOrderAndNode(t *testing.T) {
	es, err := kb.LoadFS(knowledge.FS, ".", "knowledge/")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := scan.New(es)
	xid := "Nov 21 03:12:44 gpu-node-07 kernel: NVRM: Xid (PCI:0000:b3:00): 79, pid=48213, name=python3, GPU has fallen off the bus.\n"
	app := "RuntimeError: CUDA error: unspecified launch failure\n"
	r := readLogs(t, s, nil, xid+app)
	if len(r.Diagnoses) < 2 || r.Diagnoses[0].ID != "driver/xid-79-fallen-off-bus" || !r.Diagnoses[0].Root ||
		r.Diagnoses[1].ID != "cuda/unspecified-launch-failure" || r.Diagnoses[1].Root {
		t.Fatalf("xid 79 then launch failure: %v", ids(r))
	}
	want := "after driver/xid-79-fallen-off-bus: the knowledge base says driver/xid-79-fallen-off-bus leads to cuda/unspecified-launch-failure"
	if !slices.Contains(r.Diagnoses[1].Why, want) {
		t.Errorf("why %q", r.Diagnoses[1].Why)
	}
	// The CUDA error first, then the Xid: two roots.
	r = readLogs(t, s, nil, app+xid)
	if roots := rootIDs(r); len(roots) != 2 {
		t.Errorf("launch failure before the Xid: roots %v", roots)
	}
	// Another host's job log: the NCCL prefix names gpu-node-08.
	other := "gpu-node-08:2290:2290 [0] NCCL INFO comm 0x55d5c1a0e2b0 rank 0 nranks 8 cudaDev 0 busId 18000 commId 0x1 - Init COMPLETE\n" + app
	r = readLogs(t, s, []string{"dmesg-node07.txt", "node08.log"}, xid, other)
	if roots := rootIDs(r); !slices.Contains(roots, "cuda/unspecified-launch-failure") {
		t.Errorf("another host: roots %v", roots)
	}
	same := strings.ReplaceAll(other, "gpu-node-08", "gpu-node-07")
	r = readLogs(t, s, []string{"dmesg-node07.txt", "node07.log"}, xid, same)
	if roots := rootIDs(r); slices.Contains(roots, "cuda/unspecified-launch-failure") {
		t.Errorf("same host: roots %v", roots)
	}
}

func ids(r *Report) []string {
	var out []string
	for _, d := range r.Diagnoses {
		out = append(out, d.ID)
	}
	return out
}

func rootIDs(r *Report) []string {
	var out []string
	for _, d := range r.Diagnoses {
		if d.Root {
			out = append(out, d.ID)
		}
	}
	return out
}
