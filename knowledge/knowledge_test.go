package knowledge_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
	"github.com/gpudx/gpudx/scan"
)

func load(t *testing.T) []*kb.Entry {
	t.Helper()
	entries, err := kb.LoadFS(knowledge.FS, ".", "knowledge/")
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// TestLintClean: the built-in knowledge base has no lint problem at all,
// with the registry rule on.
func TestLintClean(t *testing.T) {
	files, err := kb.ReadFS(knowledge.FS, ".", "knowledge/")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("only %d entries", len(files))
	}
	reg, err := kb.ReadRegistryFS(knowledge.FS, ".", "knowledge/")
	if err != nil {
		t.Fatal(err)
	}
	if reg.Len() < 100 {
		t.Fatalf("registry holds only %d names", reg.Len())
	}
	// Items whose action names a release or GPU series without a
	// condition are a known backlog (warnings): their number must not grow.
	scoped := 0
	for _, p := range (&kb.Linter{Registry: reg}).Lint(files) {
		if p.Warning && strings.HasSuffix(p.Field, ".condition") {
			scoped++
			continue
		}
		t.Error(p)
	}
	if scoped > maxUnconditionedScope {
		t.Errorf("%d items name a release or GPU series without a condition (at most %d): give the new ones a condition (gpudx kb lint lists them)", scoped, maxUnconditionedScope)
	}
}

// maxUnconditionedScope is the backlog of items that name a release or a
// GPU series and carry no condition yet.
const maxUnconditionedScope = 14

// anError is a line of a real error, for warnings to stand beside.
const anError = "RuntimeError: CUDA error: an illegal memory access was encountered"

// TestEveryExampleDiagnosesItsEntry runs the whole pipeline on each
// example line alone: its own entry must be the root diagnosis, or an entry
// that the two have declared as easily confused. A warning is never
// reported alone: beside an error it must be diagnosed, after the error.
func TestEveryExampleDiagnosesItsEntry(t *testing.T) {
	entries := load(t)
	s, err := scan.New(entries)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*kb.Entry{}
	for _, e := range entries {
		byID[e.ID] = e
	}
	for _, e := range entries {
		for _, ex := range e.Examples.Match {
			in := ex
			if e.IsWarning() {
				in = ex + "\n" + anError
			}
			r, err := diagnose.Read(s, strings.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			if e.IsWarning() {
				at := slices.IndexFunc(r.Diagnoses, func(d *diagnose.Diagnosis) bool {
					return d.ID == e.ID || kb.Confused(e, byID[d.ID])
				})
				if at < 1 {
					t.Errorf("%s: warning example at position %d beside an error: %q", e.ID, at, ex)
				}
				continue
			}
			if len(r.Diagnoses) == 0 {
				t.Errorf("%s: example not diagnosed: %q", e.ID, ex)
				continue
			}
			top := r.Diagnoses[0]
			if top.ID != e.ID && !kb.Confused(e, byID[top.ID]) {
				t.Errorf("%s: example diagnosed as %s: %q", e.ID, top.ID, ex)
			}
		}
	}
}

// TestCleanLogsAreClean: ordinary training output gives no diagnosis.
func TestCleanLogsAreClean(t *testing.T) {
	entries := load(t)
	s, _ := scan.New(entries)
	clean := []string{
		"Epoch 1/10: 100%|##########| 782/782 [01:02<00:00, 12.5it/s, loss=0.412]",
		"gpu-node-02:5512:5680 [0] NCCL INFO comm 0x55e0a1c0 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 7000 commId 0x1c2d3e4f - Init COMPLETE",
		"gpu-node-02:5512:5512 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0",
		"[rank0]:[I1121 10:21:09.118000 ProcessGroupNCCL.cpp:914] [PG ID 0 PG GUID 0 Rank 0] ProcessGroupNCCL initialization options: size: 8, global rank: 0, TIMEOUT(ms): 600000",
		"2026-11-21 10:00:01.123456: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1886] Created device /job:localhost/replica:0/task:0/device:GPU:0 with 78911 MB memory:  -> device: 0, name: NVIDIA A100-SXM4-80GB, pci bus id: 0000:07:00.0, compute capability: 8.0",
		"| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |",
		"|   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |",
		"max memory allocated: 61.3 GiB, reserved: 64.0 GiB",
		"Successfully installed torch-2.5.1 nvidia-cudnn-cu12-9.1.0.70 nvidia-nccl-cu12-2.21.5",
		"I1121 10:00:02.000000 cuda_dnn.cc:529] Loaded cuDNN version 90300",
		"torch.cuda.is_available(): True, device count: 8",
	}
	logs := map[string]string{"inline": strings.Join(clean, "\n")}
	// The clean logs the eval uses: whole healthy runs and tool outputs.
	files, err := filepath.Glob("../bench/eval/clean/*.log")
	if err != nil || len(files) == 0 {
		t.Fatalf("no clean logs: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		logs[f] = string(data)
	}
	for name, log := range logs {
		r, err := diagnose.Read(s, strings.NewReader(log))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range r.Diagnoses {
			t.Errorf("%s diagnosed as %s: %v", name, d.ID, d.Evidence)
		}
	}
}
