package env

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpudx/gpudx/facts"
)

const mib = int64(1) << 20

// want describes an expected Environment: every scalar field and the GPU
// list exactly; packages and sources as a subset (nil: not checked);
// npkgs the exact number of packages when not -1.
type want struct {
	env     Environment
	pkgs    map[string]string
	npkgs   int
	sources map[string]string
}

func parseFile(t *testing.T, name string) Environment {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e, err := Parse(f, name)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return e
}

func check(t *testing.T, got Environment, w want) {
	t.Helper()
	for _, k := range stringFields {
		if g, x := *got.field(k), *w.env.field(k); g != x {
			t.Errorf("%s = %q, want %q (source %q)", k, g, x, got.Sources[k])
		}
	}
	if !reflect.DeepEqual(got.GPUs, w.env.GPUs) {
		t.Errorf("GPUs =\n  %+v\nwant\n  %+v", got.GPUs, w.env.GPUs)
	}
	for k, v := range w.pkgs {
		if got.Packages[k] != v {
			t.Errorf("packages[%q] = %q, want %q", k, got.Packages[k], v)
		}
	}
	if w.npkgs >= 0 && len(got.Packages) != w.npkgs {
		t.Errorf("%d packages, want %d: %v", len(got.Packages), w.npkgs, got.Packages)
	}
	for k, v := range w.sources {
		if got.Sources[k] != v {
			t.Errorf("sources[%q] = %q, want %q", k, got.Sources[k], v)
		}
	}
}

func gpus(name string, mem int64, n int, busIDs ...string) []GPU {
	var gs []GPU
	for i := range n {
		g := GPU{Index: i, Name: name, MemoryBytes: mem}
		if i < len(busIDs) {
			g.BusID = busIDs[i]
		}
		gs = append(gs, g)
	}
	return gs
}

// TestParseFiles reads each captured tool output in testdata and checks
// every field it must (and must not) yield.
func TestParseFiles(t *testing.T) {
	tests := []struct {
		file string
		want want
	}{
		{"collect_env_linux.txt", want{
			env: Environment{Torch: "2.1.0+cu121", TorchCUDA: "12.1", CUDA: "12.2.140", Driver: "535.104.05",
				CUDNN: "8.9.2", NCCL: "2.18.1", Python: "3.10.12", OS: "linux", OSDetail: "Ubuntu 22.04.3 LTS (x86_64)",
				GPUs: gpus("NVIDIA A100-SXM4-80GB", 0, 2)},
			pkgs: map[string]string{"numpy": "1.24.1", "torch": "2.1.0+cu121", "nvidia-cudnn-cu12": "8.9.2.26",
				"nvidia-nccl-cu12": "2.18.1", "triton": "2.1.0", "torchvision": "0.16.0+cu121", "torchaudio": "2.1.0+cu121"},
			npkgs: 7,
			sources: map[string]string{"torch": "collect_env_linux.txt:2", "torch_cuda": "collect_env_linux.txt:4",
				"os": "collect_env_linux.txt:7", "os_detail": "collect_env_linux.txt:7", "python": "collect_env_linux.txt:13",
				"cuda": "collect_env_linux.txt:16", "gpus": "collect_env_linux.txt:19", "driver": "collect_env_linux.txt:22",
				"cudnn": "collect_env_linux.txt:24", "nccl": "collect_env_linux.txt:67",
				"packages.nvidia-nccl-cu12": "collect_env_linux.txt:67", "packages.triton": "collect_env_linux.txt:71"},
		}},
		{"collect_env_windows.txt", want{
			// cuDNN: only the major version is in the DLL's name.
			env: Environment{Torch: "2.2.1+cu121", TorchCUDA: "12.1", Driver: "551.61", CUDNN: "8", Python: "3.11.8",
				OS: "windows", OSDetail: "Microsoft Windows 11 Pro", GPUs: []GPU{{Index: 0, Name: "NVIDIA GeForce RTX 4090"}}},
			pkgs:    map[string]string{"torch": "2.2.1+cu121", "mkl": "2023.1.0", "blas": "1.0", "numpy": "1.26.4"},
			npkgs:   6,
			sources: map[string]string{"gpus": "collect_env_windows.txt:18", "cudnn": "collect_env_windows.txt:20"},
		}},
		{"collect_env_macos.txt", want{
			env:   Environment{Torch: "2.3.1", Python: "3.12.4", OS: "darwin", OSDetail: "macOS 14.5 (arm64)"},
			pkgs:  map[string]string{"torch": "2.3.1", "numpy": "1.26.4"},
			npkgs: 2,
		}},
		{"nvidia_smi_470.txt", want{
			env: Environment{Driver: "470.256.02", DriverCUDA: "11.4",
				GPUs: gpus("Tesla V100-SXM2...", 16160*mib, 2, "00000000:00:1B.0", "00000000:00:1C.0")},
			npkgs:   0,
			sources: map[string]string{"driver": "nvidia_smi_470.txt:3", "driver_cuda": "nvidia_smi_470.txt:3", "gpus": "nvidia_smi_470.txt:9"},
		}},
		{"nvidia_smi_535.txt", want{
			env: Environment{Driver: "535.104.05", DriverCUDA: "12.2",
				GPUs: gpus("NVIDIA A100-SXM4-80GB", 81920*mib, 2, "00000000:07:00.0", "00000000:0F:00.0")},
			npkgs: 0,
		}},
		{"nvidia_smi_550.txt", want{
			env: Environment{Driver: "550.54.15", DriverCUDA: "12.4",
				GPUs: gpus("NVIDIA H100 80GB HBM3", 81559*mib, 4,
					"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0")},
			npkgs: 0,
		}},
		{"nvidia_smi_windows.txt", want{
			env: Environment{Driver: "551.61", DriverCUDA: "12.4",
				GPUs: gpus("NVIDIA GeForce RTX 4090", 24564*mib, 1, "00000000:01:00.0")},
			npkgs: 0,
		}},
		{"nvidia_smi_q.txt", want{
			env:   Environment{Driver: "545.23.08", DriverCUDA: "12.3"},
			npkgs: 0,
		}},
		{"nvidia_smi_query.csv", want{
			env: Environment{Driver: "535.129.03", GPUs: []GPU{
				{Index: 0, Name: "NVIDIA A100-SXM4-40GB", MemoryBytes: 40960 * mib, BusID: "00000000:07:00.0", Capability: "8.0"},
				{Index: 1, Name: "NVIDIA A100-SXM4-40GB", MemoryBytes: 40960 * mib, BusID: "00000000:0F:00.0", Capability: "8.0"},
				{Index: 2, Name: "NVIDIA A100-SXM4-40GB", MemoryBytes: 40960 * mib, BusID: "00000000:47:00.0", Capability: "8.0"},
			}},
			npkgs:   0,
			sources: map[string]string{"driver": "nvidia_smi_query.csv:2", "gpus": "nvidia_smi_query.csv:2"},
		}},
		{"nvidia_smi_query_nounits.csv", want{
			env: Environment{Driver: "550.90.07", GPUs: []GPU{
				{Index: 0, Name: "NVIDIA L4", MemoryBytes: 23034 * mib, BusID: "00000000:00:03.0", Capability: "8.9"},
				{Index: 1, Name: "NVIDIA L4", MemoryBytes: 23034 * mib, BusID: "00000000:00:04.0", Capability: "8.9"},
			}},
			npkgs: 0,
		}},
		{"nvidia_smi_L.txt", want{
			env: Environment{GPUs: []GPU{{Index: 0, Name: "NVIDIA H100 80GB HBM3"}, {Index: 1, Name: "NVIDIA H100 80GB HBM3"},
				{Index: 2, Name: "NVIDIA A100-SXM4-40GB"}}},
			npkgs: 0,
		}},
		{"nvcc.txt", want{
			env:     Environment{CUDA: "12.4.131"},
			npkgs:   0,
			sources: map[string]string{"cuda": "nvcc.txt:4"},
		}},
		{"pip_list.txt", want{
			// cuDNN and NCCL come from the nvidia-* wheels; torch has no
			// "+cu" label, so the CUDA it targets stays unknown.
			env: Environment{Torch: "2.2.1", CUDNN: "8.9.2", NCCL: "2.19.3"},
			pkgs: map[string]string{"jax": "0.4.25", "jaxlib": "0.4.25+cuda12.cudnn89", "jinja2": "3.1.3",
				"tensorflow": "2.15.0.post1", "triton": "2.2.0", "typing-extensions": "4.10.0", "nvidia-cuda-runtime-cu12": "12.1.105"},
			npkgs:   16,
			sources: map[string]string{"torch": "pip_list.txt:16", "cudnn": "pip_list.txt:12", "nccl": "pip_list.txt:13"},
		}},
		{"pip_freeze.txt", want{
			env: Environment{Torch: "2.3.0+cu121", TorchCUDA: "12.1", CUDNN: "9.1.0", NCCL: "2.20.5"},
			pkgs: map[string]string{"pyyaml": "6.0.1", "flash-attn": "2.5.6", "typing-extensions": "4.10.0",
				"torchvision": "0.18.0+cu121"},
			npkgs:   14, // "sentencepiece @ file://" and "-e git+" carry no version
			sources: map[string]string{"torch": "pip_freeze.txt:11", "torch_cuda": "pip_freeze.txt:11"},
		}},
		{"pip_freeze_local.txt", want{
			env:   Environment{},
			pkgs:  map[string]string{"numpy": "1.26.4", "transformers": "4.41.2"},
			npkgs: 2,
		}},
		{"conda_list.txt", want{
			// conda's "pytorch" is stored as "torch"; its build string names the CUDA it targets.
			env: Environment{Torch: "2.1.2", TorchCUDA: "12.1", Python: "3.10.13"},
			pkgs: map[string]string{"torch": "2.1.2", "pytorch-cuda": "12.1", "torchvision": "0.16.2", "transformers": "4.36.2",
				"-libgcc-mutex": "0.1", "python": "3.10.13"},
			npkgs:   16,
			sources: map[string]string{"torch": "conda_list.txt:14", "torch_cuda": "conda_list.txt:14", "python": "conda_list.txt:13"},
		}},
		{"train_ddp.log", want{
			// The NCCL line carries its build CUDA (+cuda12.4): not recorded.
			// Python and the OS are only hinted by paths and the kernel line.
			env: Environment{Torch: "2.3.1+cu121", TorchCUDA: "12.1", DriverCUDA: "12.4", Driver: "550.54.15",
				NCCL: "2.20.5", Python: "3.10", OS: "linux"},
			npkgs: 0,
			sources: map[string]string{"driver": "train_ddp.log:2", "os": "train_ddp.log:2", "torch": "train_ddp.log:8",
				"torch_cuda": "train_ddp.log:9", "driver_cuda": "train_ddp.log:15", "nccl": "train_ddp.log:16",
				"python": "train_ddp.log:35"},
		}},
		{"dmesg.txt", want{
			env:     Environment{Driver: "535.104.05", OS: "linux"},
			npkgs:   0,
			sources: map[string]string{"driver": "dmesg.txt:7", "os": "dmesg.txt:1"},
		}},
		{"proc_driver_nvidia_version.txt", want{
			env:   Environment{Driver: "535.161.08", OS: "linux"},
			npkgs: 0,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			check(t, parseFile(t, tt.file), tt.want)
		})
	}
}

// TestParseConcatenated reads several outputs pasted into one file, as a
// user might hand over with --env.
func TestParseConcatenated(t *testing.T) {
	var all bytes.Buffer
	for _, f := range []string{"nvidia_smi_550.txt", "nvcc.txt", "pip_freeze.txt", "nvidia_smi_L.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	e, err := Parse(&all, "env.txt")
	if err != nil {
		t.Fatal(err)
	}
	gs := gpus("NVIDIA H100 80GB HBM3", 81559*mib, 4, "00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0")
	check(t, e, want{
		env: Environment{Torch: "2.3.0+cu121", TorchCUDA: "12.1", CUDA: "12.4.131", DriverCUDA: "12.4",
			Driver: "550.54.15", CUDNN: "9.1.0", NCCL: "2.20.5", GPUs: gs},
		npkgs:   14,
		sources: map[string]string{"cuda": "env.txt:36", "gpus": "env.txt:9"},
	})
}

// TestDetectorLines checks the single log lines the detector recognises,
// each alone, and what they set.
func TestDetectorLines(t *testing.T) {
	tests := []struct {
		line string
		want Environment
	}{
		// PyTorch versions printed by scripts
		{"torch.__version__ = 2.1.0+cu121", Environment{Torch: "2.1.0+cu121", TorchCUDA: "12.1"}},
		{"torch.__version__: '2.0.1'", Environment{Torch: "2.0.1"}},
		{"torch version: 2.3.1", Environment{Torch: "2.3.1"}},
		{"PyTorch version: 2.3.1", Environment{Torch: "2.3.1"}},
		{"torch: 2.2.0", Environment{Torch: "2.2.0"}},
		{"[rank0]: torch: 2.2.0", Environment{Torch: "2.2.0"}},
		{"[default3]:torch 2.4.0+cu124", Environment{Torch: "2.4.0+cu124", TorchCUDA: "12.4"}},
		{"2024-05-01 10:00:00,123 INFO torch version: 2.5.0.dev20240901+cu118", Environment{Torch: "2.5.0.dev20240901+cu118", TorchCUDA: "11.8"}},
		{"INFO:__main__:Torch version is 1.13.1+cu117", Environment{Torch: "1.13.1+cu117", TorchCUDA: "11.7"}},
		{"- PyTorch version (GPU?): 2.1.0+cu121 (True)", Environment{Torch: "2.1.0+cu121", TorchCUDA: "12.1"}},
		{"torch.version.cuda = 11.8", Environment{TorchCUDA: "11.8"}},
		{"CUDA used to build PyTorch: 12.4", Environment{TorchCUDA: "12.4"}},
		// CUDA toolkit
		{"Cuda compilation tools, release 11.8, V11.8.89", Environment{CUDA: "11.8.89"}},
		{"CUDA runtime version: 12.1.105", Environment{CUDA: "12.1.105"}},
		{"UserWarning: The detected CUDA version (12.4) mismatches the version that was used to compile PyTorch (12.1). Please make sure to use the same CUDA versions.",
			Environment{CUDA: "12.4", TorchCUDA: "12.1"}},
		// driver and the CUDA it supports
		{"Driver Version: 535.104.05", Environment{Driver: "535.104.05"}},
		{"| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2 |", Environment{Driver: "535.104.05", DriverCUDA: "12.2"}},
		{"| NVIDIA-SMI 575.64.03              Driver Version: 575.64.03      CUDA Version: N/A      |", Environment{Driver: "575.64.03"}},
		{"Nvidia driver version: 550.54.15", Environment{Driver: "550.54.15"}},
		{"NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023", Environment{Driver: "535.104.05", OS: "linux"}},
		{"Mar 05 22:15:33 gpu-07 kernel: NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 22:15:33 UTC 2024",
			Environment{Driver: "550.54.15", OS: "linux"}},
		{"[    4.1] NVRM: loading NVIDIA UNIX aarch64 Kernel Module  550.90.07  Fri May 31 09:29:05 UTC 2024", Environment{Driver: "550.90.07", OS: "linux"}},
		{"RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA driver.",
			Environment{DriverCUDA: "11.4"}},
		{"The NVIDIA driver's CUDA version is 12.2 which is older than the ptxas CUDA version (12.4.131).", Environment{DriverCUDA: "12.2"}},
		{"node1:12345:12345 [0] NCCL INFO cudaDriverVersion 12020", Environment{DriverCUDA: "12.2"}},
		// NCCL
		{"node1:12345:12345 [0] NCCL INFO NCCL version 2.18.1+cuda12.1", Environment{NCCL: "2.18.1"}},
		{"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3",
			Environment{NCCL: "2.19.3"}},
		{"torch.cuda.nccl.version() = (2, 18, 1)", Environment{NCCL: "2.18.1"}},
		{"torch.cuda.nccl.version(): 2708", Environment{NCCL: "2.7.8"}},
		// cuDNN
		{"cuDNN version: 8.9.2", Environment{CUDNN: "8.9.2"}},
		{"cuDNN version: 8902", Environment{CUDNN: "8.9.2"}},
		{"cuDNN version: 90100", Environment{CUDNN: "9.1.0"}},
		{"cuDNN version: /usr/lib/x86_64-linux-gnu/libcudnn.so.8.6.0", Environment{CUDNN: "8.6.0", OS: "linux"}},
		{"torch.backends.cudnn.version() = 8700", Environment{CUDNN: "8.7.0"}},
		{"2024-01-01 10:00:00.123456: I external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:467] Loaded cuDNN version 8906", Environment{CUDNN: "8.9.6"}},
		{"E tensorflow/stream_executor/cuda/cuda_dnn.cc:361] Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0.  CuDNN library needs to have matching major version and equal or higher minor version.",
			Environment{CUDNN: "8.0.5"}},
		{"RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 9, 2) but found runtime version (8, 5, 0). PyTorch already comes bundled with cuDNN.",
			Environment{CUDNN: "8.5.0"}},
		{"RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7005", Environment{CUDNN: "7.0.5"}},
		// Python, OS, GPUs
		{"Python 3.11.9", Environment{Python: "3.11.9"}},
		{"Python version: 3.8 (64-bit runtime)", Environment{Python: "3.8"}},
		{`  File "C:\Users\dev\miniconda3\envs\sd\lib\site-packages\torch\cuda\__init__.py", line 289, in _lazy_init`, Environment{OS: "windows"}},
		{`  File "C:\Users\dev\AppData\Local\Programs\Python\Python310\lib\site-packages\torch\nn\modules\module.py", line 1518`, Environment{OS: "windows", Python: "3.10"}},
		{"OS: Microsoft Windows 10 Pro", Environment{OS: "windows", OSDetail: "Microsoft Windows 10 Pro"}},
		{"OS: macOS 13.6.1 (x86_64)", Environment{OS: "darwin", OSDetail: "macOS 13.6.1 (x86_64)"}},
		{"OS: Mac OSX 10.15.5 (x86_64)", Environment{OS: "darwin", OSDetail: "Mac OSX 10.15.5 (x86_64)"}},
		{"OS: Rocky Linux 9.3 (Blue Onyx) (x86_64)", Environment{OS: "linux", OSDetail: "Rocky Linux 9.3 (Blue Onyx) (x86_64)"}},
		{"GPU 3: NVIDIA L40S (UUID: GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d)", Environment{GPUs: []GPU{{Index: 3, Name: "NVIDIA L40S"}}}},
		{"GPU models and configuration: GPU 0: Tesla T4", Environment{GPUs: []GPU{{Index: 0, Name: "Tesla T4"}}}},
		{"2024-01-01 10:00:00.512: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1929] Created device /job:localhost/replica:0/task:0/device:GPU:0 with 78938 MB memory:  -> device: 0, name: NVIDIA A100-SXM4-80GB, pci bus id: 0000:07:00.0, compute capability: 8.0",
			Environment{GPUs: []GPU{{Index: 0, Name: "NVIDIA A100-SXM4-80GB", BusID: "0000:07:00.0", Capability: "8.0"}}}},
		{"NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
			Environment{GPUs: []GPU{{Index: 0, Name: "NVIDIA GeForce RTX 5090", Capability: "12.0"}}}},
		// packages
		{"torch==2.1.0", Environment{Torch: "2.1.0"}},
		{"[pip3] torch==2.2.2+cu118", Environment{Torch: "2.2.2+cu118", TorchCUDA: "11.8"}},
		{"[conda] pytorch                   2.0.1           py3.10_cuda11.8_cudnn8.7.0_0    pytorch", Environment{Torch: "2.0.1", TorchCUDA: "11.8"}},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			d := NewDetector()
			d.Line([]byte(tt.line), "x.log:1")
			got := d.Env()
			check(t, got, want{env: tt.want, npkgs: -1})
		})
	}
}

// TestPackagesFromLines: package versions stated in a log (transformers'
// env report, printed __version__) and the ends of multi-line blocks.
func TestPackagesFromLines(t *testing.T) {
	d := NewDetector()
	for _, l := range []string{
		"- Tensorflow version (GPU?): 2.13.0 (True)",
		"- Jax version: 0.4.13",
		"- JaxLib version: 0.4.13",
		"triton.__version__ = 2.1.0",
		"# packages in environment at /opt/conda:",
		"#",
		"# Name                    Version                   Build  Channel",
		"numpy                     1.26.3          py310h5f9d8c6_0",
		"",
		"step 100 loss 2.3451 0.5", // after the list: not a package
		"index, name, memory.total [MiB], pci.bus_id",
		"0, NVIDIA A10G, 23028 MiB, 00000000:00:1E.0",
		"epoch 1, loss 0.5, acc 0.9, lr 0.1", // not a row: four fields of the wrong types
		"1, NVIDIA A10G, 23028 MiB, 00000000:00:1F.0",
	} {
		d.Line([]byte(l), "l")
	}
	e := d.Env()
	wantPk := map[string]string{"tensorflow": "2.13.0", "jax": "0.4.13", "jaxlib": "0.4.13", "triton": "2.1.0", "numpy": "1.26.3"}
	if !reflect.DeepEqual(e.Packages, wantPk) {
		t.Errorf("packages = %v, want %v", e.Packages, wantPk)
	}
	wantGPUs := []GPU{{Index: 0, Name: "NVIDIA A10G", MemoryBytes: 23028 * mib, BusID: "00000000:00:1E.0"}}
	if !reflect.DeepEqual(e.GPUs, wantGPUs) {
		t.Errorf("GPUs = %+v (rows after the csv block ended must be ignored)", e.GPUs)
	}
	// The copy Env returns is the caller's own.
	e.Packages["numpy"] = "0"
	e.Sources["x"] = "y"
	if again := d.Env(); again.Packages["numpy"] != "1.26.3" || again.Sources["x"] != "" {
		t.Error("Env returned the detector's own maps")
	}
}

// TestNearMisses feeds lines that mention a version without saying it is
// installed; none may set a field.
func TestNearMisses(t *testing.T) {
	lines := []string{
		"ERROR: flash-attn 2.5.6 requires torch>=2.0, which is not installed.",
		"xformers 0.0.23 requires torch==2.1.1, but you have torch 2.1.2 which is incompatible.",
		"Requirement already satisfied: torch==2.1.0 in /opt/conda/lib/python3.10/site-packages (2.1.0)",
		"Minimum PyTorch version: 2.0.0",
		"Required torch version: 2.1.0",
		"torch version: 2.4.0 or newer is required for FSDP2",
		"WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for: PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.2.0+cu121)",
		"We recommend torch: 2.3.0 for this release",
		"pip install torch==2.1.0 --index-url https://download.pytorch.org/whl/cu121",
		"ValueError: expected torch.__version__ >= 2.0 but got an older build",
		"mytorch version: 9.9.9",
		"epoch 2 loss 0.1234 acc 0.9876",
		"NVRM: API mismatch: the client has the version 535.104.05, but",
		"NVRM: this kernel module has the version 535.86.10.  Please",
		"nvidia-uvm: Loaded the UVM driver, major device number 510.",
		"OSError: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory",
		"Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot open shared object file",
		"CUDA driver version is insufficient for CUDA runtime version",
		"GPU 0: 95% utilization, 71C",
		"NCCL version >= 2.18 is required",
		"| Processes:                                                                  |",
		"|    0   N/A  N/A     20417      C   python                          15817MiB |",
		"CUDA Version: 12.1",
	}
	for _, l := range lines {
		d := NewDetector()
		d.Line([]byte(l), "x.log:1")
		e := d.Env()
		e.OS, e.Python = "", "" // path hints in these lines are fine
		delete(e.Sources, "os")
		delete(e.Sources, "python")
		if !e.IsZero() {
			t.Errorf("%q set %+v", l, e)
		}
	}
}

// TestFirstWins: a log is one run, so a later value does not replace the
// first one, and requirement talk in between changes nothing.
func TestFirstWins(t *testing.T) {
	d := NewDetector()
	for i, l := range []string{
		"torch version: 2.1.0+cu121",
		"requires torch>=2.3",
		"torch version: 2.3.0+cu124",
		"NCCL INFO NCCL version 2.18.1+cuda12.1",
		"NCCL INFO NCCL version 2.21.5+cuda12.4",
	} {
		d.Line([]byte(l), fmt.Sprintf("a.log:%d", i+1))
	}
	e := d.Env()
	if e.Torch != "2.1.0+cu121" || e.TorchCUDA != "12.1" || e.NCCL != "2.18.1" {
		t.Errorf("got torch %q torch_cuda %q nccl %q", e.Torch, e.TorchCUDA, e.NCCL)
	}
	if e.Sources["torch"] != "a.log:1" || e.Sources["nccl"] != "a.log:4" {
		t.Errorf("sources %v", e.Sources)
	}
	// An explicit statement beats the package list, wherever it comes.
	d = NewDetector()
	d.Line([]byte("torch==2.0.0"), "b:1")
	d.Line([]byte("PyTorch version: 2.0.1+cu118"), "b:2")
	if e := d.Env(); e.Torch != "2.0.1+cu118" || e.Packages["torch"] != "2.0.0" || e.Sources["torch"] != "b:2" {
		t.Errorf("torch %q packages %v sources %v", e.Torch, e.Packages, e.Sources)
	}
	// A hint (a path) gives way to a statement that comes later.
	d = NewDetector()
	d.Line([]byte(`  File "/usr/lib/python3.10/site-packages/x.py", line 1`), "c:1")
	d.Line([]byte("Python version: 3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0] (64-bit runtime)"), "c:2")
	if e := d.Env(); e.Python != "3.10.12" || e.Sources["python"] != "c:2" {
		t.Errorf("python %q from %q", e.Python, e.Sources["python"])
	}
}

func TestMerge(t *testing.T) {
	e := Environment{
		Torch:    "2.1.0",
		GPUs:     []GPU{{Index: 0, Name: "A"}},
		Packages: map[string]string{"numpy": "1.0"},
		Sources:  map[string]string{"torch": "log:1", "gpus": "log:2", "packages.numpy": "log:3"},
	}
	o := Environment{
		Torch:    "2.3.0",
		CUDA:     "12.4.131",
		OS:       "linux",
		GPUs:     []GPU{{Index: 0, Name: "B"}, {Index: 1, Name: "B"}},
		Packages: map[string]string{"numpy": "2.0", "jax": "0.4.30"},
		Sources: map[string]string{"torch": "env:1", "cuda": "env:2", "gpus": "env:3", "packages.numpy": "env:4",
			"packages.jax": "env:5", "extra": "env:6"},
	}
	e.Merge(o)
	if e.Torch != "2.1.0" || e.CUDA != "12.4.131" || e.OS != "linux" {
		t.Errorf("scalars: %+v", e)
	}
	if len(e.GPUs) != 1 || e.GPUs[0].Name != "A" {
		t.Errorf("GPUs = %+v, want e's own", e.GPUs)
	}
	wantPk := map[string]string{"numpy": "1.0", "jax": "0.4.30"}
	if !reflect.DeepEqual(e.Packages, wantPk) {
		t.Errorf("packages = %v", e.Packages)
	}
	wantSrc := map[string]string{"torch": "log:1", "gpus": "log:2", "packages.numpy": "log:3",
		"cuda": "env:2", "packages.jax": "env:5", "extra": "env:6"} // o had no source for os: none is invented
	if !reflect.DeepEqual(e.Sources, wantSrc) {
		t.Errorf("sources = %v\nwant %v", e.Sources, wantSrc)
	}

	// GPUs come from o when e has none, as a copy.
	var z Environment
	z.Merge(o)
	if len(z.GPUs) != 2 || z.Sources["gpus"] != "env:3" || z.Torch != "2.3.0" || z.Sources["torch"] != "env:1" {
		t.Errorf("into zero: %+v", z)
	}
	z.GPUs[0].Name = "changed"
	z.Packages["jax"] = "changed"
	if o.GPUs[0].Name != "B" || o.Packages["jax"] != "0.4.30" {
		t.Error("Merge aliased o's slice or map")
	}
}

func TestIsZero(t *testing.T) {
	if !(Environment{}).IsZero() {
		t.Error("empty not zero")
	}
	if !(Environment{Sources: map[string]string{"x": "y"}}).IsZero() {
		t.Error("sources alone should not count")
	}
	for _, e := range []Environment{{NCCL: "2.18.1"}, {OSDetail: "x"}, {GPUs: []GPU{{}}}, {Packages: map[string]string{"a": "1"}}} {
		if e.IsZero() {
			t.Errorf("%+v reported zero", e)
		}
	}
}

func mustV(t *testing.T, s string) facts.V {
	t.Helper()
	v, err := facts.ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestValues(t *testing.T) {
	e := parseFile(t, "collect_env_linux.txt")
	e.Merge(parseFile(t, "nvidia_smi_535.txt"))
	e.Packages["jax"] = "0.4.30"
	e.Packages["tensorflow-gpu"] = "2.10.1"
	got := e.Values()
	want := map[string]any{
		"torch":       mustV(t, "2.1.0+cu121"),
		"torch_cuda":  mustV(t, "12.1"),
		"cuda":        mustV(t, "12.2.140"),
		"driver_cuda": mustV(t, "12.2"),
		"driver":      mustV(t, "535.104.05"),
		"cudnn":       mustV(t, "8.9.2"),
		"nccl":        mustV(t, "2.18.1"),
		"python":      mustV(t, "3.10.12"),
		"triton":      mustV(t, "2.1.0"),
		"jax":         mustV(t, "0.4.30"),
		"tensorflow":  mustV(t, "2.10.1"),
		"os":          "linux",
		"gpu":         "NVIDIA A100-SXM4-80GB",
		"gpus":        2,
	}
	// collect_env's GPU list (kept: it came first) has no memory, so
	// gpu_memory is absent; jaxlib is not installed.
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Values() =\n%v\nwant\n%v", got, want)
	}
	if _, ok := got["gpu_memory"]; ok {
		t.Error("gpu_memory present without a memory figure")
	}

	smi := parseFile(t, "nvidia_smi_550.txt").Values()
	if smi["gpu_memory"] != int64(81559)*mib || smi["gpus"] != 4 || smi["gpu"] != "NVIDIA H100 80GB HBM3" {
		t.Errorf("gpu values: %v", smi)
	}
	for _, k := range []string{"torch", "cuda", "os", "python", "jax"} {
		if _, ok := smi[k]; ok {
			t.Errorf("%s present though unknown", k)
		}
	}
	if n := len((Environment{}).Values()); n != 0 {
		t.Errorf("empty environment has %d values", n)
	}
	// An unparsable version is absent, never a zero value.
	if _, ok := (Environment{Torch: "unknown"}).Values()["torch"]; ok {
		t.Error("unparsable torch present")
	}
	// gpu is GPU 0 even when another is listed first.
	v := (Environment{GPUs: []GPU{{Index: 1, Name: "B", MemoryBytes: 2}, {Index: 0, Name: "A", MemoryBytes: 1}}}).Values()
	if v["gpu"] != "A" || v["gpu_memory"] != int64(1) {
		t.Errorf("gpu 0: %v", v)
	}
	// gpu_capability where the log printed one (here TensorFlow's device
	// line), a version: 10.0 is newer than 8.9.
	tf, err := Parse(strings.NewReader("2023-07-01 10:00:00.000000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1639] Created device /job:localhost/replica:0/task:0/device:GPU:0 with 14621 MB memory:  -> device: 0, name: Tesla T4, pci bus id: 0000:00:04.0, compute capability: 7.5\n"), "tf.log")
	if err != nil {
		t.Fatal(err)
	}
	if tf := tf.Values(); !reflect.DeepEqual(tf["gpu_capability"], mustV(t, "7.5")) || tf["gpu"] != "Tesla T4" {
		t.Errorf("tensorflow device line: %v", tf)
	}

	if c := (Environment{GPUs: []GPU{{Name: "B200", Capability: "10.0"}}}).Values()["gpu_capability"]; !reflect.DeepEqual(c, mustV(t, "10.0")) {
		t.Errorf("capability 10.0: %v", c)
	}
}

func TestVersion(t *testing.T) {
	e := Environment{Torch: "2.1.0+cu121", TorchCUDA: "12.1", DriverCUDA: "12.2", Driver: "535.104.05",
		CUDNN: "8.9.2", NCCL: "2.18.1", Python: "3.10.12",
		Packages: map[string]string{"tensorflow": "2.15.0", "jax": "0.4.25", "jaxlib": "0.4.25+cuda12.cudnn89",
			"pytorch-triton": "3.0.0+45fff310c8", "typing-extensions": "4.10.0"}}
	tests := []struct {
		component, want string
	}{
		{"PyTorch", "2.1.0+cu121"}, {"torch", "2.1.0+cu121"},
		{"CUDA", "12.1"}, // no toolkit known: the CUDA the torch build bundles
		{"cuDNN", "8.9.2"}, {"NCCL", "2.18.1"},
		{"driver", "535.104.05"}, {"NVIDIA driver", "535.104.05"},
		{"TensorFlow", "2.15.0"}, {"JAX", "0.4.25"}, {"jaxlib", "0.4.25+cuda12.cudnn89"},
		{"Triton", "3.0.0+45fff310c8"}, {"Python", "3.10.12"},
		{"typing_extensions", "4.10.0"}, {"Typing-Extensions", "4.10.0"},
	}
	for _, tt := range tests {
		v, ok := e.Version(tt.component)
		if !ok || v.Raw != tt.want {
			t.Errorf("Version(%q) = %q, %v; want %q", tt.component, v.Raw, ok, tt.want)
		}
	}
	e.CUDA = "12.4.131"
	if v, _ := e.Version("CUDA"); v.Raw != "12.4.131" {
		t.Errorf("CUDA with a toolkit = %q", v.Raw)
	}
	for _, c := range []string{"numpy", "Horovod", ""} {
		if _, ok := e.Version(c); ok {
			t.Errorf("Version(%q) known", c)
		}
	}
	if _, ok := (Environment{Torch: "garbage"}).Version("PyTorch"); ok {
		t.Error("unparsable version reported ok")
	}
}

// TestBounded: irrelevant lines change nothing, and the GPU and package
// lists stop growing at their caps.
func TestBounded(t *testing.T) {
	d := NewDetector()
	d.Line([]byte("torch version: 2.1.0"), "a:1")
	before := d.Env()
	rng := rand.New(rand.NewSource(1))
	words := []string{"step", "loss", "lr", "tokens/s", "grad_norm", "|", "epoch", "0.123", "rank", "[rank3]:", "INFO", "=", "GPU"}
	for i := range 100_000 {
		var b strings.Builder
		for range 3 + rng.Intn(12) {
			b.WriteString(words[rng.Intn(len(words))])
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d", i)
		d.Line([]byte(b.String()), "a:x")
	}
	if after := d.Env(); !reflect.DeepEqual(before, after) {
		t.Errorf("irrelevant lines changed the environment:\n%+v\n%+v", before, after)
	}

	d = NewDetector()
	for i := range 200 {
		d.Line(fmt.Appendf(nil, "GPU %d: NVIDIA H100 80GB HBM3 (UUID: GPU-%08d)", i, i), "smi")
	}
	if n := len(d.Env().GPUs); n != MaxGPUs {
		t.Errorf("%d GPUs kept, want %d", n, MaxGPUs)
	}

	d = NewDetector()
	d.Line([]byte("Package    Version"), "pip:1")
	d.Line([]byte("---------- -------"), "pip:2")
	for i := range 5000 {
		d.Line(fmt.Appendf(nil, "pkg%05d   1.%d.0", i, i), "pip")
	}
	for i := range 5000 {
		d.Line(fmt.Appendf(nil, "other%05d==1.0", i), "freeze")
	}
	e := d.Env()
	if len(e.Packages) != MaxPackages {
		t.Errorf("%d packages kept, want %d", len(e.Packages), MaxPackages)
	}
	if len(e.Sources) > MaxPackages+len(stringFields)+1 {
		t.Errorf("%d sources kept", len(e.Sources))
	}
}

// TestRobust: binary garbage, a 1 MB line and absurd values must neither
// panic nor produce invalid text.
func TestRobust(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	d := NewDetector()
	for range 2000 {
		b := make([]byte, rng.Intn(300))
		rng.Read(b)
		d.Line(b, "bin")
	}
	// Garbage around real tokens.
	for _, s := range []string{"GPU 0: \xff\xfe\x00NVIDIA\x01", "| 0 \xff On | 00000000:07:00.0 Off |", "torch version: \xff",
		"cuDNN version: 0", "torch.cuda.nccl.version() = 0", "NCCL INFO cudaDriverVersion 0", "GPU models and configuration:",
		"index, name", "Package Version", "# packages in environment at /x:", strings.Repeat("[", 5000), strings.Repeat("1, ", 5000)} {
		d.Line([]byte(s), "g")
		d.Line(nil, "g")
	}
	big := bytes.Repeat([]byte("a torch.__version__ NCCL version | GPU 0: "), 1<<20/40)
	d.Line(big, "big")
	e := d.Env()
	for _, k := range stringFields {
		if v := *e.field(k); !isClean(v) {
			t.Errorf("%s = %q", k, v)
		}
	}
	for _, g := range e.GPUs {
		if !isClean(g.Name) {
			t.Errorf("GPU name %q", g.Name)
		}
	}

	// Parse of a 1 MB line followed by a real one: the real one is read.
	in := string(big) + "\nNVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
	pe, err := Parse(strings.NewReader(in), "big.log")
	if err != nil {
		t.Fatal(err)
	}
	if pe.Driver != "535.104.05" || pe.Sources["driver"] != "big.log:2" {
		t.Errorf("after a long line: driver %q from %q", pe.Driver, pe.Sources["driver"])
	}
}

func isClean(s string) bool {
	if len(s) > maxTextLen {
		return false
	}
	for _, r := range s {
		if r < ' ' || r == 0xfffd {
			return false
		}
	}
	return true
}

type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n > 0 {
		r.n--
		return copy(p, "Driver Version: 550.54.15\n"), nil
	}
	return 0, errors.New("disk on fire")
}

// TestParseReadError: a read error is returned along with what was read.
func TestParseReadError(t *testing.T) {
	e, err := Parse(&failingReader{n: 1}, "x")
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("err = %v", err)
	}
	if e.Driver != "550.54.15" {
		t.Errorf("driver %q", e.Driver)
	}
	e, err = Parse(strings.NewReader(""), "empty")
	if err != nil || !e.IsZero() {
		t.Errorf("empty input: %+v, %v", e, err)
	}
	// No final newline, CRLF line ends.
	e, _ = Parse(strings.NewReader("nvcc: NVIDIA (R) Cuda compiler driver\r\nCuda compilation tools, release 12.1, V12.1.105"), "n")
	if e.CUDA != "12.1.105" || e.Sources["cuda"] != "n:2" {
		t.Errorf("cuda %q from %q", e.CUDA, e.Sources["cuda"])
	}
}

// TestCollect only checks that Collect returns promptly and sanely: this
// machine may have no GPU and no Python.
func TestCollect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	e := Collect(ctx)
	if e.OS == "" {
		t.Error("OS unknown; runtime.GOOS is always there")
	}
	t.Logf("collected: %+v", e.Values())

	// An already cancelled context runs nothing and still answers.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if e := Collect(ctx); e.OS == "" {
		t.Error("cancelled: OS unknown")
	}
}

func TestDecoders(t *testing.T) {
	eq := func(name, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	eq("cudnn 8902", versionFromCode("8902"), "8.9.2")
	eq("cudnn 7605", versionFromCode("7605"), "7.6.5")
	eq("cudnn 90100", versionFromCode("90100"), "9.1.0")
	eq("cudnn 91002", versionFromCode("91002"), "9.10.2")
	eq("cudnn tuple", versionFromCode("(8, 5, 0)"), "8.5.0")
	eq("nccl 21801", versionFromCode("21801"), "2.18.1")
	eq("nccl 2708", versionFromCode("2708"), "2.7.8")
	eq("nccl tuple", versionFromCode("(2, 21, 5)"), "2.21.5")
	eq("nccl junk", versionFromCode("None"), "")
	eq("cuda 11040", cudaFromInt("11040"), "11.4")
	eq("cuda 12080", cudaFromInt("12080"), "12.8")
	eq("cu121", cudaFromLocal("2.1.0+cu121"), "12.1")
	eq("cu92", cudaFromLocal("1.6.0+cu92"), "9.2")
	eq("cu130", cudaFromLocal("2.9.0+cu130"), "13.0")
	eq("cpu", cudaFromLocal("2.1.0+cpu"), "")
	eq("rocm", cudaFromLocal("2.1.0+rocm5.6"), "")
	eq("conda build", cudaFromBuild("py3.10_cuda12.1_cudnn8.9.2_0"), "12.1")
	eq("conda-forge build", cudaFromBuild("cuda120_py310h2c91c31_301"), "12.0")
	eq("cpu build", cudaFromBuild("py3.10_cpu_0"), "")
	eq("sm_90", smCapability("90"), "9.0")
	eq("firstParts", firstParts("8.9.2.26", 3), "8.9.2")
	eq("stripPrefix", string(stripPrefix([]byte("[1,0]<stdout>:torch: 2.1.0"))), "torch: 2.1.0")
	eq("stripPrefix rank", string(stripPrefix([]byte("  0: [rank0]: 2024-01-01T10:00:00Z INFO: torch: 2"))), "torch: 2")
}

// BenchmarkLineIrrelevant measures the cost of a line that says nothing
// about the environment, the common case in a multi-GB log.
func BenchmarkLineIrrelevant(b *testing.B) {
	d := NewDetector()
	line := []byte("[rank3]: step 1200/50000 | loss 2.3451 | lr 2.9e-04 | grad_norm 0.812 | tokens/s 182733 | mem 61.2GiB")
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		d.Line(line, "train.log:1")
	}
}

// BenchmarkLineTraceback measures a typical PyTorch traceback line, which
// contains "torch" and so reaches a regular expression guard.
func BenchmarkLineTraceback(b *testing.B) {
	d := NewDetector()
	line := []byte(`[rank1]:   File "/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", line 1532, in _wrapped_call_impl`)
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		d.Line(line, "train.log:1")
	}
}

// FuzzLine: no input line may panic the detector or leave invalid text in
// what it reports. `go test` runs the seeds; `go test -fuzz FuzzLine` explores.
func FuzzLine(f *testing.F) {
	for _, s := range []string{
		"| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2 |",
		"|   0  NVIDIA A100-SXM4-80GB  On  | 00000000:07:00.0 Off |  0 |",
		"GPU models and configuration:", "cuDNN version: Probably one of the following:",
		"index, name, memory.total [MiB]", "0, X, 1, 0000:00:00.0, 1.1, 1.1", "torch.cuda.nccl.version() = (2, 18, 1)",
		"NVIDIA RTX with CUDA capability sm_1 is not compatible", "cuDNN version: 0", "[conda] pytorch 1.0 cuda1_ x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := NewDetector()
		d.Line([]byte(s), "f")
		d.Line([]byte(s), "f")
		e := d.Env()
		for _, k := range stringFields {
			if v := *e.field(k); !utf8.ValidString(v) || len(v) > maxTextLen {
				t.Errorf("%s = %q", k, v)
			}
		}
		_ = e.Values()
	})
}

// LineAt records the file and line a value came from, or the line alone
// for unnamed input.
func TestLineAtSources(t *testing.T) {
	d := NewDetector()
	d.LineAt([]byte("epoch 1"), "rank0.log", 1)
	d.LineAt([]byte("node1:12:12 [0] NCCL INFO NCCL version 2.18.1+cuda12.1"), "rank0.log", 2)
	d.LineAt([]byte("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023"), "", 7)
	e := d.Env()
	if e.NCCL != "2.18.1" || e.Sources["nccl"] != "rank0.log:2" || e.Driver != "535.104.05" || e.Sources["driver"] != "line 7" {
		t.Errorf("env %+v", e)
	}
}
