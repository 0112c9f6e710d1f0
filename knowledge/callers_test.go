package knowledge_test

import (
	"strings"
	"testing"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/scan"
)

// TestCallerForms: the same error reaches users through many callers
// (PyTorch, TensorFlow, XLA, Caffe, Horovod, nccl-tests, ONNX Runtime,
// TensorRT, llama.cpp, CUDA samples' checkCudaErrors), each wrapping the
// library's own token (status name, code, fixed text) in its own way. Each
// line below is written from the format string of the caller named, and
// its entry must be the first diagnosis of that line alone.
func TestCallerForms(t *testing.T) {
	s, err := scan.New(load(t))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ caller, line, want string }{
		// cudaErrorDevicesUnavailable: the runtime's current wording and the old one.
		{"PyTorch, current runtime", "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable", "cuda/devices-busy-or-unavailable"},
		{"PyTorch, old runtime", "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable", "cuda/devices-busy-or-unavailable"},
		{"llama.cpp ggml_cuda_init", "ggml_cuda_init: failed to initialize CUDA: CUDA-capable device(s) is/are busy or unavailable", "cuda/devices-busy-or-unavailable"},
		{"checkCudaErrors (enum name)", `CUDA error at main.cu:40 code=46(cudaErrorDevicesUnavailable) "cudaSetDevice(0)"`, "cuda/devices-busy-or-unavailable"},

		// cudaErrorMemoryAllocation through non-PyTorch callers.
		{"ONNX Runtime CUDA_CALL", "CUDA failure 2: out of memory ; GPU=0 ; hostname=n1 ; file=cuda_allocator.cc ; line=47 ; expr=cudaMalloc((void**)&p, size);", "cuda/out-of-memory"},
		{"TensorRT", "[TRT] [E] [defaultAllocator.cpp::allocate::31] Error Code 1: Cuda Runtime (out of memory)", "cuda/out-of-memory"},
		{"nccl-tests CUDACHECK", "n1: Test CUDA failure common.cu:892 'out of memory'", "cuda/out-of-memory"},
		{"checkCudaErrors (error string)", `CUDA error at main.cu:58 code=2(out of memory) "cudaMalloc(&d_A, size)"`, "cuda/out-of-memory"},
		{"Caffe CUDA_CHECK", "Check failed: error == cudaSuccess (2 vs. 0)  out of memory", "cuda/out-of-memory"},
		{"llama.cpp CUDA_CHECK", "CUDA error: out of memory", "cuda/out-of-memory"},

		// Other CUDA runtime errors keep their own token whatever the caller.
		{"ONNX Runtime, illegal address", "CUDA failure 700: an illegal memory access was encountered ; GPU=0 ; hostname=n1 ; file=cuda_execution_provider.cc ; line=219 ; expr=cudaStreamSynchronize(stream);", "cuda/illegal-memory-access"},
		{"TensorRT, illegal address", "[TRT] [E] 1: [reformat.cpp::executeCutensor::332] Error Code 1: CuTensor (Internal cuTensor permutate execute failed)\n[TRT] [E] 1: [checkMacros.cpp::catchCudaError::203] Error Code 1: Cuda Runtime (an illegal memory access was encountered)", "cuda/illegal-memory-access"},
		{"llama.cpp, illegal address", "CUDA error: an illegal memory access was encountered", "cuda/illegal-memory-access"},
		{"checkCudaErrors, launch failure", `CUDA error at kernel.cu:88 code=719(cudaErrorLaunchFailure) "cudaDeviceSynchronize()"`, "cuda/unspecified-launch-failure"},
		{"ONNX Runtime, no kernel image", "CUDA failure 209: no kernel image is available for execution on the device ; GPU=0 ; hostname=n1 ; file=cuda_call.cc ; line=129 ; expr=cudaGetLastError();", "cuda/no-kernel-image"},
		{"Caffe, device assert", "Check failed: error == cudaSuccess (710 vs. 0)  device-side assert triggered", "cuda/device-side-assert"},

		// CUDA runtime errors whose text alone is too common to match bare:
		// matched only with a caller's CUDA prefix.
		{"ONNX Runtime, initialization error", "CUDA failure 3: initialization error ; GPU=0 ; hostname=n1 ; file=cuda_execution_provider.cc ; line=245 ; expr=cudaSetDevice(info_.device_id);", "cuda/initialization-error"},
		{"nccl-tests, unknown error", "n1: Test CUDA failure common.cu:1012 'unknown error'", "cuda/unknown-error"},
		{"TensorRT, unknown error", "[TRT] [E] 1: [checkMacros.cpp::catchCudaError::203] Error Code 1: Cuda Runtime (unknown error)", "cuda/unknown-error"},
		{"checkCudaErrors (error string), invalid argument", `CUDA error at main.cu:40 code=1(invalid argument) "cudaMemcpy(d, h, n, cudaMemcpyHostToDevice)"`, "cuda/invalid-argument"},

		// cuBLAS execution failure without PyTorch's 'when calling'.
		{"TensorFlow cuda_blas.cc, no routine name", "E tensorflow/stream_executor/cuda/cuda_blas.cc:1839] failed to run cuBLAS routine: CUBLAS_STATUS_EXECUTION_FAILED", "cuda/cublas-execution-failed"},
		{"TensorFlow, older, routine name", "E tensorflow/stream_executor/cuda/cuda_blas.cc:654] failed to run cuBLAS routine cublasSgemm_v2: CUBLAS_STATUS_EXECUTION_FAILED", "cuda/cublas-execution-failed"},
		{"Caffe CUBLAS_CHECK", "F0305 11:20:33.412345  2817 math_functions.cu:26] Check failed: status == CUBLAS_STATUS_SUCCESS (13 vs. 0)  CUBLAS_STATUS_EXECUTION_FAILED", "cuda/cublas-execution-failed"},
		{"ONNX Runtime CUBLAS_CALL", "CUBLAS failure 13: CUBLAS_STATUS_EXECUTION_FAILED ; GPU=0 ; hostname=n1 ; file=matmul.cc ; line=310 ; expr=cublasGemmHelper(", "cuda/cublas-execution-failed"},

		// ncclInvalidUsage through every wrapper.
		{"PyTorch", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.cpp:75, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5", "nccl/invalid-usage"},
		{"PyTorch, cut after the token", "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.cpp:75, invalid usage", "nccl/invalid-usage"},
		{"XLA", "INTERNAL: external/xla/xla/service/gpu/nccl_utils.cc:297: NCCL operation ncclCommInitRank(&comm, nranks, id, rank) failed: invalid usage", "nccl/invalid-usage"},
		{"Horovod", "horovod.common.exceptions.HorovodInternalError: ncclCommInitRank failed: invalid usage", "nccl/invalid-usage"},
		{"nccl-tests, NCCL < 2.13", "n1: Test NCCL failure common.cu:958 'invalid usage (run with NCCL_DEBUG=WARN for details)'", "nccl/invalid-usage"},
		{"nccl-tests, NCCL >= 2.13", "n1: Test NCCL failure common.cu:1005 'invalid usage (run with NCCL_DEBUG=WARN for details) / Failed to initialize any NET plugin'", "nccl/invalid-usage"},
		{"XLA, invalid argument", "INTERNAL: external/xla/xla/service/gpu/nccl_utils.cc:297: NCCL operation ncclGroupEnd() failed: invalid argument", "nccl/invalid-argument"},
		{"Horovod, invalid argument", "horovod.common.exceptions.HorovodInternalError: ncclAllReduce failed: invalid argument", "nccl/invalid-argument"},
		{"nccl-tests, unhandled cuda error", "n1: Test NCCL failure common.cu:958 'unhandled cuda error (run with NCCL_DEBUG=INFO for details)'", "nccl/unhandled-cuda-error"},
		{"Horovod, system error", "horovod.common.exceptions.HorovodInternalError: ncclCommInitRank failed: unhandled system error", "nccl/unhandled-system-error"},
		{"XLA, remote error", "NCCL operation ncclGroupEnd() failed: remote process exited or there was a network error", "nccl/remote-error"},

		// torchrun's elastic agent, for a script and for a function.
		{"torchrun, binary", "[ERROR] failed (exitcode: 1) local_rank: 0 (pid: 12345) of binary: /usr/bin/python3", "nccl/elastic-child-failed"},
		{"elastic_launch, fn", "E1121 10:21:09.118000 139 torch/distributed/elastic/multiprocessing/api.py:732] failed (exitcode: -6) local_rank: 0 (pid: 4321) of fn: main (start_method: spawn)", "nccl/elastic-child-failed"},
	}
	for _, c := range cases {
		r, err := diagnose.Read(s, strings.NewReader(c.line))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Diagnoses) == 0 {
			t.Errorf("%s: not diagnosed: %q", c.caller, c.line)
			continue
		}
		if got := r.Diagnoses[0].ID; got != c.want {
			t.Errorf("%s: diagnosed as %s, want %s: %q", c.caller, got, c.want, c.line)
		}
	}
}

// TestHarmlessLines: lines that healthy or CPU-only runs print, which name
// an error's words without being that error.
func TestHarmlessLines(t *testing.T) {
	s, err := scan.New(load(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		// PyTorch's device_count() catches the driver error and warns; on a
		// CPU-only machine is_available() is simply False.
		"/usr/lib/python3/dist-packages/torch/cuda/__init__.py:52: UserWarning: CUDA initialization: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx (Triggered internally at  /pytorch/c10/cuda/CUDAFunctions.cpp:100.)",
		"  return torch._C._cuda_getDeviceCount() > 0",
	} {
		r, err := diagnose.Read(s, strings.NewReader(line))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range r.Diagnoses {
			t.Errorf("harmless line diagnosed as %s: %q", d.ID, line)
		}
	}
}
