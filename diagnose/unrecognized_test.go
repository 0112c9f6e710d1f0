package diagnose

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
	"github.com/gpudx/gpudx/scan"
)

func ourScanner(t *testing.T) *scan.Scanner {
	t.Helper()
	es, err := kb.LoadFS(knowledge.FS, ".", "knowledge/")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := scan.New(es)
	return s
}

// When no entry matches, the report names what looks like the failure:
// the exception ending a traceback, a status name, an Xid the knowledge
// base lacks, an error line at the end.
func TestUnrecognizedFailures(t *testing.T) {
	s := ourScanner(t)
	tests := []struct {
		file  string
		want  []string // kind|line|names
		first string   // the first item's text
	}{
		{"traceback.log", []string{"exception|11|RuntimeError"},
			"RuntimeError: fused_rope_forward: expected q and k to have the same head dimension, got 128 and 64"},
		{"xid-status.log", []string{"xid|2|Xid 171"}, ""},
		{"slurm-end.log", []string{"status|3|NVJPEG_STATUS_EXECUTION_FAILED", "error_line|4|"},
			"decode: nvjpegDecode returned NVJPEG_STATUS_EXECUTION_FAILED for image 000481.jpg"},
		// trtexec sums up after the parser's error: "Failed to create
		// engine", "Engine set up failed", "&&&& FAILED". The first lines
		// of the burst say why.
		{"trtexec-parse.log", []string{"error_line|8|", "error_line|9|", "error_line|10|"},
			`[11/27/2026-10:12:03] [E] [TRT] ModelImporter.cpp:777: ERROR: builtin_op_importers.cpp:5653 In function importFallbackPluginImporter:`},
	}
	for _, tt := range tests {
		b, err := os.ReadFile(filepath.Join("testdata", "unrecognized", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		r := readLogs(t, s, nil, string(b))
		if len(r.Diagnoses) != 0 {
			t.Errorf("%s: diagnosed %v", tt.file, ids(r))
		}
		var got []string
		for _, u := range r.Unrecognized {
			got = append(got, u.Kind+"|"+itoa(u.Line)+"|"+strings.Join(u.Names, ","))
			if u.Nearest == nil || u.Sure == "" {
				t.Errorf("%s: no nearest entries or sureness: %+v", tt.file, u)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: unrecognized %q, want %q", tt.file, got, tt.want)
		}
		if tt.first != "" && (len(r.Unrecognized) == 0 || r.Unrecognized[0].Text != tt.first) {
			t.Errorf("%s: first %+v", tt.file, r.Unrecognized)
		}
	}
}

// Silent where nothing failed (the clean logs of bench/eval and the
// examples), where an entry matched, and for an error line far from the
// end that the run survived.
func TestUnrecognizedIsSilent(t *testing.T) {
	s := ourScanner(t)
	files, _ := filepath.Glob("../bench/eval/clean/*")
	files = append(files, "../examples/clean-training.log", "../examples/ddp-oom.log", "../examples/xid79-dmesg.log")
	if len(files) < 10 {
		t.Fatalf("only %d clean logs", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if r := readLogs(t, s, nil, string(b)); len(r.Unrecognized) != 0 {
			t.Errorf("%s: unrecognized %+v", f, r.Unrecognized)
		}
	}
	survived := "step 1 loss 2.0\nWARNING: retrying: connection failed\nerror: could not fetch shard 3, retrying\n" + strings.Repeat("step 2 loss 1.9\n", 60)
	if r := readLogs(t, s, nil, survived); len(r.Unrecognized) != 0 {
		t.Errorf("survived error line: %+v", r.Unrecognized)
	}
	// TensorRT's warning that one builder strategy failed; the build went on.
	trt := "[W] [TRT] Engine generation failed with backend strategy 2.\nError message: [optimizer.cpp::computeCosts::3869] Error Code 10: Internal Error (Could not find any implementation for node /stem/Conv.).\nSkipping this backend strategy.\n[I] Engine built in 12.3 sec.\n"
	if r := readLogs(t, s, nil, trt); len(r.Diagnoses) != 0 || len(r.Unrecognized) != 0 {
		t.Errorf("TensorRT strategy warning: %v %+v", ids(r), r.Unrecognized)
	}
	known := "Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\nRuntimeError: CUDA error: an illegal memory access was encountered\n"
	if r := readLogs(t, s, nil, known); len(r.Diagnoses) == 0 || len(r.Unrecognized) != 0 {
		t.Errorf("known error: %v %+v", ids(r), r.Unrecognized)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
