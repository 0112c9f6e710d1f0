package env

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// gateLits is GateLiterals as byte slices.
var gateLits = func() [][]byte {
	var out [][]byte
	for _, l := range GateLiterals() {
		out = append(out, []byte(l))
	}
	return out
}()

// selector says whether a line not inside a block is shown.
type selector func(line []byte) bool

// gated is the gate as a scanner applies it.
func gated(line []byte) bool { return containsAny(line, gateLits) || GateStart(line) }

// gateWithout is the gate less one literal (or, for "", less GateStart).
func gateWithout(drop string) selector {
	var lits [][]byte
	for _, l := range gateLits {
		if string(l) != drop {
			lits = append(lits, l)
		}
	}
	return func(line []byte) bool {
		return containsAny(line, lits) || (drop != "" && GateStart(line))
	}
}

// cloneDetector is a deep copy of d.
func cloneDetector(d *Detector) *Detector {
	c := *d
	c.env = d.env.clone()
	c.weak = d.weak.clone()
	c.csvCols = slices.Clone(d.csvCols)
	c.csvUnits = slices.Clone(d.csvUnits)
	return &c
}

// scanLines cuts b as a scanner does: at '\n', without a trailing '\r'.
func scanLines(b []byte) [][]byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		out = append(out, bytes.TrimSuffix(l, []byte("\r")))
	}
	return out
}

func readTestdata(t testing.TB, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return scanLines(b)
}

func testdataFiles(t testing.TB) []string {
	t.Helper()
	ents, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) < 10 {
		t.Fatalf("only %d files in testdata", len(names))
	}
	return names
}

// numbered is a line with the number LineAt is given.
type numbered struct {
	file string
	n    int
	text []byte
}

func numberLines(file string, lines [][]byte) []numbered {
	out := make([]numbered, len(lines))
	for i, l := range lines {
		out[i] = numbered{file, i + 1, l}
	}
	return out
}

// runBoth feeds lines to a Detector that sees them all and to one that
// sees only those sel selects or that come while it is Pending. It
// returns both and how many lines the second skipped.
func runBoth(lines []numbered, sel selector) (all, some *Detector, skipped int) {
	all, some = NewDetector(), NewDetector()
	for _, l := range lines {
		all.LineAt(l.text, l.file, l.n)
		if some.Pending() || sel(l.text) {
			some.LineAt(l.text, l.file, l.n)
		} else {
			skipped++
		}
	}
	return all, some, skipped
}

// sameOutcome fails t unless both Detectors hold the same: Env (sources
// included) and the whole state.
func sameOutcome(t *testing.T, what string, all, some *Detector) bool {
	t.Helper()
	if ea, es := all.Env(), some.Env(); !reflect.DeepEqual(ea, es) {
		t.Errorf("%s: gated Env differs\n all: %+v\nsome: %+v", what, ea, es)
		return false
	}
	if !reflect.DeepEqual(all, some) {
		t.Errorf("%s: gated Detector state differs\n all: %+v\nsome: %+v", what, *all, *some)
		return false
	}
	return true
}

// noiseLines are training-log lines, near misses among them.
var noiseLines = []string{
	"[rank0]: step 1200/50000 | loss 2.3451 | lr 2.9e-04 | grad_norm 0.812 | tokens/s 182733",
	"2024-05-01 10:00:00,123 INFO epoch 3, step 1200, loss 2.31",
	"INFO:root:saving checkpoint to /ckpt/step_1200",
	"0: [W501 10:00:01.000000 ProcessGroupNCCL.cpp:1250] Warning: no effect",
	"Epoch 1:  42%|████▏     | 420/1000 [01:02<01:26,  6.71it/s, loss=2.31, v_num=3]",
	"  | Name  | Type | Params",
	"0 | model | GPT  | 124 M",
	"12, 13, 14",
	"GPU 0: 95% utilization, 71C",
	"OS",
	"",
	"   ",
	"|",
	"| Processes:                                                                  |",
	"|    0   N/A  N/A     20417      C   python                          15817MiB |",
	"#",
	"-----",
	"x == 1",
	"Traceback (most recent call last):",
	`  File "/workspace/train.py", line 214, in <module>`,
	"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB.",
}

// TestGateEquivalence runs each testdata file (and the adversarial one:
// prefixed statements, tables inside training output, near misses) through
// a Detector that sees every line and one that sees only the gated lines.
func TestGateEquivalence(t *testing.T) {
	total := 0
	for _, name := range testdataFiles(t) {
		all, some, skipped := runBoth(numberLines(name, readTestdata(t, name)), gated)
		sameOutcome(t, name, all, some)
		if all.Env().IsZero() {
			t.Errorf("%s: nothing detected; the test shows nothing", name)
		}
		total += skipped
	}
	if total < 50 {
		t.Errorf("only %d lines skipped in all: the gate is not exercised", total)
	}
}

// TestGateShuffled mixes the testdata lines: shuffled, interleaved with
// training-log noise (which breaks blocks off where Pending must hold),
// and in chunks of random order.
func TestGateShuffled(t *testing.T) {
	var files [][]numbered
	var every []numbered
	for _, name := range testdataFiles(t) {
		ls := numberLines(name, readTestdata(t, name))
		files = append(files, ls)
		every = append(every, ls...)
	}
	noise := numberLines("noise", nil)
	for i, s := range noiseLines {
		noise = append(noise, numbered{"noise", i + 1, []byte(s)})
	}
	noise = append(noise, numberLines("train_ddp.log", readTestdata(t, "train_ddp.log"))...)
	for seed := range int64(40) {
		r := rand.New(rand.NewSource(seed))
		var mix []numbered
		switch seed % 4 {
		case 0: // every line in random order
			mix = slices.Clone(every)
			r.Shuffle(len(mix), func(i, j int) { mix[i], mix[j] = mix[j], mix[i] })
		case 1, 2: // files in order, noise between lines
			p := 0.1 + 0.3*float64(seed%2)
			for _, i := range r.Perm(len(files)) {
				for _, l := range files[i] {
					for r.Float64() < p {
						mix = append(mix, noise[r.Intn(len(noise))])
					}
					mix = append(mix, l)
				}
			}
		case 3: // chunks of 1 to 8 lines, in random order, noise between
			var chunks [][]numbered
			for i := 0; i < len(every); {
				n := min(1+r.Intn(8), len(every)-i)
				chunks = append(chunks, every[i:i+n])
				i += n
			}
			r.Shuffle(len(chunks), func(i, j int) { chunks[i], chunks[j] = chunks[j], chunks[i] })
			for _, c := range chunks {
				mix = append(mix, c...)
				mix = append(mix, noise[r.Intn(len(noise))])
			}
		}
		all, some, skipped := runBoth(mix, gated)
		if !sameOutcome(t, fmt.Sprintf("seed %d", seed), all, some) {
			continue
		}
		if skipped == 0 {
			t.Errorf("seed %d: no line skipped", seed)
		}
	}
}

// ruleExamples holds, per rule (the regular expression's name, or what
// the rule reads), lines it acts on; "\n" joins the lines of a block. Each
// example changes a new Detector. Every regular expression of detect.go is
// a key here or in notRules.
var ruleExamples = map[string][]string{
	"keyedRE": {
		"Python version: 3.8 (64-bit runtime)", // " version"
		"PyTorch Version: 2.3.1",               // " Version"
		"triton.__version__ = 2.1.0",           // "_version"
		"nccl_Version: 2.18.1",                 // "_Version"
		"- Jax-version: 0.4.13",                // "-version"
		"JAX-Version: 0.4.13",                  // "-Version"
		"INFO:__main__:Torch version is 1.13.1+cu117",
		"- Tensorflow version (GPU?): 2.13.0 (True)",
	},
	"torchCUDARE":     {"torch.version.cuda = 11.8"},
	"builtWithRE":     {"CUDA used to build PyTorch: 12.4"},
	"cudaRuntimeRE":   {"CUDA runtime version: 12.1.105"},
	"nvDriverRE":      {"Nvidia driver version: 550.54.15"},
	"cudnnKeyRE":      {"cuDNN version: 8.9.2"},
	"cudnnValueRE":    {"cuDNN version: 8902"},
	"cudnnPathRE":     {"cuDNN version: /usr/lib/x86_64-linux-gnu/libcudnn.so.8.6.0"},
	"cudnnDLLRE":      {`cuDNN version: C:\Program Files\NVIDIA\CUDNN\v8.9\bin\cudnn64_8.dll`},
	"driverVersionRE": {"Driver Version: 535.104.05"},
	"smiCUDARE":       {"| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2 |"},
	"smiQCUDARE":      {"    CUDA Version                          : 12.2"},
	"ncclRE":          {"node1:12345:12345 [0] NCCL INFO NCCL version 2.18.1+cuda12.1"},
	"ncclTorchRE":     {"torch.cuda.nccl.version() = (2, 18, 1)"},
	"cudnnTorchRE":    {"torch.backends.cudnn.version() = 8700"},
	"ncclDriverRE":    {"node1:12345:12345 [0] NCCL INFO cudaDriverVersion 12020"},
	"driverOldRE":     {"RuntimeError: The NVIDIA driver on your system is too old (found version 11040)."},
	"jaxDriverRE":     {"The NVIDIA driver's CUDA version is 12.2 which is older than the ptxas CUDA version (12.4.131)."},
	"loadedCuDNNRE":   {"I external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:467] Loaded cuDNN version 8906"},
	"tfCuDNNRE":       {"E cuda_dnn.cc:361] Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0."},
	"cudnnMismatchRE": {"RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7005"},
	"extMismatchRE":   {"UserWarning: The detected CUDA version (12.4) mismatches the version that was used to compile PyTorch (12.1). Please make sure to use the same CUDA versions."},
	"kernelModuleRE": {
		"NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023",
		"NVIDIA Kernel Mode Setting Driver for UNIX platforms  535.104.05",
	},
	"nvccRE": {"Cuda compilation tools, release 11.8, V11.8.89"},
	"gpuListRE": {
		"GPU models and configuration:\nGPU 0: A100\nMIG 1g.10gb Device 0:\nGPU 1: A100",
		"GPU models and configuration: GPU 0: A10",
		"GPU 3: L40S (UUID: GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d)",
	},
	"gpuNameRE": {"GPU 0: NVIDIA H100 80GB HBM3", "GPU 1: Tesla V100-SXM2-16GB", "GPU 0: GeForce RTX 3090",
		"GPU 0: Quadro RTX 8000", "GPU 0: TITAN RTX", "[rank0]: GPU 0: AMD Instinct MI250X",
		"GPU 0: Radeon RX 7900 XTX", "0: GPU 7: Instinct MI300X"},
	"smiRowRE": {"|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                    0 |",
		" \t|   1  Tesla V100-SXM2...  Off | 00000000:00:1B.0 Off |                    0 |"},
	"smiMemRE": {"|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                    0 |\n" +
		"| N/A   33C    P0              62W / 400W |      4MiB / 81920MiB |      0%      Default |"},
	"pipHeaderRE": {"Package\tVersion"},
	"pipRuleRE":   {"Package    Version\n---------- -------"},
	"pipRowRE":    {"Package    Version\n---------- -------\naccelerate 0.27.2"},
	"freezeRE":    {"torch==2.1.0", "[pip3] triton==2.1.0", "pywin32==306"},
	"condaRE": {
		"[conda] numpy                     1.26.4          py311h64a7726_0    conda-forge",
		"# packages in environment at /opt/conda:\n#\nnumpy                     1.26.3          py310h5f9d8c6_0",
	},
	"csvBareRE": {"0, NVIDIA A10G, 23028 MiB, 00000000:00:1E.0, 535.104.05",
		"\u00a0 12, A10G, 23028, 00000000:00:1E.0, 535.104.05, 8.6"},
	"csvColRE": {
		"name, memory.total [MiB]\nA10G, 23028 MiB",
		"name, pci.bus_id\nA10G, 00000000:00:1E.0",
		"name, compute_cap\nA10G, 8.6",
		"index, name\n0, A10G",
		"name, driver_version\nA10G, 535.104.05",
	},
	"osKeyRE":   {"OS: Ubuntu 22.04.3 LTS (x86_64)", "INFO:root:OS: Microsoft Windows 10 Pro", "2024-05-01T10:00:00ZOS: Fedora Linux 39"},
	"pyPlatRE":  {"Python platform: Linux-5.15.0-91-generic-x86_64-with-glibc2.35"},
	"drivePath": {`  File "C:\Users\dev\a.py", line 1`},
	"pyWinRE":   {`  File "C:\Users\dev\AppData\Local\Programs\Python\Python310\lib\x.py", line 1`},
	"pyPathRE":  {`  File "/usr/lib/python3.10/site-packages/x.py", line 1`},
	"hint linux": {
		"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
		"[    4.1] NVRM: GPU at PCI:0000:07:00: GPU-1234",
		"NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05",
		"[    0.000000] Linux version 5.15.0-91-generic (buildd@lcy02-amd64-045)",
	},
	"archWarnRE": {"NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation."},
	"tfDeviceRE": {"-> device: 0, name: A100-SXM4-80GB, pci bus id: 0000:07:00.0, compute capability: 8.0"},
	"torchBareRE": {"torch 2.1.0+cu121", "torch\t2.1.0", "torch\f2.1.0", "torch\r2.1.0",
		"pytorch 2.1.0", "[default3]:torch 2.4.0+cu124"},
	"torchColonRE":   {"torch: 2.2.0 (for this run)", "[rank0]: torch: 2.2.0"},
	"pythonBannerRE": {"Python 3.11.9", "[rank0]: Python 3.10.12"},
}

// notRules are the regular expressions of detect.go that read no line on
// their own, so that no example line is theirs.
var notRules = map[string]string{
	"stampRE":   "stripPrefix: a log prefix",
	"syslogRE":  "stripPrefix: a log prefix",
	"levelRE":   "stripPrefix: a log prefix",
	"rankRE":    "stripPrefix: a log prefix",
	"cuLocalRE": "Env: a torch version's +cu label",
	"cuBuildRE": "Env: a conda build string",
	"busIDRE":   "csvRowLine: a field of a row inside a csv block",
	"capRE":     "csvRowLine: a field of a row inside a csv block",
	"driverRE":  "csvRowLine: a field of a row inside a csv block",
}

func exampleLines(ex string) []numbered {
	var out []numbered
	for i, l := range strings.Split(ex, "\n") {
		out = append(out, numbered{"ex", i + 1, []byte(l)})
	}
	return out
}

// TestGateRuleExamples: every example changes a Detector, and is seen
// whole through the gate.
func TestGateRuleExamples(t *testing.T) {
	for rule, exs := range ruleExamples {
		for _, ex := range exs {
			lines := exampleLines(ex)
			all, some, _ := runBoth(lines, gated)
			if reflect.DeepEqual(all, NewDetector()) {
				t.Errorf("%s: example %q changes nothing", rule, ex)
			}
			if !gated(lines[0].text) {
				t.Errorf("%s: example %q is not gated", rule, lines[0].text)
			}
			sameOutcome(t, rule+": "+ex, all, some)
		}
	}
}

// TestGateLiteralsNeeded drops each literal from the gate in turn, and
// GateStart: some example must then come out differently, so that every
// literal is needed and the test would catch one missing.
func TestGateLiteralsNeeded(t *testing.T) {
	drops := append(GateLiterals(), "") // "": GateStart
	for _, drop := range drops {
		sel := gateWithout(drop)
		caught := ""
	examples:
		for rule, exs := range ruleExamples {
			for _, ex := range exs {
				all, some, _ := runBoth(exampleLines(ex), sel)
				if !reflect.DeepEqual(all, some) {
					caught = rule + ": " + ex
					break examples
				}
			}
		}
		if caught == "" {
			t.Errorf("without %q the gate still agrees on every example: an example is missing, or the literal is not needed", drop)
		}
	}
	// Each of GateStart's cases is needed: an example only it selects.
	for _, ex := range []string{ruleExamples["smiRowRE"][0], ruleExamples["csvBareRE"][0], ruleExamples["pipHeaderRE"][0]} {
		if containsAny([]byte(ex), gateLits) || !GateStart([]byte(ex)) {
			t.Errorf("%q: not selected by GateStart alone", ex)
		}
	}
}

// TestGateLiterals checks the list's form: no literal holds another or a
// '\n'; all are 6 bytes or more, but for the three known short ones.
func TestGateLiterals(t *testing.T) {
	short := map[string]bool{"==": true, "OS:": true, `:\`: true}
	lits := GateLiterals()
	for i, l := range lits {
		if strings.Contains(l, "\n") || l == "" {
			t.Errorf("literal %q", l)
		}
		if len(l) < 6 && !short[l] {
			t.Errorf("literal %q is shorter than 6 bytes", l)
		}
		for j, o := range lits {
			if i != j && strings.Contains(l, o) {
				t.Errorf("literal %q holds %q", l, o)
			}
		}
	}
	if len(lits) > 60 {
		t.Errorf("%d literals", len(lits))
	}
	lits[0] = "changed"
	if GateLiterals()[0] == "changed" {
		t.Error("GateLiterals returned its own slice")
	}
}

func TestGateStart(t *testing.T) {
	tests := []struct {
		line string
		want bool
	}{
		{"|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |", true},
		{"  \t|\t0  X", true},
		{"\u3000|  1", true},
		{"|=========================================+", false},
		{"| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05", false},
		{"|0  NVIDIA", false}, // \s+ needs one
		{"|   ", false},
		{"0, NVIDIA A10G, 23028 MiB", true},
		{"123, x", true},
		{"  7, x", true},
		{"\u00a07, x", true},
		{"1234, x", false},
		{"0: [rank0] step", false},
		{"2024-05-01 10:00:00,123 INFO", false},
		{"0,NVIDIA", false},
		{"0,", false},
		{"Package    Version", true},
		{"Package", true},
		{" Package    Version", false},
		{"Packages", true},
		{"OS: Ubuntu", false}, // a literal's
		{"", false},
		{"   ", false},
	}
	for _, tt := range tests {
		if got := GateStart([]byte(tt.line)); got != tt.want {
			t.Errorf("GateStart(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
	line := []byte("  |   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |")
	if n := testing.AllocsPerRun(100, func() { GateStart(line) }); n != 0 {
		t.Errorf("GateStart allocates %v times", n)
	}
}

func TestPending(t *testing.T) {
	d := NewDetector()
	for _, step := range []struct {
		line    string
		pending bool
	}{
		{"epoch 1", false},
		{"GPU models and configuration:", true},
		{"GPU 0: A100", true},
		{"epoch 2", false},
		{"|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                    0 |", true},
		{"| N/A   33C    P0              62W / 400W |      4MiB / 81920MiB |      0%      Default |", false},
		{"Package    Version", true},
		{"---------- -------", true},
		{"torch      2.1.0", true},
		{"", false},
	} {
		d.Line([]byte(step.line), "x")
		if d.Pending() != step.pending {
			t.Fatalf("after %q Pending = %v", step.line, d.Pending())
		}
	}
}

// gateStates are Detectors not inside a block: a new one (where every
// rule may still set its field), and one after each testdata file.
func gateStates(t testing.TB) []*Detector {
	states := []*Detector{NewDetector()}
	for _, name := range testdataFiles(t) {
		d := NewDetector()
		for i, l := range readTestdata(t, name) {
			d.LineAt(l, name, i+1)
		}
		if d.Pending() {
			d.Line(nil, "end") // a blank line ends any block
		}
		if d.Pending() {
			t.Fatalf("%s: still pending", name)
		}
		states = append(states, d)
	}
	return states
}

// checkUnchanged feeds each line (none gated) to a copy of each state and
// fails if any changes it. Lines are fed one after another to the same
// copy: a Detector's values are only ever added, so one change would last
// to the end, and Pending is checked after each line.
func checkUnchanged(t *testing.T, states []*Detector, lines [][]byte) {
	t.Helper()
	for si, st := range states {
		d := cloneDetector(st)
		for i, l := range lines {
			if i%2 == 0 {
				d.LineAt(l, "x.log", i+1)
			} else {
				d.Line(l, "x.log:"+strconv.Itoa(i+1))
			}
			if d.Pending() {
				t.Fatalf("state %d: ungated line %q started a block", si, l)
			}
		}
		if reflect.DeepEqual(d, st) {
			continue
		}
		for _, l := range lines { // find the culprit
			d := cloneDetector(st)
			d.LineAt(l, "x.log", 1)
			if !reflect.DeepEqual(d, st) {
				t.Fatalf("state %d: ungated line %q changed the Detector:\n%+v\nto\n%+v", si, l, *st, *d)
			}
		}
		t.Fatalf("state %d: changed by the ungated lines together", si)
	}
}

// TestGateContract checks the contract head on: ungated lines (the
// testdata's, noise, and every one-byte edit of the rule examples that
// falls out of the gate) leave any Detector not in a block unchanged.
func TestGateContract(t *testing.T) {
	var lines [][]byte
	seen := map[string]bool{}
	add := func(l []byte) {
		if !gated(l) && bytes.IndexByte(l, '\n') < 0 && !seen[string(l)] {
			seen[string(l)] = true
			lines = append(lines, l)
		}
	}
	for _, name := range testdataFiles(t) {
		for _, l := range readTestdata(t, name) {
			add(l)
		}
	}
	for _, s := range noiseLines {
		add([]byte(s))
	}
	edits := 0
	for _, exs := range ruleExamples {
		for _, ex := range exs {
			for _, l := range strings.Split(ex, "\n") {
				before := len(lines)
				for _, v := range oneByteEdits(l) {
					add([]byte(v))
				}
				edits += len(lines) - before
			}
		}
	}
	if edits < 1000 {
		t.Errorf("only %d ungated edits of the examples", edits)
	}
	checkUnchanged(t, gateStates(t), lines)
}

// editBytes are what oneByteEdits puts in: the bytes that guards, log
// prefixes and white space are made of.
const editBytes = " \t\f\r\v:|-_.=,[]()<>\\/0123456789xXvVOSPZ"

// oneByteEdits returns s with one byte deleted, replaced or inserted.
func oneByteEdits(s string) []string {
	var out []string
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			out = append(out, s[:i]+s[i+1:])
		}
		for j := range len(editBytes) {
			c := editBytes[j : j+1]
			out = append(out, s[:i]+c+s[i:])
			if i < len(s) {
				out = append(out, s[:i]+c+s[i+1:])
			}
		}
	}
	return out
}

// FuzzGate: a line the gate does not select changes no Detector. `go test`
// runs the seeds; `go test -fuzz FuzzGate` explores.
func FuzzGate(f *testing.F) {
	for _, exs := range ruleExamples {
		for _, ex := range exs {
			for _, l := range strings.Split(ex, "\n") {
				f.Add(l)
			}
		}
	}
	for _, s := range noiseLines {
		f.Add(s)
	}
	states := gateStates(f)
	f.Fuzz(func(t *testing.T, s string) {
		line := []byte(s)
		if strings.Contains(s, "\n") || gated(line) {
			return
		}
		checkUnchanged(t, states, [][]byte{line})
	})
}

// TestGateCoversDetector reads detect.go: every []byte literal in it
// (the guards before its rules) must hold a gate literal, so that a line
// holding it is shown, or be excused in preTests; and every regular
// expression must have an example in ruleExamples, or be in notRules.
func TestGateCoversDetector(t *testing.T) {
	preTests := map[string]string{
		"ersion":         "versionLine: each of its tests has its own token, keyed keyedToks",
		"GPU ":           "gpuLine: tokGPUConfig, tokUUID or \": \"+gpuMakers",
		"torch":          "torchLine: \"torch\" then ':' or white space",
		"pytorch":        "torchLine, behind tokTorch",
		", ":             "csvLine: csvHeaderToks, tokIndexName, or GateStart for a bare row",
		"Package":        "GateStart",
		"|":              "smiRow, behind GateStart",
		"<stdout>":       "stripPrefix",
		"<stderr>":       "stripPrefix",
		":":              "stripPrefix",
		"rank":           "stripPrefix",
		"MIG ":           "modeLine: inside a block",
		"cudnn":          "modeLine: inside a block",
		"/":              "modeLine: inside a block",
		"/dist-packages": "hints: behind tokPyDir (pyPathRE)",
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "detect.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	regexps := map[string]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			for i, v := range n.Values {
				if c, ok := v.(*ast.CallExpr); ok && exprString(c.Fun) == "regexp.MustCompile" {
					regexps[n.Names[i].Name] = true
				}
			}
		case *ast.CallExpr:
			at, ok := n.Fun.(*ast.ArrayType)
			if !ok || at.Len != nil || exprString(at.Elt) != "byte" || len(n.Args) != 1 {
				return true
			}
			lit, ok := n.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			if !containsAny([]byte(s), gateLits) && preTests[s] == "" {
				t.Errorf("%s: []byte(%q) is not behind a gate literal: add one to gateCandidates, or explain it in preTests",
					fset.Position(n.Pos()), s)
			}
		}
		return true
	})
	if len(regexps) < 40 {
		t.Fatalf("found only %d regular expressions in detect.go", len(regexps))
	}
	for name := range regexps {
		if _, ok := ruleExamples[name]; !ok && notRules[name] == "" {
			t.Errorf("regular expression %s has no example in ruleExamples and is not in notRules", name)
		}
	}
	for name := range ruleExamples {
		if !regexps[name] && !strings.HasPrefix(name, "hint ") {
			t.Errorf("ruleExamples[%q]: no such regular expression", name)
		}
	}
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	}
	return ""
}
