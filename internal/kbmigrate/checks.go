package kbmigrate

// DiagnosticSteps are the workarounds of the built-in entries that find out
// what is wrong rather than fix it (compare versions, read a log, run
// Compute Sanitizer or synchronous launches, test the fabric): they become
// checks. Each was decided by reading the item; an item that points at
// where the real error is, or that only confirms a cause, is a check, and
// one that also changes something that fixes the error stays a fix. Keyed
// by the action as the entry writes it, so an item reworded since is
// reported by the migration rather than marked by position.
var DiagnosticSteps = Checks{
	"build/cudnn-undefined-symbol": {
		"See which libcudnn files are loaded and from where",
	},
	"build/extension-abi-undefined-symbol": {
		"Compare the installed torch with the torch the extension was built for (wheel name, version pins, C++11 ABI)",
	},
	"build/extension-cuda-version-mismatch": {
		"See which toolkit was picked up and which CUDA torch was built with",
	},
	"build/glibcxx-not-found": {
		"Find which libstdc++.so.6 was loaded and which versions each copy on the machine exports",
	},
	"build/libcublas-missing": {
		"Find which module needs it and whether any copy is installed",
	},
	"build/libcublaslt-version-mismatch": {
		"Find every libcublasLt copy and see which one the process actually loads",
	},
	"build/libcudart-missing": {
		"Find which module asks for the library and whether any copy exists on the system",
	},
	"build/libcudnn-missing": {
		"Read the file named after 'Error:' (the one really missing) and check where, if anywhere, it exists",
	},
	"build/libnvjitlink-undefined-symbol": {
		"See which libnvJitLink is loaded and what LD_LIBRARY_PATH contains",
	},
	"build/libnvrtc-missing": {
		"See which name is requested and which NVRTC files exist",
	},
	"build/ninja-required": {
		"Check the exact test PyTorch runs before restarting the job",
	},
	"build/no-cuda-runtime-found": {
		"Check whether torch can use CUDA and why not",
	},
	"build/nvcc-not-found": {
		"Look at the path being called: check CUDA_HOME and whether bin/nvcc exists there (a leading ':' means CUDA_HOME was assembled like PATH)",
	},
	"build/nvcc-unsupported-gpu-arch": {
		"Compare what nvcc supports with what the build asks for",
	},
	"build/nvrtc-invalid-arch": {
		"Confirm the mismatch: compare the CUDA version of the build with the GPU's compute capability",
	},
	"build/ptxas-sm-not-defined": {
		"Find which ptxas runs and which architectures it knows",
	},
	"build/torch-cuda-arch-list-unknown-arch": {
		"See what is in the variable and what your GPU and torch build support",
	},
	"container/could-not-select-device-driver": {
		"Check that the docker command talks to the daemon you configured (Docker Desktop, remote contexts and a second snap-installed Docker each have their own daemon)",
	},
	"container/cuda-visible-devices-mistake": {
		"Check which physical GPUs the ranks really use before a long run",
	},
	"container/k8s-device-plugin-no-nvml": {
		"Check the node itself: driver loaded and the toolkit able to see the GPUs; on a node without NVIDIA GPUs keep the plugin off with a nodeSelector or affinity",
	},
	"container/k8s-insufficient-nvidia-gpu": {
		"Check whether the nodes advertise nvidia.com/gpu at all and how many are already allocated",
	},
	"cuda/context-is-destroyed": {
		"Find the call: run under compute-sanitizer, which reports the API call that hit 709 with its host backtrace (destructor, exit handler, thread)",
	},
	"cuda/cublas-alloc-failed": {
		"Find the real failing kernel: rerun synchronously or on CPU",
	},
	"cuda/cublas-alloc-failed-cublaslt": {
		"Rule out an earlier kernel fault by running synchronously",
		"Ask cuBLASLt why it failed with its logging",
	},
	"cuda/cublas-execution-failed": {
		"If the build matches the GPU, look for an earlier kernel fault",
	},
	"cuda/cublas-execution-failed-cublaslt": {
		"Take PyTorch's addmm off the cuBLASLt path to see whether the Lt kernel is at fault",
		"Find an earlier kernel fault by running synchronously",
	},
	"cuda/cublas-internal-error": {
		"Find an earlier kernel fault by running synchronously, or run the failing step on CPU for a readable error",
	},
	"cuda/cublas-internal-error-cublascreate": {
		"Check for an earlier kernel fault (e.g. out-of-range embedding index) by running synchronously",
	},
	"cuda/cublas-invalid-value": {
		"If the installation is clean, look for an earlier kernel fault or bad arguments in a custom extension",
	},
	"cuda/cublas-invalid-value-lt-heuristic": {
		"Ask cuBLASLt why the heuristic failed",
	},
	"cuda/cublas-mapping-error": {
		"Check that every label value is a class index below num_output or the ignore_label",
		"Run the same net on CPU once to get a descriptive error",
	},
	"cuda/cublas-not-initialized": {
		"Check that token ids fit the embedding table",
	},
	"cuda/cublas-not-supported": {
		"Test native bf16 support without emulation",
		"If the dtype is fine for the GPU, check for a second cuBLAS package in the environment",
	},
	"cuda/cublas-tf-gemm-launch-failed": {
		"Read the cuBLAS line logged just before the InternalError",
	},
	"cuda/cudnn-arch-mismatch": {
		"Check the GPU's compute capability first",
	},
	"cuda/cudnn-execution-failed": {
		"Re-run with synchronous launches to see whether an earlier kernel fault is the real error",
	},
	"cuda/cudnn-mapping-error": {
		"Re-run with synchronous launches to check whether an earlier kernel fault is being reported late",
	},
	"cuda/cudnn-no-valid-algorithm": {
		"Disable cuDNN for one run to see the underlying error from PyTorch's native convolution",
	},
	"cuda/cudnn-not-initialized": {
		"Check free memory where the first convolution runs; warm cuDNN up right after moving the model to the GPU so a real out-of-memory error appears instead",
	},
	"cuda/cudnn-sublibrary-loading-failed": {
		"Find every cuDNN 9 copy the process can see and which one the framework reports",
		"Turn on cuDNN's API log to see which sub-library fails to load",
	},
	"cuda/cufft-internal-error": {
		"Rule out an earlier kernel fault",
	},
	"cuda/cufft-invalid-plan-or-size": {
		"Print the shape, stride and device right before the FFT call",
		"Find an earlier kernel fault",
	},
	"cuda/cusolver-execution-failed": {
		"Check the input for NaN/Inf right before the linalg call and fix the producer (loss scale, division by zero, invalid poses...)",
		"Rule out an earlier asynchronous CUDA error by running with synchronous launches",
	},
	"cuda/cusolver-not-initialized": {
		"Check that plain CUDA works in the same environment and that the driver supports the framework's CUDA version",
	},
	"cuda/cusparse-internal-error": {
		"Ask cuSPARSE what failed",
	},
	"cuda/device-side-assert": {
		"Read the kernel assert line printed above the traceback: it names the kernel file and the failed condition",
		"Rerun once with synchronous kernel launches so the traceback points at the failing op",
		"Check the indices against their bounds on the host before the op (or run the step on CPU, where the same bug raises a readable IndexError)",
	},
	"cuda/ecc-uncorrectable": {
		"Confirm it is a real ECC event on a specific GPU",
	},
	"cuda/hardware-stack-error": {
		"Find the kernel and how much stack it needs: build with -Xptxas -v (prints stack frame per kernel) and watch for the 'stack size cannot be statically determined' warning",
	},
	"cuda/illegal-instruction": {
		"Rerun with synchronous launches so the error is raised at the kernel that faults, then look at which library owns it",
		"Let the driver write a GPU core dump at the exception and open it in cuda-gdb to see the faulting kernel and instruction",
	},
	"cuda/illegal-memory-access": {
		"Rerun with synchronous launches to find the kernel/op that faults",
		"Run a short reproduction under Compute Sanitizer memcheck, which reports the kernel, thread and address of the bad access",
		"Have the driver write a GPU core dump at the exception and open it in cuda-gdb (works for kernels inside CUDA graphs too)",
	},
	"cuda/illegal-state": {
		"Name the API call that returns 401: run under Compute Sanitizer, which reports CUDA API errors with the call",
	},
	"cuda/initialization-error": {
		"If even a fresh process fails ('CUDA driver initialization failed' at first torch.cuda call), check the node: driver state, device files and kernel log",
	},
	"cuda/invalid-argument": {
		"Find the API call that returned the error: Compute Sanitizer reports every failing CUDA API call by name",
		"Rerun with synchronous launches so the Python traceback points at the op whose call failed",
	},
	"cuda/invalid-configuration": {
		"Find the launch that fails: make launches synchronous so the error points at the op, then log the grid/block sizes it computed",
	},
	"cuda/invalid-device-function": {
		"Compare the GPU's compute capability with the architectures the build contains",
	},
	"cuda/invalid-kernel-image": {
		"Rule out a corrupted JIT cache by disabling or relocating the CUDA compute cache for one run",
	},
	"cuda/invalid-pc": {
		"Locate the faulting kernel and PC with synchronous launches or a GPU core dump",
	},
	"cuda/invalid-resource-handle": {
		"Find the call that rejected the handle with Compute Sanitizer, which names the API call",
	},
	"cuda/misaligned-address": {
		"Find the kernel that does the unaligned access (synchronous launches, or Compute Sanitizer, which reports 'Address ... is misaligned' with kernel and thread)",
	},
	"cuda/mps-connection-failed": {
		"Check that the daemon runs and read its logs",
	},
	"cuda/no-cuda-device": {
		"If nvidia-smi itself lists no GPU, treat it as a host problem, not a CUDA one",
	},
	"cuda/not-supported": {
		"Find which call is unsupported with synchronous launches and Compute Sanitizer's API error report",
	},
	"cuda/nvlink-uncorrectable": {
		"Identify the GPU and link: read the Xid log and the NVLink error counters on the node",
	},
	"cuda/operation-not-permitted": {
		"Find the call that really failed",
	},
	"cuda/os-call-failed": {
		"Check that compute-only CUDA works and that only the interop/OS-dependent feature fails",
	},
	"cuda/ptx-jit-compilation-failed": {
		"Get the JIT compiler's own message: compile the PTX offline with ptxas for the GPU's architecture (or pass CU_JIT_ERROR_LOG_BUFFER to cuModuleLoadDataEx)",
	},
	"cuda/stream-capture-invalidated": {
		"Find the first capture error in the same log (900, 905 or 906) and fix that call",
	},
	"cuda/system-not-ready": {
		"Check that the fabric registration completed on every GPU before scheduling jobs",
	},
	"cuda/unspecified-launch-failure": {
		"Look for an Xid from the same time and PID in the kernel log and follow NVIDIA's Xid catalog for it",
		"Locate the faulting kernel with synchronous launches and Compute Sanitizer",
		"If the same GPU keeps failing across jobs, run NVIDIA's DCGM diagnostics on it before returning it to service",
	},
	"driver/fabric-manager-not-running": {
		"Check the service and the per-GPU fabric state",
	},
	"driver/fabric-manager-version-mismatch": {
		"Compare the loaded driver version with the installed fabric manager version",
	},
	"driver/gpu-lost": {
		"Look for the primary event in the kernel log",
	},
	"driver/gsp-firmware-error": {
		"Check that the GSP firmware for the exact version of the loaded kernel module is installed",
	},
	"driver/mig-insufficient-resources": {
		"Look at what is free and where each profile may be placed",
	},
	"driver/mig-mode-change-pending": {
		"Check current vs pending mode before scheduling MIG work",
	},
	"driver/nvidia-smi-cannot-communicate": {
		"Find out why the module is not loaded before changing anything",
	},
	"driver/nvidia-smi-libnvidia-ml-not-found": {
		"Check whether the loader can see the library",
	},
	"driver/nvidia-smi-no-devices-found": {
		"Read the NVRM kernel log lines from this boot to find which case it is",
	},
	"driver/nvml-driver-library-mismatch": {
		"Confirm which two versions disagree",
	},
	"driver/open-kernel-modules-required": {
		"Confirm which flavour is loaded",
	},
	"driver/rminitadapter-failed": {
		"Read the NVRM lines just before the failure and follow the specific cause (GSP firmware, VBIOS, Xid, PCIe/IOMMU)",
	},
	"driver/row-remapping-pending": {
		"Read the remapper state of every GPU",
	},
	"driver/xid-109-ctxsw-timeout": {
		"If it follows one program across GPUs, check that program's long-running or non-terminating kernels and any clock/voltage tuning on the card",
	},
	"driver/xid-13-graphics-engine-exception": {
		"Find the faulting kernel with Compute Sanitizer and synchronous launches",
		"Decide application vs hardware from the kernel log history of that GPU",
		"If it repeats on one GPU with known-good workloads, run the long DCGM diagnostic before returning the node to service",
	},
	"driver/xid-137-nvlink-priv-error": {
		"Check for NVLink errors logged just before it and handle those first",
		"Find the bad peer access in the application with Compute Sanitizer or cuda-gdb",
	},
	"driver/xid-140-unrecovered-ecc": {
		"After the reset, check the ECC and remapping state and run diagnostics; if errors persist, contact the hardware vendor (RMA)",
	},
	"driver/xid-144-150-nvlink5-error": {
		"Decode the event with NVIDIA's NVLink5 table before acting, and follow the Xid 154 logged with it",
	},
	"driver/xid-31-mmu-fault": {
		"Locate the bad access with Compute Sanitizer and synchronous launches",
		"Check whether the faults follow the program or the GPU",
	},
	"driver/xid-32-pushbuffer-stream": {
		"Check the PCIe link of the GPU and its replay counters",
	},
	"driver/xid-43-channel-stopped": {
		"Find the fault that preceded it for the same pid and fix that",
	},
	"driver/xid-45-preemptive-cleanup": {
		"Follow the Xid named in 'caused by previous Xid N' or logged just before on the same GPU",
	},
	"driver/xid-48-double-bit-ecc": {
		"Look at what followed the Xid 48 to choose the action: 63 -> reset, 64 -> reset and RMA if the remap failure stands, 94 -> restart only the affected job (reset if it says RST/D-RST: Yes), 95 -> reset",
	},
	"driver/xid-63-row-remap-recorded": {
		"Read the Xid that preceded it to decide about the running job: after Xid 94 with 'RST: No, D-RST: No' restart only the affected job; after Xid 95, Xid 48 or a 94 that asks for a reset, the GPU needs a reset first",
	},
	"driver/xid-68-nvdec-exception": {
		"Check the failing file on the CPU decoder and against the GPU's decode capabilities",
	},
	"driver/xid-74-nvlink-error": {
		"Find the first failing device: check all Xid/SXid lines around that second on the node and handle the earliest one",
	},
	"driver/xid-94-contained-ecc": {
		"Watch for repeats and remap failures; escalate to the vendor only then",
	},
	"driver/xid-95-uncontained-ecc": {
		"After the reset, check remapping state and run diagnostics; repeated Xid 95 or a remap failure means RMA",
	},
	"ecosystem/bitsandbytes-cuda-setup-failed": {
		"Run bitsandbytes' diagnostic to see which CUDA version and library file it looked for and why loading failed",
	},
	"ecosystem/deepspeed-zero-cpu-adam-not-built": {
		"Find the real error: read the first exception above this one, or load the op alone in one process",
	},
	"ecosystem/vllm-no-cache-memory": {
		"Check for other processes holding memory on the GPU before starting",
	},
	"ecosystem/xformers-built-for-mismatch": {
		"Check which operators are available after reinstalling",
	},
	"jax/cusolver-error": {
		"Reproduce with a tiny matrix to separate an environment problem from a data problem",
	},
	"jax/distributed-init-timeout": {
		"Read the log of each task named under 'Timed out task names' to find the process that failed first",
	},
	"jax/no-visible-gpu": {
		"Read the cuInit line printed just before and fix that first (driver, Fabric Manager, GPU fault)",
		"Check that the process actually sees GPUs: CUDA_VISIBLE_DEVICES and container GPU access",
	},
	"jax/xla-runtime-internal-error": {
		"Read the CUDA/library error at the end of the message and follow it (illegal address, cuBLAS status, out of memory)",
		"If the failing call is your own FFI/custom-call kernel, check its indexing with the CUDA compute sanitizer",
	},
	"nccl/async-error-handling-teardown": {
		"Read the exception printed with it and diagnose that error",
		"For timeouts, record the last collectives of every rank to find the rank that diverged",
	},
	"nccl/ddp-mark-variable-ready-twice": {
		"Find which parameter fires twice",
	},
	"nccl/ddp-unfinished-reduction": {
		"Find the parameters without gradients by name",
	},
	"nccl/elastic-child-failed": {
		"Decorate the entrypoint with @record so the summary carries the real traceback and time",
		"For exitcode -9, check the kernel log for the OOM killer on that host",
		"For other codes, read the failing rank's own output above the summary",
	},
	"nccl/heartbeat-monitor": {
		"Find the first real error across all ranks and the GPU health on the hosts",
		"Keep the debug dump it writes and read it with the flight recorder",
	},
	"nccl/ib-completion-error": {
		"Go to the peer named in the line first: check whether its process died before this error",
		"If the peer was alive, check the IB/RoCE ports and test the fabric without the application",
	},
	"nccl/internal-error": {
		"Read the 'Last error:' text that PyTorch appends and the NCCL WARN lines before the error",
		"If the last error is 'Socket recv failed' or 'Connection closed by remote peer <host>', find the process on that peer that exited first and fix its error",
		"Test the communication path without the application, using NVIDIA's nccl-tests",
	},
	"nccl/invalid-argument": {
		"Enable NCCL warnings and read which argument was rejected",
		"Check that src/dst/root ranks are valid for the group the call uses",
	},
	"nccl/invalid-usage": {
		"Rerun with NCCL warnings on and read the WARN line printed just before the error",
	},
	"nccl/remote-error": {
		"Find the rank that failed first: read 'Last error:' and the logs of the peer it names",
		"If no peer crashed, test the network path between the nodes without the training code",
	},
	"nccl/socket-connect-failed": {
		"If the error is 'Connection refused', check whether the peer process at that address was still alive",
		"Test reachability between the nodes on the ports in question",
	},
	"nccl/store-timeout": {
		"Confirm every rank was launched with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE and did not die before init",
		"Test that the other nodes can reach rank 0's store port",
	},
	"nccl/unhandled-cuda-error": {
		"Rerun with NCCL warnings enabled and act on the CUDA error named in \"NCCL WARN Cuda failure '...'\"",
		"If an earlier CUDA error (illegal memory access, device-side assert, Xid in dmesg) appears before this one, fix that error first and restart the processes",
		"If the failure is in GPU-to-GPU (P2P/IPC) setup inside a VM or container, confirm it by disabling P2P for one run, then fix the platform",
	},
	"nccl/unhandled-system-error": {
		"Rerun with NCCL debug output and read the NCCL WARN line printed before the error; it names the failing call",
		"If the WARN says a remote peer closed the connection, look at the other ranks' logs: the peer that exited first holds the real error",
	},
	"nccl/watchdog-timeout": {
		"Find the rank that failed first: look in every rank's log (and each host's dmesg) for an earlier, different error",
		"Enable the NCCL Flight Recorder, reproduce, and let its analyzer name the ranks that did not join the collective",
		"Turn on desync debugging to report which rank is behind or issued a different collective",
	},
	"pytorch/anomaly-nan-in-backward": {
		"Locate the forward line from the anomaly traceback and check the values reaching it",
	},
	"pytorch/cpu-allocator-out-of-memory": {
		"Check whether the requested size is plausible; an absurd one points at a shape bug or at work running on the CPU",
	},
	"pytorch/cuda-get-device-count-unexpected": {
		"Read the code after 'Error' and fix that error",
	},
	"pytorch/cuda-launch-blocking-hint": {
		"Diagnose the error printed just above the advice (the 'CUDA error: ...' text, and any kernel 'Assertion ... failed' lines before the traceback)",
		"Re-run with synchronous kernel launches so the traceback points at the op whose kernel failed; set the variable before Python starts",
		"For memory faults (illegal address, misaligned address), let Compute Sanitizer name the kernel, thread and address",
	},
	"pytorch/cuda-out-of-memory-legacy": {
		"Check for memory used outside this process's allocator (other processes, leftover runs)",
	},
	"pytorch/dataparallel-gpu-imbalance": {
		"Map the CUDA index to the physical card before excluding it",
	},
	"pytorch/deserialize-cuda-unavailable": {
		"If the machine does have a GPU, find out why CUDA is unavailable (CPU-only build, container without GPUs, empty CUDA_VISIBLE_DEVICES)",
	},
	"pytorch/gradscaler-no-inf-checks": {
		"After backward, count the optimizer parameters that received a gradient and list the trainable ones",
	},
	"pytorch/inductor-backend-compiler-failed": {
		"Diagnose the inner exception printed right after 'raised:', and rerun with more logging if it is not self-explanatory",
		"Bisect the stack: if the aot_eager backend works, the failure is in inductor/Triton code generation, otherwise in Dynamo or AOTAutograd",
	},
	"pytorch/pin-memory-thread-error": {
		"Read the wrapped error in the Original Traceback and fix that (for 'cannot pin ...' keep batches on the CPU; for a CUDA error rerun with synchronous launches)",
	},
	"pytorch/sdpa-no-available-kernel": {
		"Read the UserWarnings just above the error: each backend says why it was rejected",
	},
	"pytorch/triton-missing-or-gpu-too-old": {
		"Check what inductor sees before training",
	},
	"tensorflow/cannot-dlopen-gpu-libraries": {
		"Show which libraries failed: rerun with full logging and read the lines just above",
	},
	"tensorflow/could-not-load-dynamic-library": {
		"Find which of the requested files exist and where, before installing anything",
	},
	"tensorflow/dnn-library-not-found": {
		"Find the cuDNN line printed before the error: a handle failure ('Could not create cudnn handle') or a version mismatch ('Loaded runtime CuDNN library')",
	},
	"tensorflow/plugin-factory-already-registered": {
		"Check that TensorFlow sees the GPU, then look for the real error elsewhere in the log",
		"If the GPU list is empty, diagnose the GPU setup instead (missing CUDA libraries or driver)",
	},
	"triton/compilation-error": {
		"Read the exception printed after the caret: it names the real problem",
		"Debug your own kernel on the CPU with the interpreter and compile-time checks",
	},
	"triton/out-of-resources": {
		"Check the device limit the kernel must fit before choosing a configuration",
	},
}
