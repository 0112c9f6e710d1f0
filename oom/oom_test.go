package oom

import (
	"encoding/json"
	"maps"
	"math/rand"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
)

// figures are the byte figures of an Analysis, in the order of its fields.
type figures struct {
	req, capacity, free, alloc, reserved, ru, this, others int64
}

func (a *Analysis) figures_() figures {
	return figures{a.Requested, a.Capacity, a.Free, a.Allocated, a.Reserved, a.ReservedUnallocated, a.ThisProcess, a.OtherProcesses}
}

type oomCase struct {
	name    string
	text    string // a real message (source in the comment above it) unless said otherwise
	torch   string
	form    string
	gpu     int
	fig     figures
	procs   []Process
	shape   string
	dtype   string
	verdict Verdict
	reason  string // exact
	advice  string // the first advice line, exact
}

// unknownFigures is a figures value with every figure unknown.
var unknownFigures = figures{-1, -1, -1, -1, -1, -1, -1, -1}

// withReq returns unknownFigures with the request set.
func withReq(n int64) figures {
	f := unknownFigures
	f.req = n
	return f
}

var cases = []oomCase{
	// ---- PyTorch 2.x ----
	{
		// The example of the task brief (synthetic): process 5151 holds
		// exactly what "this process" holds, so it is this process.
		name:    "pytorch/brief-other-process",
		text:    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free. Process 4242 has 20.00 GiB memory in use. Process 5151 has 58.11 GiB memory in use. Including non-PyTorch memory, this process has 58.11 GiB memory in use. Of the allocated memory 55.20 GiB is allocated by PyTorch, and 1.30 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
		form:    FormPyTorch,
		gpu:     0,
		fig:     figures{2147483648, 84986665370, 1095216660, 59270548685, 59270548685 + 1395864371, 1395864371, 62395137393, 21474836480},
		procs:   []Process{{PID: 4242, Bytes: 21474836480}, {PID: 5151, Bytes: 62395137393, This: true}},
		verdict: OtherProcess,
		reason:  "GPU 0 (79.15 GiB) had 1.02 GiB free; processes other than this one held 20.00 GiB, more than the 1003.52 MiB missing for the 2.00 GiB request.",
		advice:  "Free at least 1003.52 MiB on GPU 0: process 4242 holds 20.00 GiB; stop it or move this job to another GPU (CUDA_VISIBLE_DEVICES=<idle GPU index>).",
	},
	{
		// pytorch/pytorch#16417 (comment, 2024-03-13).
		name:    "pytorch/fragmentation-this-process",
		text:    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 11.06 MiB is free. Including non-PyTorch memory, this process has 23.60 GiB memory in use. Of the allocated memory 22.90 GiB is allocated by PyTorch, and 194.87 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
		form:    FormPyTorch,
		gpu:     0,
		fig:     figures{23068672, 25393994138, 11597251, 24588687770, 24588687770 + 204336005, 204336005, 25340307046, 0},
		verdict: Fragmentation,
		reason:  "GPU 0 (23.65 GiB) had 11.06 MiB free, but PyTorch held 194.87 MiB reserved but unallocated, at least the 22.00 MiB requested: its cached memory was split into pieces too small for the request (fragmentation).",
		advice:  "194.87 MiB is reserved but unallocated, at least the 22.00 MiB asked: enable expandable segments before Python starts: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch 2.1 or newer; not available on Windows builds).",
	},
	{
		// antgroup/echomimic_v2#115.
		name:    "pytorch/live-tensors",
		text:    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.22 GiB. GPU 0 has a total capacity of 15.69 GiB of which 3.71 GiB is free. Including non-PyTorch memory, this process has 11.14 GiB memory in use. Of the allocated memory 10.14 GiB is allocated by PyTorch, and 771.43 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
		form:    FormPyTorch,
		gpu:     0,
		fig:     figures{4531190497, 16847009219, 3983582167, 10887742095, 10887742095 + 808902984, 808902984, 11961483919, 0},
		verdict: LiveTensors,
		reason:  "GPU 0 (15.69 GiB) had 3.71 GiB free and PyTorch's live tensors held 10.14 GiB, and with only 771.43 MiB reserved but unallocated the 4.22 GiB request could not fit.",
		advice:  "Free at least 522.24 MiB on GPU 0: live tensors hold 10.14 GiB, and the 4.22 GiB request finds only 3.71 GiB free and 771.43 MiB reserved but unallocated.",
	},
	{
		// FoundationVision/GenerateU#10: the 2.1 spelling "capacty", and
		// this process listed as "Process N" (a PID namespace): it holds at
		// least what PyTorch reserved, so it is this process.
		name:    "pytorch/capacty-container-self",
		text:    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 496.00 MiB. GPU 0 has a total capacty of 14.75 GiB of which 235.06 MiB is free. Process 20398 has 14.52 GiB memory in use. Of the allocated memory 14.06 GiB is allocated by PyTorch, and 330.42 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
		form:    FormPyTorch,
		gpu:     0,
		fig:     figures{520093696, 15837691904, 246478275, 15096810045, 15096810045 + 346470482, 346470482, -1, 0},
		procs:   []Process{{PID: 20398, Bytes: 15590731284, This: true}},
		verdict: LiveTensors,
		reason:  "GPU 0 (14.75 GiB) had 235.06 MiB free and PyTorch's live tensors held 14.06 GiB, and with only 330.42 MiB reserved but unallocated the 496.00 MiB request could not fit.",
		advice:  "Free at least 260.94 MiB on GPU 0: live tensors hold 14.06 GiB, and the 496.00 MiB request finds only 235.06 MiB free and 330.42 MiB reserved but unallocated.",
	},
	{
		// wxian3/NeuroLens#2.
		name:    "pytorch/exceeds-card",
		text:    "    return torch.grid_sampler(input, grid, mode_enum, padding_mode_enum, align_corners)\ntorch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 55.57 GiB. GPU 0 has a total capacty of 12.00 GiB of which 9.02 GiB is free. Of the allocated memory 984.52 MiB is allocated by PyTorch, and 463.48 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
		form:    FormPyTorch,
		gpu:     0,
		fig:     figures{59667833160, 12884901888, 9685151252, 1032344044, 1032344044 + 485994004, 485994004, -1, -1},
		verdict: ExceedsCard,
		reason:  "The 55.57 GiB request is larger than GPU 0's total capacity of 12.00 GiB.",
		advice:  "The request alone (55.57 GiB) is larger than GPU 0's 12.00 GiB: no allocator setting helps; make the tensor smaller (batch, sequence length, resolution) or shard the model across GPUs.",
	},
	{
		// knowledge/pytorch/cuda-out-of-memory.json examples (kaito-project/kaito#976):
		// private pools, and the process list holding this process.
		name:    "pytorch/private-pools",
		text:    "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 546.00 MiB. GPU 3 has a total capacity of 79.10 GiB of which 514.19 MiB is free. Process 562167 has 78.58 GiB memory in use. Of the allocated memory 76.73 GiB is allocated by PyTorch, with 46.00 MiB allocated in private pools (e.g., CUDA Graphs), and 736.86 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
		torch:   "2.4.0+cu121",
		form:    FormPyTorch,
		gpu:     3,
		fig:     figures{572522496, 84932978278, 539167293, 82388210156, 82388210156 + 772653711, 772653711, -1, 0},
		procs:   []Process{{PID: 562167, Bytes: 84374632530, This: true}},
		verdict: Fragmentation,
		reason:  "GPU 3 (79.10 GiB) had 514.19 MiB free, but PyTorch held 736.86 MiB reserved but unallocated, at least the 546.00 MiB requested: its cached memory was split into pieces too small for the request (fragmentation).",
		advice:  "736.86 MiB is reserved but unallocated, at least the 546.00 MiB asked: enable expandable segments before Python starts: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch 2.1 or newer; not available on Windows builds).",
	},
	{
		// knowledge/pytorch/cuda-out-of-memory.json examples: wrapped over
		// lines; process 1246069 is not this process, which PyTorch prints
		// separately, so the other processes hold its 577.00 MiB.
		name:    "pytorch/wrapped-other-listed",
		text:    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 138.00 MiB.\nGPU 0 has a total capacty of 15.90 GiB of which 8.44 MiB is free.\nProcess 1246069 has 577.00 MiB memory in use. Including non-PyTorch memory,\nthis process has 15.32 GiB memory in use. Of the allocated memory\n14.12 GiB is allocated by PyTorch, and 410.41 MiB is reserved\nby PyTorch but unallocated. If reserved but unallocated memory is large\ntry setting max_split_size_mb to avoid fragmentation.  See documentation\n for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
		form:    FormPyTorch,
		gpu:     0,
		fig:     figures{144703488, 17072495002, 8849981, 15161234555, 15161234555 + 430346076, 430346076, 16449724744, 605028352},
		procs:   []Process{{PID: 1246069, Bytes: 605028352}},
		verdict: Fragmentation,
		reason:  "GPU 0 (15.90 GiB) had 8.44 MiB free, but PyTorch held 410.41 MiB reserved but unallocated, at least the 138.00 MiB requested: its cached memory was split into pieces too small for the request (fragmentation).",
		advice:  "410.41 MiB is reserved but unallocated, at least the 138.00 MiB asked: enable expandable segments before Python starts: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch 2.1 or newer; not available on Windows builds).",
	},
	{
		// Comfy-Org/ComfyUI#9529 (ROCm): 7.12 GiB free, more than the
		// 432.00 MiB asked: the figures do not explain the failure.
		name:    "pytorch/hip-free-covers-request",
		text:    "HIP out of memory. Tried to allocate 432.00 MiB. GPU 0 has a total capacity of 15.92 GiB of which 7.12 GiB is free. Of the allocated memory 8.08 GiB is allocated by PyTorch, and 321.96 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
		form:    FormPyTorch,
		gpu:     0,
		fig:     figures{452984832, 17093969838, 7645041787, 8675833938, 8675833938 + 337599529, 337599529, -1, -1},
		verdict: Unknown,
		reason:  "The driver reported 7.12 GiB free on GPU 0, at least the 432.00 MiB requested, yet the allocation failed, so the figures do not explain it.",
		advice:  "The driver could not hand out one block of 432.00 MiB although 7.12 GiB was free: on Windows the WDDM driver often cannot, and memory freed between the failure and the report also shows as free. Check with nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv during the run, and make the request smaller (batch, resolution) if it persists.",
	},
	{
		// kyuz0/amd-strix-halo-image-video-toolboxes#3 (ROCm, no process
		// list): 69 GiB of the 128 GiB are outside PyTorch's allocator.
		name:    "pytorch/hip-outside-allocator",
		text:    "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 3.31 GiB. GPU 0 has a total capacity of 128.00 GiB of which 780.24 MiB is free. Of the allocated memory 57.70 GiB is allocated by PyTorch, and 75.82 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
		form:    FormPyTorch,
		gpu:     0,
		fig:     figures{3554085437, 137438953472, 818140938, 61954903245, 61954903245 + 79503032, 79503032, -1, -1},
		verdict: OtherProcess,
		reason:  "GPU 0 (128.00 GiB) had 780.24 MiB free and PyTorch reserved 57.77 GiB; the other 69.46 GiB was held outside PyTorch's allocator (other processes, CUDA context, other libraries), more than the 2.55 GiB missing for the 3.31 GiB request.",
		advice:  "Free at least 2.55 GiB on GPU 0: 69.46 GiB is held outside PyTorch's allocator; find the holders with nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv, stop them or move this job to another GPU (CUDA_VISIBLE_DEVICES=<idle GPU index>).",
	},
	{
		// ROCm/TheRock#1054: 16.00 GiB asked of a 15.24 GiB card.
		name:    "pytorch/hip-exceeds",
		text:    "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 16.00 GiB. GPU 0 has a total capacity of 15.24 GiB of which 15.09 GiB is free. Of the allocated memory 0 bytes is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
		form:    FormPyTorch,
		gpu:     0,
		fig:     figures{17179869184, 16363825398, 16202764124, 0, 0, 0, -1, -1},
		verdict: ExceedsCard,
		reason:  "The 16.00 GiB request is larger than GPU 0's total capacity of 15.24 GiB.",
		advice:  "The request alone (16.00 GiB) is larger than GPU 0's 15.24 GiB: no allocator setting helps; make the tensor smaller (batch, sequence length, resolution) or shard the model across GPUs.",
	},
	{
		// A message quoted in a public repository's notes (MIG / container:
		// "Process has" without a PID), cut after the allocated figure.
		name:    "pytorch/process-without-pid",
		text:    "CUDA out of memory. Tried to allocate 18.00 MiB. GPU 0 has a total capacity of 79.25 GiB \nof which 17.88 MiB is free. Process has 79.22 GiB memory in use. \nOf the allocated memory 78.72 GiB is allocated by PyTorch",
		form:    FormPyTorch,
		gpu:     0,
		fig:     figures{18874368, 85094039552, 18748539, 84524956385, -1, -1, -1, 0},
		procs:   []Process{{PID: 0, Bytes: 85061827297, This: true}},
		verdict: LiveTensors,
		reason:  "GPU 0 (79.25 GiB) had 17.88 MiB free and PyTorch's live tensors held 78.72 GiB, and the 18.00 MiB request could not fit.",
		advice:  "Free at least 122.88 KiB on GPU 0: live tensors hold 78.72 GiB, and the 18.00 MiB request finds only 17.88 MiB free.",
	},
	{
		// A MIG 1g.10gb slice, quoted in a public repository's notes: "in
		// use" without "memory", and nothing after it.
		name:    "pytorch/mig-slice-cut",
		text:    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 174.00 MiB. GPU 0 has a total capacity of 9.75 GiB of which 150.00 MiB is free. Process has 9.59 GiB in use.",
		form:    FormPyTorch,
		gpu:     0,
		fig:     figures{182452224, 10468982784, 157286400, -1, -1, -1, -1, -1},
		procs:   []Process{{PID: 0, Bytes: 10297184092}},
		verdict: LiveTensors,
		reason:  "GPU 0 (9.75 GiB) had 150.00 MiB free, and the 174.00 MiB request could not fit.",
		advice:  "Free at least 24.00 MiB on GPU 0: the 174.00 MiB request finds only 150.00 MiB free.",
	},
	{
		// Synthintel0/MyGirlGPT#11: 41.56 MiB free and 32.00 MiB asked, on a
		// nearly full 4 GiB card.
		name:    "pytorch/free-covers-small-request",
		text:    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 MiB. GPU 0 has a total capacty of 4.00 GiB of which 41.56 MiB is free. Including non-PyTorch memory, this process has 3.44 GiB memory in use. Of the allocated memory 2.58 GiB is allocated by PyTorch, and 1.90 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF.",
		form:    FormPyTorch,
		gpu:     0,
		fig:     figures{33554432, 4294967296, 43578819, 2770253906, 2770253906 + 1992294, 1992294, 3693671875, 0},
		verdict: Unknown,
		reason:  "The driver reported 41.56 MiB free on GPU 0, at least the 32.00 MiB requested, yet the allocation failed, so the figures do not explain it.",
		advice:  "The driver could not hand out one block of 32.00 MiB although 41.56 MiB was free: on Windows the WDDM driver often cannot, and memory freed between the failure and the report also shows as free. Check with nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv during the run, and make the request smaller (batch, resolution) if it persists.",
	},
	{
		// knowledge/pytorch/cuda-out-of-memory.json examples: the bare message.
		name:    "pytorch/bare",
		text:    "torch.OutOfMemoryError: CUDA out of memory.",
		form:    FormPyTorch,
		gpu:     -1,
		fig:     unknownFigures,
		verdict: Unknown,
		reason:  "PyTorch ran out of GPU memory, but the message carries no figures.",
		advice:  "Get the figures: run nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv while the job runs to see what each process holds, and in PyTorch print torch.cuda.mem_get_info() (free and total bytes) right before the failing step. The full exception text also lists them.",
	},

	// ---- PyTorch 1.x / 2.0 ----
	{
		// The legacy example of the task brief.
		name:    "legacy/brief-fragmentation",
		text:    "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.93 GiB total capacity; 6.94 GiB already allocated; 10.56 MiB free; 7.31 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
		form:    FormPyTorchLegacy,
		gpu:     0,
		fig:     figures{20971520, 8514772664, 11072963, 7451768259, 7849052733, 7849052733 - 7451768259, -1, -1},
		verdict: Fragmentation,
		reason:  "GPU 0 (7.93 GiB) had 10.56 MiB free, but PyTorch held 378.88 MiB reserved but unallocated, at least the 20.00 MiB requested: its cached memory was split into pieces too small for the request (fragmentation).",
		advice:  "378.88 MiB is reserved but unallocated, at least the 20.00 MiB asked: expandable segments need PyTorch 2.1, so limit block splitting instead (this message's form is printed by releases before 2.1; the setting needs 1.10 or newer): export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128. Cached blocks of 128 MiB or more are then never split by smaller requests such as this 20.00 MiB one, so they stay whole and are returned to the driver when memory runs short instead of sitting in unusable pieces.",
	},
	{
		// 2KangHo/vdsr_pytorch#2.
		name:    "legacy/fragmentation-512",
		text:    "RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 15.90 GiB total capacity; 13.13 GiB already allocated; 415.88 MiB free; 14.80 GiB reserved in total by PyTorch)",
		torch:   "1.13.1",
		form:    FormPyTorchLegacy,
		gpu:     0,
		fig:     figures{536870912, 17072495002, 436081787, 14098230149, 15891378995, 15891378995 - 14098230149, -1, -1},
		verdict: Fragmentation,
		reason:  "GPU 0 (15.90 GiB) had 415.88 MiB free, but PyTorch held 1.67 GiB reserved but unallocated, at least the 512.00 MiB requested: its cached memory was split into pieces too small for the request (fragmentation).",
		advice:  "1.67 GiB is reserved but unallocated, at least the 512.00 MiB asked: expandable segments need PyTorch 2.1, so limit block splitting instead: export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512. Requests of 512 MiB or more then take whole cached blocks that no smaller tensor may split, so blocks sized for this 512.00 MiB request stay whole and can be reused or returned to the driver; keep the value at or below the request, or the request is still served by splitting blocks.",
	},
	{
		// OPIXray-author/OPIXray#5.
		name:    "legacy/live-tensors",
		text:    "CUDA out of memory. Tried to allocate 264.00 MiB (GPU 0; 2.00 GiB total capacity; 788.51 MiB already allocated; 145.93 MiB free; 1.02 GiB reserved in total by PyTorch)",
		form:    FormPyTorchLegacy,
		gpu:     0,
		fig:     figures{276824064, 2147483648, 153018696, 826812662, 1095216660, 1095216660 - 826812662, -1, -1},
		verdict: LiveTensors,
		reason:  "GPU 0 (2.00 GiB) had 145.93 MiB free and PyTorch's live tensors held 788.51 MiB, and with only 255.97 MiB reserved but unallocated the 264.00 MiB request could not fit.",
		advice:  "Free at least 118.07 MiB on GPU 0: live tensors hold 788.51 MiB, and the 264.00 MiB request finds only 145.93 MiB free and 255.97 MiB reserved but unallocated.",
	},
	{
		// phamquiluan/ResidualMaskingNetwork#15: 9.77 GiB of the 10.76 GiB
		// card are outside PyTorch's allocator.
		name:    "legacy/outside-allocator",
		text:    "RuntimeError: CUDA out of memory. Tried to allocate 36.00 MiB (GPU 0; 10.76 GiB total capacity; 996.23 MiB already allocated; 8.81 MiB free; 1010.00 MiB reserved in total by PyTorch)",
		form:    FormPyTorchLegacy,
		gpu:     0,
		fig:     figures{37748736, 11553462026, 9237955, 1044622868, 1059061760, 1059061760 - 1044622868, -1, -1},
		verdict: OtherProcess,
		reason:  "GPU 0 (10.76 GiB) had 8.81 MiB free and PyTorch reserved 1010.00 MiB; the other 9.77 GiB was held outside PyTorch's allocator (other processes, CUDA context, other libraries), more than the 27.19 MiB missing for the 36.00 MiB request.",
		advice:  "Free at least 27.19 MiB on GPU 0: 9.77 GiB is held outside PyTorch's allocator; find the holders with nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv, stop them or move this job to another GPU (CUDA_VISIBLE_DEVICES=<idle GPU index>).",
	},
	{
		// YingqianWang/iPASSR#9.
		name:    "legacy/exceeds-card",
		text:    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 10.73 GiB (GPU 0; 8.00 GiB total capacity; 17.20 GiB already allocated; 0 bytes free; 19.15 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
		form:    FormPyTorchLegacy,
		gpu:     0,
		fig:     figures{11521249772, 8589934592, 0, 18468359373, 20562155930, 20562155930 - 18468359373, -1, -1},
		verdict: ExceedsCard,
		reason:  "The 10.73 GiB request is larger than GPU 0's total capacity of 8.00 GiB.",
		advice:  "The request alone (10.73 GiB) is larger than GPU 0's 8.00 GiB: no allocator setting helps; make the tensor smaller (batch, sequence length, resolution) or shard the model across GPUs.",
	},
	{
		// pytorch/pytorch#59778: 3.03 GiB free, more than the 2.26 GiB asked.
		name:    "legacy/free-covers-request",
		text:    "`CUDA out of memory. Tried to allocate 2.26 GiB (GPU 0; 6.00 GiB total capacity; 781.59 MiB already allocated; 3.03 GiB free; 1.24 GiB reserved in total by PyTorch) `",
		form:    FormPyTorchLegacy,
		gpu:     0,
		fig:     figures{2426656522, 6442450944, 3253437727, 819556516, 1331439862, 1331439862 - 819556516, -1, -1},
		verdict: Unknown,
		reason:  "The driver reported 3.03 GiB free on GPU 0, at least the 2.26 GiB requested, yet the allocation failed, so the figures do not explain it.",
		advice:  "The driver could not hand out one block of 2.26 GiB although 3.03 GiB was free: on Windows the WDDM driver often cannot, and memory freed between the failure and the report also shows as free. Check with nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv during the run, and make the request smaller (batch, resolution) if it persists.",
	},
	{
		// shllln/GenerativeGraph#5: PyTorch 1.0's "cached" (held by the
		// allocator, not handed out).
		name:    "legacy/cached",
		text:    "RuntimeError: CUDA out of memory. Tried to allocate 1024.00 KiB (GPU 0; 11.17 GiB total capacity; 10.90 GiB already allocated; 576.00 KiB free; 30.96 MiB cached)",
		form:    FormPyTorchLegacy,
		gpu:     0,
		fig:     figures{1048576, 11993696174, 589824, 11703785882, 11703785882 + 32463913, 32463913, -1, -1},
		verdict: Fragmentation,
		reason:  "GPU 0 (11.17 GiB) had 576.00 KiB free, but PyTorch held 30.96 MiB reserved but unallocated, at least the 1.00 MiB requested: its cached memory was split into pieces too small for the request (fragmentation).",
		advice:  "30.96 MiB is reserved but unallocated, at least the 1.00 MiB asked: this release (the message's 'cached' form is from before 1.5) has no allocator setting against fragmentation (PYTORCH_CUDA_ALLOC_CONF arrived in 1.10, expandable_segments in 2.1): upgrade, or lower the peak memory of a step.",
	},
	{
		// knowledge/pytorch/cuda-out-of-memory-legacy.json examples: a memory
		// fraction ("allowed").
		name:    "legacy/allowed",
		text:    "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 11.76 GiB total capacity; 4.75 GiB already allocated; 8.00 MiB free; 4.77 GiB allowed; 4.74 GiB reserved in total by PyTorch)",
		form:    FormPyTorchLegacy,
		gpu:     0,
		fig:     figures{20971520, 12627203850, 8388608, 5100273664, 5089536246, 0, -1, -1},
		verdict: OtherProcess,
		reason:  "GPU 0 (11.76 GiB) had 8.00 MiB free and PyTorch reserved 4.74 GiB; the other 7.01 GiB was held outside PyTorch's allocator (other processes, CUDA context, other libraries), more than the 12.00 MiB missing for the 20.00 MiB request.",
		advice:  "Free at least 12.00 MiB on GPU 0: 7.01 GiB is held outside PyTorch's allocator; find the holders with nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv, stop them or move this job to another GPU (CUDA_VISIBLE_DEVICES=<idle GPU index>).",
	},
	{
		// knowledge/pytorch/cuda-out-of-memory-legacy.json examples: the bare 1.x message.
		name:    "legacy/bare",
		text:    "RuntimeError: CUDA out of memory.",
		form:    FormPyTorchLegacy,
		gpu:     -1,
		fig:     unknownFigures,
		verdict: Unknown,
		reason:  "PyTorch ran out of GPU memory, but the message carries no figures.",
		advice:  "Get the figures: run nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv while the job runs to see what each process holds, and in PyTorch print torch.cuda.mem_get_info() (free and total bytes) right before the failing step. The full exception text also lists them.",
	},

	// ---- CUDA runtime ----
	{
		// taohan10200/IIM#28.
		name:    "cuda/error-out-of-memory",
		text:    "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported at some other API call,so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
		form:    FormCUDARuntime,
		gpu:     -1,
		fig:     unknownFigures,
		verdict: Unknown,
		reason:  "A CUDA call ran out of memory; the message gives no figures (how much was asked, how much was free, who held the rest).",
		advice:  "Get the figures: run nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv while the job runs to see what each process holds, and in PyTorch print torch.cuda.mem_get_info() (free and total bytes) right before the failing step.",
	},
	{
		// bluer555/CR-GAN#8: no space after the colon.
		name:    "cuda/no-space",
		text:    `what issues can lead to this error which is "RuntimeError: CUDA error:out of memory"?`,
		form:    FormCUDARuntime,
		gpu:     -1,
		fig:     unknownFigures,
		verdict: Unknown,
		reason:  "A CUDA call ran out of memory; the message gives no figures (how much was asked, how much was free, who held the rest).",
		advice:  "Get the figures: run nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv while the job runs to see what each process holds, and in PyTorch print torch.cuda.mem_get_info() (free and total bytes) right before the failing step.",
	},
	{
		// knowledge/cuda/out-of-memory.json examples (THC-era PyTorch).
		name:    "cuda/runtime-error-2",
		text:    "RuntimeError: cuda runtime error (2) : out of memory at /pytorch/torch/lib/THC/generic/THCStorage.cu:58",
		form:    FormCUDARuntime,
		gpu:     -1,
		fig:     unknownFigures,
		verdict: Unknown,
		reason:  "A CUDA call ran out of memory; the message gives no figures (how much was asked, how much was free, who held the rest).",
		advice:  "Get the figures: run nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv while the job runs to see what each process holds, and in PyTorch print torch.cuda.mem_get_info() (free and total bytes) right before the failing step.",
	},
	{
		// knowledge/cuda/out-of-memory.json examples.
		name:    "cuda/bad-alloc",
		text:    "RuntimeError: std::bad_alloc: cudaErrorMemoryAllocation: out of memory",
		form:    FormCUDARuntime,
		gpu:     -1,
		fig:     unknownFigures,
		verdict: Unknown,
		reason:  "A CUDA call ran out of memory; the message gives no figures (how much was asked, how much was free, who held the rest).",
		advice:  "Get the figures: run nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv while the job runs to see what each process holds, and in PyTorch print torch.cuda.mem_get_info() (free and total bytes) right before the failing step.",
	},
	{
		// tensorflow/tensorflow#52123: the stream executor names the size.
		name:    "cuda/driver-sized",
		text:    "2021-09-24 16:37:17.130269: I tensorflow/stream_executor/cuda/cuda_driver.cc:732] failed to allocate 7.81G (8387559424 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
		form:    FormCUDARuntime,
		gpu:     -1,
		fig:     withReq(8387559424),
		verdict: Unknown,
		reason:  "A CUDA allocation of 7.81 GiB failed; the message gives neither the GPU's capacity nor its free memory.",
		advice:  "Get the figures: run nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv while the job runs to see what each process holds, and in PyTorch print torch.cuda.mem_get_info() (free and total bytes) right before the failing step.",
	},
	{
		// tensorflow/tensorflow#64764: pinned host memory, not the GPU.
		name:    "cuda/host",
		text:    "2024-03-29 16:39:36.771397: E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:1629] failed to alloc 2147483648 bytes on host: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
		form:    FormCUDARuntime,
		gpu:     -1,
		fig:     withReq(2147483648),
		verdict: Unknown,
		reason:  "Allocating 2.00 GiB of pinned host memory failed (CUDA_ERROR_OUT_OF_MEMORY for host memory): the host's RAM ran short, not the GPU's.",
		advice:  "Check the host's free memory (free -h, and the container's memory limit), then ask for less pinned memory: fewer or smaller pinned buffers, fewer data-loading workers.",
	},

	// ---- XLA / JAX ----
	{
		// patrickbryant1/AFProfile#8.
		name:    "xla/bytes",
		text:    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4770354232 bytes.\nBufferAssignment OOM Debugging.\nBufferAssignment stats:\n             parameter allocation:  372.76MiB\n              constant allocation:    48.5KiB\n        maybe_live_out allocation:    9.64GiB\n     preallocated temp allocation:    4.44GiB\n                 total allocation:   14.44GiB\n              total fragmentation:  680.30MiB (4.60%)",
		form:    FormXLA,
		gpu:     -1,
		fig:     withReq(4770354232),
		verdict: Unknown,
		reason:  "XLA could not allocate 4.44 GiB on the GPU; the message gives neither the GPU's capacity nor what was in use.",
		advice:  "If another process shares the GPU (a second JAX process, TensorFlow or PyTorch), give each a share before it starts: export XLA_PYTHON_CLIENT_MEM_FRACTION=.45 per process, or XLA_PYTHON_CLIENT_PREALLOCATE=false; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv shows who holds the GPU.",
	},
	{
		// jax-ml/jax#13428.
		name:    "xla/small",
		text:    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 6291456 bytes.",
		form:    FormXLA,
		gpu:     -1,
		fig:     withReq(6291456),
		verdict: Unknown,
		reason:  "XLA could not allocate 6.00 MiB on the GPU; the message gives neither the GPU's capacity nor what was in use.",
		advice:  "If another process shares the GPU (a second JAX process, TensorFlow or PyTorch), give each a share before it starts: export XLA_PYTHON_CLIENT_MEM_FRACTION=.45 per process, or XLA_PYTHON_CLIENT_PREALLOCATE=false; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv shows who holds the GPU.",
	},
	{
		// knowledge/jax/xla-out-of-memory.json examples: a size with a unit.
		name:    "xla/unit",
		text:    "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 18.36GiB.\n[executable_name='jit__chunk_body']",
		form:    FormXLA,
		gpu:     -1,
		fig:     withReq(19713899889),
		verdict: Unknown,
		reason:  "XLA could not allocate 18.36 GiB on the GPU; the message gives neither the GPU's capacity nor what was in use.",
		advice:  "If another process shares the GPU (a second JAX process, TensorFlow or PyTorch), give each a share before it starts: export XLA_PYTHON_CLIENT_MEM_FRACTION=.45 per process, or XLA_PYTHON_CLIENT_PREALLOCATE=false; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv shows who holds the GPU.",
	},
	{
		// kingoflolz/mesh-transformer-jax#66: the byte count in
		// parentheses wins over the rounded size.
		name:    "xla/request-ordinal",
		text:    "2021-07-21 16:15:16.513776: E external/org_tensorflow/tensorflow/compiler/xla/pjrt/pjrt_stream_executor_client.cc:1981] Execution of replica 0 failed: Resource exhausted: Failed to allocate request for 32.00MiB (33554432B) on device ordinal 0",
		form:    FormXLA,
		gpu:     0,
		fig:     withReq(33554432),
		verdict: Unknown,
		reason:  "XLA could not allocate 32.00 MiB on GPU 0; the message gives neither the GPU's capacity nor what was in use.",
		advice:  "If another process shares GPU 0 (a second JAX process, TensorFlow or PyTorch), give each a share before it starts: export XLA_PYTHON_CLIENT_MEM_FRACTION=.45 per process, or XLA_PYTHON_CLIENT_PREALLOCATE=false; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv shows who holds the GPU.",
	},
	{
		// knowledge/jax/xla-out-of-memory.json examples.
		name:    "xla/request-ordinal-2",
		text:    "XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for 176.00MiB (184549376B) on device ordinal 0",
		form:    FormXLA,
		gpu:     0,
		fig:     withReq(184549376),
		verdict: Unknown,
		reason:  "XLA could not allocate 176.00 MiB on GPU 0; the message gives neither the GPU's capacity nor what was in use.",
		advice:  "If another process shares GPU 0 (a second JAX process, TensorFlow or PyTorch), give each a share before it starts: export XLA_PYTHON_CLIENT_MEM_FRACTION=.45 per process, or XLA_PYTHON_CLIENT_PREALLOCATE=false; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv shows who holds the GPU.",
	},
	{
		// onpix/LLNeRF#9.
		name:    "xla/allocating",
		text:    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating 20029400304 bytes.",
		form:    FormXLA,
		gpu:     -1,
		fig:     withReq(20029400304),
		verdict: Unknown,
		reason:  "XLA could not allocate 18.65 GiB on the GPU; the message gives neither the GPU's capacity nor what was in use.",
		advice:  "If another process shares the GPU (a second JAX process, TensorFlow or PyTorch), give each a share before it starts: export XLA_PYTHON_CLIENT_MEM_FRACTION=.45 per process, or XLA_PYTHON_CLIENT_PREALLOCATE=false; nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv shows who holds the GPU.",
	},

	// ---- TensorFlow ----
	{
		// tensorflow/models#7142.
		name:    "tf/tensor",
		text:    "ResourceExhaustedError (see above for traceback): OOM when allocating tensor with shape[500,17,17,4032] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc.",
		form:    FormTensorFlow,
		gpu:     0,
		fig:     withReq(500 * 17 * 17 * 4032 * 4),
		shape:   "[500,17,17,4032]",
		dtype:   "float",
		verdict: Unknown,
		reason:  "TensorFlow could not allocate 2.17 GiB for a [500,17,17,4032] float tensor on GPU 0; the message gives neither the allocator's limit nor what was in use.",
		advice:  "Get the figures: the BFC allocator prints its summary ('Limit:' and 'InUse:' lines) in the log just before the error; pass that part of the log too, and run nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv to see other processes.",
	},
	{
		// knowledge/tensorflow/oom-when-allocating-tensor.json examples: half on GPU 1.
		name:    "tf/half-gpu1",
		text:    "tensorflow.python.framework.errors_impl.ResourceExhaustedError:  OOM when allocating tensor with shape[500,512,4,4] and type half on /job:worker/replica:0/task:1/device:GPU:1 by allocator GPU_1_bfc\n\t [[{{node gradient_tape/model/conv2d_19/Conv2D/Conv2DBackpropInput}}]]",
		form:    FormTensorFlow,
		gpu:     1,
		fig:     withReq(500 * 512 * 4 * 4 * 2),
		shape:   "[500,512,4,4]",
		dtype:   "half",
		verdict: Unknown,
		reason:  "TensorFlow could not allocate 7.81 MiB for a [500,512,4,4] half tensor on GPU 1; the message gives neither the allocator's limit nor what was in use.",
		advice:  "Get the figures: the BFC allocator prints its summary ('Limit:' and 'InUse:' lines) in the log just before the error; pass that part of the log too, and run nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv to see other processes.",
	},
	{
		// tensorflow/tensorflow#47820: the BFC line and the op error of the
		// same 18.00 MiB tensor.
		name: "tf/bfc-and-tensor",
		text: "2021-03-15 17:16:57.309165: W tensorflow/core/common_runtime/bfc_allocator.cc:433] Allocator (GPU_0_bfc) ran out of memory trying to allocate 18.00MiB (rounded to 18874368)requested by op Mul\n" +
			"If the cause is memory fragmentation maybe the environment variable 'TF_GPU_ALLOCATOR=cuda_malloc_async' will improve the situation. \n" +
			"tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[3,3,512,1024] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc [Op:Mul]",
		form:    FormTensorFlow,
		gpu:     0,
		fig:     withReq(18874368),
		shape:   "[3,3,512,1024]",
		dtype:   "float",
		verdict: Unknown,
		reason:  "TensorFlow could not allocate 18.00 MiB for a [3,3,512,1024] float tensor on GPU 0; the message gives neither the allocator's limit nor what was in use.",
		advice:  "Get the figures: the BFC allocator prints its summary ('Limit:' and 'InUse:' lines) in the log just before the error; pass that part of the log too, and run nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv to see other processes.",
	},
	{
		// tensorflow/tensorflow#60401: the BFC line alone.
		name:    "tf/bfc-rounded",
		text:    "2023-04-23 01:00:16.820335: W tensorflow/core/common_runtime/bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of memory trying to allocate 560.44MiB (rounded to 587661312)requested by op _EagerConst\nIf the cause is memory fragmentation maybe the environment variable 'TF_GPU_ALLOCATOR=cuda_malloc_async' will improve the situation. \nCurrent allocation summary follows.",
		form:    FormTensorFlow,
		gpu:     0,
		fig:     withReq(587661312),
		verdict: Unknown,
		reason:  "TensorFlow could not allocate 560.44 MiB on GPU 0; the message gives neither the allocator's limit nor what was in use.",
		advice:  "Get the figures: the BFC allocator prints its summary ('Limit:' and 'InUse:' lines) in the log just before the error; pass that part of the log too, and run nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv to see other processes.",
	},
	{
		// The BFC line and summary of the task brief (synthetic figures).
		name:    "tf/bfc-summary-live",
		text:    "W tensorflow/core/common_runtime/bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.17GiB (rounded to 1254359040)requested by op Conv2D\nI tensorflow/core/common_runtime/bfc_allocator.cc:1101] Stats: \nLimit:                     10990990131\nInUse:                     10800000000\nMaxInUse:                  10800000000\nNumAllocs:                       10457\nMaxAllocSize:               1254359040",
		form:    FormTensorFlow,
		gpu:     0,
		fig:     figures{1254359040, 10990990131, -1, 10800000000, -1, -1, -1, -1},
		verdict: LiveTensors,
		reason:  "The allocator on GPU 0 had 10.06 GiB of its 10.24 GiB limit in use, leaving 182.14 MiB for the 1.17 GiB request.",
		advice:  "Free at least 1014.11 MiB on GPU 0: tensors in use hold 10.06 GiB of the allocator's 10.24 GiB, and the 1.17 GiB request finds only 182.14 MiB.",
	},
	{
		// yuxng/PoseCNN#79: the summary of a real run, with an op error
		// like that run's but for a 12.00 GiB tensor (synthetic) that the
		// 9.27 GiB limit cannot hold.
		name:    "tf/bfc-summary-exceeds",
		text:    "2019-01-04 16:21:00.922251: I tensorflow/core/common_runtime/bfc_allocator.cc:680] Stats: \nLimit:                  9955036364\nInUse:                  4319733760\nMaxInUse:               4326713344\nNumAllocs:                     493\nMaxAllocSize:            817692672\n\nW tensorflow/core/framework/op_kernel.cc:1318] OP_REQUIRES failed at transpose_op.cc:199 : Resource exhausted: OOM when allocating tensor with shape[3,1024,1024,1024] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
		form:    FormTensorFlow,
		gpu:     0,
		fig:     figures{12884901888, 9955036364, -1, 4319733760, -1, -1, -1, -1},
		shape:   "[3,1024,1024,1024]",
		dtype:   "float",
		verdict: ExceedsCard,
		reason:  "The 12.00 GiB request is larger than the 9.27 GiB the allocator may use on GPU 0 (its BFC limit).",
		advice:  "The request alone (12.00 GiB) is larger than the 9.27 GiB the allocator may use on GPU 0: no allocator setting helps; make the tensor smaller (batch, sequence length, resolution) or shard the model across GPUs.",
	},
	{
		// yuxng/PoseCNN#79 as posted: the pool had 5.22 GiB unused, far more
		// than the 154.69 MiB tensor: the figures do not explain the failure.
		name:    "tf/bfc-summary-pool-free",
		text:    "2019-01-04 16:21:00.922251: I tensorflow/core/common_runtime/bfc_allocator.cc:680] Stats: \nLimit:                  9955036364\nInUse:                  4319733760\nMaxInUse:               4326713344\nNumAllocs:                     493\nMaxAllocSize:            817692672\n\nW tensorflow/core/framework/op_kernel.cc:1318] OP_REQUIRES failed at transpose_op.cc:199 : Resource exhausted: OOM when allocating tensor with shape[2,480,640,66] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
		form:    FormTensorFlow,
		gpu:     0,
		fig:     figures{2 * 480 * 640 * 66 * 4, 9955036364, -1, 4319733760, -1, -1, -1, -1},
		shape:   "[2,480,640,66]",
		dtype:   "float",
		verdict: Unknown,
		reason:  "The allocator on GPU 0 had 4.02 GiB of its 9.27 GiB limit in use, leaving 5.25 GiB, at least the 154.69 MiB requested, yet the allocation failed: the unused part was in pieces too small, or (with memory growth on) the driver could not extend the pool.",
		advice:  "5.25 GiB of the pool was unused, at least the 154.69 MiB asked: switch TensorFlow to CUDA's stream-ordered allocator, which has no pool of its own to fragment: export TF_GPU_ALLOCATOR=cuda_malloc_async before TensorFlow starts.",
	},
}

func TestAnalyze(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := Analyze(c.text, c.torch)
			if a == nil {
				t.Fatalf("Analyze = nil")
			}
			if a.Form != c.form || a.GPU != c.gpu {
				t.Errorf("form, gpu = %q, %d; want %q, %d", a.Form, a.GPU, c.form, c.gpu)
			}
			if got := a.figures_(); got != c.fig {
				t.Errorf("figures (req, capacity, free, allocated, reserved, reserved_unallocated, this, others)\n got %v\nwant %v", got, c.fig)
			}
			if !slices.Equal(a.Processes, c.procs) {
				t.Errorf("processes = %v, want %v", a.Processes, c.procs)
			}
			if a.Shape != c.shape || a.DType != c.dtype {
				t.Errorf("shape, dtype = %q, %q; want %q, %q", a.Shape, a.DType, c.shape, c.dtype)
			}
			if a.Verdict != c.verdict {
				t.Errorf("verdict = %s, want %s (reason: %s)", a.Verdict, c.verdict, a.Reason)
			}
			if a.Reason != c.reason {
				t.Errorf("reason\n got %q\nwant %q", a.Reason, c.reason)
			}
			if len(a.Advice) == 0 {
				t.Fatalf("no advice")
			}
			if a.Advice[0].Text != c.advice {
				t.Errorf("first advice\n got %q\nwant %q", a.Advice[0].Text, c.advice)
			}
		})
	}
}

// fragCase is a real fragmentation message (see cases) for the version tests.
const fragText = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 138.00 MiB.\nGPU 0 has a total capacty of 15.90 GiB of which 8.44 MiB is free.\nProcess 1246069 has 577.00 MiB memory in use. Including non-PyTorch memory,\nthis process has 15.32 GiB memory in use. Of the allocated memory\n14.12 GiB is allocated by PyTorch, and 410.41 MiB is reserved\nby PyTorch but unallocated."

func TestAllocatorAdviceByVersion(t *testing.T) {
	const lead = "410.41 MiB is reserved but unallocated, at least the 138.00 MiB asked: "
	for _, tt := range []struct {
		torch, want string
		not         []string
	}{
		{"2.0.1", lead + "expandable segments need PyTorch 2.1, so limit block splitting instead: export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128. Requests of 128 MiB or more then take whole cached blocks that no smaller tensor may split, so blocks sized for this 138.00 MiB request stay whole and can be reused or returned to the driver; keep the value at or below the request, or the request is still served by splitting blocks.",
			[]string{"expandable_segments:True", "PYTORCH_ALLOC_CONF="}},
		{"2.4.0+cu121", lead + "enable expandable segments before Python starts: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch 2.1 or newer; not available on Windows builds).",
			[]string{"max_split_size_mb", "PYTORCH_ALLOC_CONF"}},
		{"", lead + "enable expandable segments before Python starts: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch 2.1 or newer; not available on Windows builds).",
			[]string{"max_split_size_mb", "PYTORCH_ALLOC_CONF"}},
		{"not-a-version", lead + "enable expandable segments before Python starts: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch 2.1 or newer; not available on Windows builds).",
			nil},
		{"2.9.0", lead + "enable expandable segments before Python starts with the older variable: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True. On 2.9.x the new name PYTORCH_ALLOC_CONF was reported to be ignored for this setting on CUDA (2.9.1, pytorch issue 183387); the old name works and prints a deprecation warning.",
			[]string{"PYTORCH_ALLOC_CONF=", "max_split_size_mb"}},
		{"2.9.1+cu128", lead + "enable expandable segments before Python starts with the older variable: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True. On 2.9.x the new name PYTORCH_ALLOC_CONF was reported to be ignored for this setting on CUDA (2.9.1, pytorch issue 183387); the old name works and prints a deprecation warning.",
			nil},
		{"2.10.0", lead + "enable expandable segments before Python starts: export PYTORCH_ALLOC_CONF=expandable_segments:True (PYTORCH_CUDA_ALLOC_CONF is still read as its deprecated alias; not available on Windows builds).",
			[]string{"PYTORCH_CUDA_ALLOC_CONF="}},
		{"1.8.1", lead + "PyTorch 1.8.1 has no allocator setting against fragmentation (PYTORCH_CUDA_ALLOC_CONF arrived in 1.10, expandable_segments in 2.1): upgrade, or lower the peak memory of a step.",
			[]string{"PYTORCH_CUDA_ALLOC_CONF=", "max_split_size_mb"}},
	} {
		a := Analyze(fragText, tt.torch)
		if a == nil || a.Verdict != Fragmentation {
			t.Fatalf("torch %q: analysis %+v, want a fragmentation verdict", tt.torch, a)
		}
		got := a.Advice[0]
		if got.Text != tt.want {
			t.Errorf("torch %q: first advice\n got %q\nwant %q", tt.torch, got.Text, tt.want)
		}
		for _, n := range tt.not {
			if strings.Contains(got.Text, n) || strings.Contains(got.Zh, n) {
				t.Errorf("torch %q: first advice names %q: %s", tt.torch, n, got.Text)
			}
		}
	}
}

func TestAllocatorAdviceHIP(t *testing.T) {
	// Synthetic: a ROCm fragmentation message.
	text := "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 15.98 GiB of which 0 bytes is free. Of the allocated memory 14.00 GiB is allocated by PyTorch, and 1.50 GiB is reserved by PyTorch but unallocated."
	for torch, v := range map[string]string{"": "PYTORCH_HIP_ALLOC_CONF", "2.4.1+rocm6.1": "PYTORCH_HIP_ALLOC_CONF", "2.10.0+rocm7.0": "PYTORCH_ALLOC_CONF"} {
		a := Analyze(text, torch)
		if a == nil || a.Verdict != Fragmentation {
			t.Fatalf("torch %q: analysis %+v, want a fragmentation verdict", torch, a)
		}
		if want := "export " + v + "=expandable_segments:True."; !strings.Contains(a.Advice[0].Text, want) {
			t.Errorf("torch %q: first advice %q does not contain %q", torch, a.Advice[0].Text, want)
		}
	}
}

func TestMaxSplitMiB(t *testing.T) {
	for _, tt := range []struct{ req, want int64 }{
		{20 << 20, 128}, {127 << 20, 128}, {138 << 20, 128}, {256 << 20, 256},
		{512 << 20, 512}, {1825361101 /* 1.70 GiB */, 1024}, {11521249772 /* 10.73 GiB */, 8192},
	} {
		if got := maxSplitMiB(tt.req); got != tt.want {
			t.Errorf("maxSplitMiB(%d) = %d, want %d", tt.req, got, tt.want)
		}
	}
}

func TestNotOOM(t *testing.T) {
	for _, text := range []string{
		"",
		"step 1200 | loss 2.314 | allocated 20.81 GiB | reserved 22.00 GiB",
		"RuntimeError: CUDA error: an illegal memory access was encountered",
		"RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
		"| GPU reserved memory   |   12420 MB |   12420 MB |   16924 MB |    4504 MB |",
		"We hit CUDA out of memory. Then we lowered the batch size.",
		// ika-rwth-aachen/Point-Cloud-Compression#2: a BFC warning, not a failure.
		"2023-11-06 13:58:30.645317: W tensorflow/core/common_runtime/bfc_allocator.cc:271] Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.16GiB with freed_by_count=0. The caller indicates that this is not a failure, but may mean that there could be performance gains if more memory were available.",
		// Host memory, not a GPU.
		"OOM when allocating tensor with shape[22436962,512] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu",
		// A TPU compile error, not a GPU allocation.
		"RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 49.34G of 32.00G hbm.",
		// A BFC dump without a failed request.
		"Stats: \nLimit:                  9955036364\nInUse:                  4319733760\n",
	} {
		if a := Analyze(text, ""); a != nil {
			t.Errorf("Analyze(%q) = %+v, want nil", text, a)
		}
	}
}

func TestGarbageDoesNotPanic(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	random := make([]byte, 1<<20)
	r.Read(random)
	pieces := []string{"CUDA out of memory. ", "Tried to allocate ", "99999999999999999999.99 GiB", ". GPU ",
		"4294967296", " has a total capacity of ", " of which ", " is free. ", "Process ", " has ",
		"memory in use. ", "Of the allocated memory ", "(GPU 0; ", "shape[", "99999999999,99999999999,", "]", " and type ",
		"float", " on /device:GPU:", "Limit: ", "InUse: ", "(rounded to ", "Failed to allocate request for ",
		"(99999999999999999999B)", "Out of memory while trying to allocate ", "bytes", "\n", ";", ")", "\xff\xfe"}
	var b strings.Builder
	for b.Len() < 1<<20 {
		b.WriteString(pieces[r.Intn(len(pieces))])
	}
	real := cases[0].text
	for _, text := range []string{
		string(random),
		b.String(),
		strings.Repeat("CUDA out of memory. Tried to allocate ", 30000),
		strings.Repeat("Process 1 has 1.00 GiB memory in use. ", 30000),
		strings.Repeat("x", 1<<20) + real,
		real[:len(real)/2],
	} {
		a := Analyze(text, "2.4.0")
		if a != nil {
			_ = a.Facts()
			if _, err := json.Marshal(a); err != nil {
				t.Errorf("json: %v", err)
			}
		}
	}
	// A message at the end of a 1 MB log is still found.
	if a := Analyze(strings.Repeat("x", 1<<20)+"\n"+real, ""); a == nil || a.Requested != 2147483648 {
		t.Errorf("message after 1 MB of text: %+v", a)
	}
	// Overflowing shapes and sizes leave the figure unknown.
	a := Analyze("OOM when allocating tensor with shape[99999999999,99999999999,99999999999] and type float on /device:GPU:0 by allocator GPU_0_bfc", "")
	if a == nil || a.Requested != -1 || a.Verdict != Unknown {
		t.Errorf("overflowing shape: %+v", a)
	}
}

func TestFacts(t *testing.T) {
	a := Analyze(cases[0].text, "")
	want := map[string]int64{
		"requested": 2147483648, "total_capacity": 84986665370, "free": 1095216660,
		"allocated": 59270548685, "reserved": 60666413056, "reserved_unallocated": 1395864371,
		"this_process": 62395137393, "other_processes": 21474836480, "gpu": 0,
	}
	if got := a.Facts(); !maps.Equal(got, want) {
		t.Errorf("Facts = %v\nwant %v", got, want)
	}
	b := Analyze("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 6291456 bytes.", "")
	if got := b.Facts(); !maps.Equal(got, map[string]int64{"requested": 6291456}) {
		t.Errorf("XLA Facts = %v", got)
	}
	var none *Analysis
	if got := none.Facts(); len(got) != 0 {
		t.Errorf("nil Facts = %v", got)
	}
}

func TestJSON(t *testing.T) {
	data, err := json.Marshal(Analyze(cases[0].text, ""))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"form", "gpu", "requested", "capacity", "free", "allocated", "reserved",
		"reserved_unallocated", "this_process", "other_processes", "processes", "verdict", "reason", "reason_zh", "advice"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, data)
		}
	}
	if m["verdict"] != "other_process" || m["requested"] != float64(2147483648) {
		t.Errorf("JSON verdict/requested: %v %v", m["verdict"], m["requested"])
	}
	data, _ = json.Marshal(Analyze("RuntimeError: CUDA error: out of memory", ""))
	if !strings.Contains(string(data), `"advice":[{`) || strings.Contains(string(data), `"processes"`) {
		t.Errorf("JSON of a bare CUDA error: %s", data)
	}
}

// allAnalyses returns the analyses of every case under several versions, for
// the checks on their prose.
func allAnalyses() []*Analysis {
	var out []*Analysis
	for _, c := range cases {
		for _, v := range []string{c.torch, "", "1.8.1", "2.0.1", "2.4.0+cu121", "2.9.0", "2.10.0"} {
			out = append(out, Analyze(c.text, v))
		}
	}
	return out
}

var sizeTokenRE = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)? (?:B|KiB|MiB|GiB|TiB)\b`)

// TestChineseCarriesTheFigures checks that every figure of an English text is
// in its Chinese text, and that reasons are one sentence.
func TestChineseCarriesTheFigures(t *testing.T) {
	for _, a := range allAnalyses() {
		pairs := [][2]string{{a.Reason, a.ReasonZh}}
		for _, adv := range a.Advice {
			pairs = append(pairs, [2]string{adv.Text, adv.Zh})
		}
		for _, p := range pairs {
			if p[0] == "" || p[1] == "" {
				t.Errorf("%s/%s: empty text: %q / %q", a.Form, a.Verdict, p[0], p[1])
			}
			for _, tok := range sizeTokenRE.FindAllString(p[0], -1) {
				if !strings.Contains(p[1], tok) {
					t.Errorf("%s/%s: %q is not in the Chinese text\n en: %s\n zh: %s", a.Form, a.Verdict, tok, p[0], p[1])
				}
			}
		}
		if !strings.HasSuffix(a.Reason, ".") || strings.Contains(strings.TrimSuffix(a.Reason, "."), ". ") {
			t.Errorf("reason is not one sentence: %q", a.Reason)
		}
		if !strings.HasSuffix(a.ReasonZh, "。") || strings.Count(a.ReasonZh, "。") != 1 {
			t.Errorf("Chinese reason is not one sentence: %q", a.ReasonZh)
		}
	}
}

// TestNamesAreInTheRegistry checks that every variable, API and allocator
// setting the reasons and advice name is recorded in knowledge/_registry
// (and not recorded as nonexistent), finding names as kb lint does.
func TestNamesAreInTheRegistry(t *testing.T) {
	reg, err := kb.ReadRegistryFS(knowledge.FS, ".", "knowledge/")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range allAnalyses() {
		texts := []string{a.Reason, a.ReasonZh}
		for _, adv := range a.Advice {
			texts = append(texts, adv.Text, adv.Zh)
		}
		for _, s := range texts {
			for _, n := range kb.NamesIn(s) {
				if seen[n] {
					continue
				}
				seen[n] = true
				rec, ok := reg.Lookup(n)
				switch {
				case !ok:
					t.Errorf("%q is not in the registry (in %q)", n, s)
				case rec.Kind == "nonexistent":
					t.Errorf("%q is recorded as nonexistent (in %q)", n, s)
				}
			}
		}
	}
	for _, must := range []string{"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "expandable_segments", "max_split_size_mb",
		"CUDA_VISIBLE_DEVICES", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_PREALLOCATE", "TF_GPU_ALLOCATOR",
		"torch.utils.checkpoint.checkpoint", "torch.cuda.mem_get_info"} {
		if !seen[must] {
			t.Errorf("no advice names %q: the name check does not cover it", must)
		}
	}
}

// TestWholeLog reads the bundled 4-rank log as one text: the rank that ran
// out of memory, with this process listed as "Process 139832" (a PID
// namespace) and fragmentation as the cause.
func TestWholeLog(t *testing.T) {
	data, err := os.ReadFile("../examples/ddp-oom.log")
	if err != nil {
		t.Skip(err)
	}
	a := Analyze(string(data), "2.4.0")
	if a == nil {
		t.Fatal("no analysis")
	}
	want := figures{4294967296, 84986665370, 3017214525, 76171244995, 76171244995 + 5003636900, 5003636900, -1, 0}
	if a.GPU != 2 || a.figures_() != want || a.Verdict != Fragmentation {
		t.Errorf("gpu %d, figures %v, verdict %s; want 2, %v, fragmentation", a.GPU, a.figures_(), a.Verdict, want)
	}
	if wantZh := "GPU 2（79.15 GiB）仅剩 2.81 GiB 空闲，而 PyTorch 保留但未分配的显存有 4.66 GiB，不少于请求的 4.00 GiB：缓存被切成了放不下这次请求的碎块（碎片化）。"; a.ReasonZh != wantZh {
		t.Errorf("reason_zh\n got %q\nwant %q", a.ReasonZh, wantZh)
	}
}

// PyTorch OOMs point to gpudx mem; other frameworks' and a request larger
// than the card do not, since a snapshot cannot change their answer.
func TestSnapshotAdvice(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 2 has a total capacity of 79.15 GiB of which 2.81 GiB is free. Process 139832 has 76.32 GiB memory in use. Of the allocated memory 70.94 GiB is allocated by PyTorch, and 4.66 GiB is reserved by PyTorch but unallocated.", true},
		{"RuntimeError: CUDA out of memory. Tried to allocate 1.20 GiB (GPU 0; 8.00 GiB total capacity; 6.79 GiB already allocated; 0 bytes free; 6.99 GiB reserved in total by PyTorch)", true},
		{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 120.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 70.00 GiB is free. Of the allocated memory 1.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.", false},
		{"ResourceExhaustedError: OOM when allocating tensor with shape[8,1024,1024] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc", false},
	}
	for _, tt := range tests {
		a := Analyze(tt.text, "2.4.0")
		got := false
		for _, ad := range a.Advice {
			if strings.Contains(ad.Text, "gpudx mem oom.pickle") && strings.Contains(ad.Zh, "gpudx mem oom.pickle") {
				got = true
			}
		}
		if got != tt.want {
			t.Errorf("%.60s…: snapshot advice %v, want %v (verdict %s)", tt.text, got, tt.want, a.Verdict)
		}
	}
}

// The case, in the form PyTorch prints inside a container (no
// "this process" clause): the only listed process holds at least what
// PyTorch reserved, so it is this process; the analysis says which and
// why, and the other-process figure (0 B) agrees with it.
func TestSelfProcessIsNamed(t *testing.T) {
	msg := "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.53 GiB. GPU 0 has a total capacity of 39.39 GiB of which 610.19 MiB is free. " +
		"Process 22811 has 38.58 GiB memory in use. Of the allocated memory 36.02 GiB is allocated by PyTorch, and 1.97 GiB is reserved by PyTorch but unallocated."
	a := Analyze(msg, "")
	if a == nil || a.SelfPID != 22811 || a.OtherProcesses != 0 || len(a.Processes) != 1 || !a.Processes[0].This {
		t.Fatalf("analysis %+v", a)
	}
	want := "Process 22811 has 38.58 GiB, the smallest listed process holding at least what PyTorch reserved (37.99 GiB): it is taken to be this process, listed by PID because PyTorch runs in a PID namespace (a container); it is not counted among other processes"
	if a.SelfWhy != want || a.SelfWhyZh == "" {
		t.Errorf("self why\n got %q\nwant %q", a.SelfWhy, want)
	}
	// With the "this process" clause, the equal figure names it.
	both := strings.Replace(msg, "memory in use. Of", "memory in use. Including non-PyTorch memory, this process has 38.58 GiB memory in use. Of", 1)
	if b := Analyze(both, ""); b == nil || b.SelfPID != 22811 || !strings.HasPrefix(b.SelfWhy, "Process 22811 has 38.58 GiB, the same as 'this process has 38.58 GiB'") {
		t.Errorf("with this process: %+v", b)
	}
	// A process that holds less than PyTorch reserved is another one.
	other := strings.Replace(msg, "Process 22811 has 38.58 GiB", "Process 4242 has 20.00 GiB", 1)
	if b := Analyze(other, ""); b == nil || b.SelfPID != -1 || b.SelfWhy != "" || b.OtherProcesses != 20<<30 {
		t.Errorf("another process: %+v", b)
	}
}
