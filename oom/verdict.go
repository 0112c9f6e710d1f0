package oom

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/gpudx/gpudx/facts"
)

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
	// outsideFloor is the least memory outside the allocator that counts as
	// held by something else rather than by the CUDA context alone.
	outsideFloor = gib
)

// fb formats a byte count for people: "2.00 GiB".
func fb(n int64) string { return facts.FormatBytes(float64(n)) }

// gpuLabel names the GPU in a sentence: "GPU 0", or "the GPU" ("该 GPU").
func (a *Analysis) gpuLabel() (en, zh string) {
	if a.GPU >= 0 {
		s := fmt.Sprintf("GPU %d", a.GPU)
		return s, s
	}
	return "the GPU", "该 GPU"
}

// capitalize upper-cases the first letter of an English sentence.
func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// pytorchLike reports whether the figures come from PyTorch's caching
// allocator.
func (a *Analysis) pytorchLike() bool {
	return a.Form == FormPyTorch || a.Form == FormPyTorchLegacy
}

// bfc reports whether the capacity is a BFC allocator's limit (TensorFlow,
// XLA) rather than the card's size.
func (a *Analysis) bfc() bool { return a.Form == FormTensorFlow || a.Form == FormXLA }

// poolFree is the part of a BFC allocator's pool not in use (Limit - InUse),
// or -1.
func (a *Analysis) poolFree() int64 {
	if !a.bfc() || !known(a.Capacity, a.Allocated) || a.Allocated > a.Capacity {
		return -1
	}
	return a.Capacity - a.Allocated
}

// outside is the memory on the GPU outside PyTorch's allocator: capacity -
// free - reserved (other processes, the CUDA context, other libraries), or
// -1.
func (a *Analysis) outside() int64 {
	if !a.pytorchLike() || !known(a.Capacity, a.Free, a.Reserved) {
		return -1
	}
	if o := a.Capacity - a.Free - a.Reserved; o > 0 {
		return o
	}
	return 0
}

// usesOutside reports whether the OtherProcess verdict rests on the memory
// outside the allocator rather than on listed processes.
func (a *Analysis) usesOutside() bool {
	return a.Verdict == OtherProcess && a.OtherProcesses < 0
}

// available is the free memory the message reports: the driver's free
// figure, or for a BFC allocator its limit minus what is in use; -1 when
// unknown.
func (a *Analysis) available() int64 {
	if a.bfc() {
		return a.poolFree()
	}
	return a.Free
}

// judge sets the verdict by the rules in the package comment.
func (a *Analysis) judge() {
	req := a.Requested
	switch {
	case req > 0 && a.Capacity >= 0 && req > a.Capacity:
		a.Verdict = ExceedsCard
	case req > 0 && a.ReservedUnallocated >= req:
		a.Verdict = Fragmentation
	case req > 0 && a.available() >= req:
		a.Verdict = Unknown // the figures do not explain the failure
	case req > 0 && a.OtherProcesses > 0 && a.Free >= 0 && a.Free+a.OtherProcesses >= req:
		a.Verdict = OtherProcess
	case req > 0 && a.OtherProcesses < 0 && a.outside() >= outsideFloor && a.Free >= 0 && a.Free+a.outside() >= req:
		a.Verdict = OtherProcess
	case req > 0 && (a.Allocated >= 0 || known(a.Capacity, a.Free)):
		a.Verdict = LiveTensors
	default:
		a.Verdict = Unknown
	}
}

// explain writes the reason and the advice for the verdict.
func (a *Analysis) explain(torch string) {
	switch a.Verdict {
	case ExceedsCard:
		a.explainExceeds()
	case Fragmentation:
		a.explainFragmentation(torch)
	case OtherProcess:
		a.explainOther()
	case LiveTensors:
		a.explainLive()
	default:
		a.explainUnknown()
	}
	// Fragmentation and live tensors are told apart for certain, and the
	// code that holds the memory is named, only by a snapshot.
	if a.pytorchLike() && a.Verdict != ExceedsCard {
		a.advise("To see which code holds the memory and how the free memory is split, record a snapshot: call torch.cuda.memory._record_memory_history(max_entries=100000) before training and torch.cuda.memory._dump_snapshot(\"oom.pickle\") in an except torch.cuda.OutOfMemoryError handler, then run gpudx mem oom.pickle.",
			"要查看哪段代码占着显存、空闲显存如何被切分，请记录内存快照：训练前调用 torch.cuda.memory._record_memory_history(max_entries=100000)，在 except torch.cuda.OutOfMemoryError 处理中调用 torch.cuda.memory._dump_snapshot(\"oom.pickle\")，然后运行 gpudx mem oom.pickle。")
	}
	if a.Advice == nil {
		a.Advice = []Advice{}
	}
	a.ReasonZh = tidyZh(a.ReasonZh)
	for i := range a.Advice {
		a.Advice[i].Zh = tidyZh(a.Advice[i].Zh)
	}
}

var (
	hanThenLatinRE = regexp.MustCompile(`(\p{Han})([A-Za-z0-9])`)
	latinThenHanRE = regexp.MustCompile(`([A-Za-z0-9])(\p{Han})`)
)

// tidyZh spaces Chinese text the usual way: a space between a Chinese
// character and a Latin letter or digit ("超过了GPU" becomes "超过了 GPU"),
// none before "该 GPU" ("在 该 GPU 上" becomes "在该 GPU 上").
func tidyZh(s string) string {
	s = hanThenLatinRE.ReplaceAllString(s, "$1 $2")
	s = latinThenHanRE.ReplaceAllString(s, "$1 $2")
	return strings.ReplaceAll(s, " 该 GPU", "该 GPU")
}

func (a *Analysis) advise(en, zh string) { a.Advice = append(a.Advice, Advice{en, zh}) }

// cardPhrase describes the capacity in a sentence: "GPU 0's 12.00 GiB", or
// for a BFC limit "the 9.27 GiB the allocator may use on GPU 0".
func (a *Analysis) cardPhrase() (en, zh string) {
	g, gz := a.gpuLabel()
	if a.bfc() {
		return fmt.Sprintf("the %s the allocator may use on %s", fb(a.Capacity), g),
			fmt.Sprintf("分配器在 %s 上可用的 %s", gz, fb(a.Capacity))
	}
	if a.GPU < 0 {
		return "the GPU's " + fb(a.Capacity), "该 GPU 的总容量 " + fb(a.Capacity)
	}
	return fmt.Sprintf("%s's %s", g, fb(a.Capacity)), fmt.Sprintf("%s 的总容量 %s", gz, fb(a.Capacity))
}

func (a *Analysis) explainExceeds() {
	card, cardZh := a.cardPhrase()
	req := fb(a.Requested)
	g, gz := a.gpuLabel()
	if a.bfc() {
		a.Reason = fmt.Sprintf("The %s request is larger than %s (its BFC limit).", req, card)
		a.ReasonZh = fmt.Sprintf("请求的 %s 大于%s（BFC 上限）。", req, cardZh)
	} else {
		a.Reason = fmt.Sprintf("The %s request is larger than %s total capacity of %s.", req, possessive(g), fb(a.Capacity))
		a.ReasonZh = fmt.Sprintf("请求的 %s 大于 %s 的总容量 %s。", req, gz, fb(a.Capacity))
	}
	a.advise(
		fmt.Sprintf("The request alone (%s) is larger than %s: no allocator setting helps; make the tensor smaller (batch, sequence length, resolution) or shard the model across GPUs.", req, card),
		fmt.Sprintf("单次请求（%s）就超过了%s：任何分配器设置都无济于事；请缩小张量（批大小、序列长度、分辨率）或把模型切分到多张 GPU 上。", req, cardZh))
	if s, z := a.shapeAdvice(a.Capacity); s != "" {
		a.advise(s, z)
		return
	}
	ratio := float64(a.Requested) / float64(max(a.Capacity, 1))
	k := (a.Requested + a.Capacity - 1) / max(a.Capacity, 1)
	a.advise(
		fmt.Sprintf("It is %.2f times the card, so it must shrink by more than that (the model and other tensors need room too): for example divide the batch or the sequence length by %d or more, and look for an unintended broadcast or a dimension that was never split.", ratio, k),
		fmt.Sprintf("它是整卡容量的 %.2f 倍，因此至少要缩小这么多（模型和其他张量也需要空间）：例如把批大小或序列长度除以 %d 或更多，并检查是否有意外的广播或没有切分的维度。", ratio, k))
}

// possessive writes "GPU 0's" or "the GPU's".
func possessive(label string) string { return label + "'s" }

// shapeAdvice, for a TensorFlow tensor with a known shape, says how far its
// first dimension must shrink for the tensor to fit in room bytes.
func (a *Analysis) shapeAdvice(room int64) (en, zh string) {
	dims, ok := parseShape(strings.Trim(a.Shape, "[]"))
	if a.Shape == "" || !ok || len(dims) == 0 || dims[0] < 2 || a.Requested <= 0 || room < 0 {
		return "", ""
	}
	d0 := dims[0]
	slice := a.Requested / d0
	fit := int64(0)
	if slice > 0 {
		fit = room / slice
	}
	if fit >= d0 {
		return "", ""
	}
	if fit < 1 {
		return fmt.Sprintf("One slice of the %s %s tensor along its first dimension is already %s, more than %s: shrink the other dimensions.", a.Shape, a.DType, fb(slice), fb(room)),
			fmt.Sprintf("%s %s 张量沿第一维的一个切片就有 %s，超过 %s：需要缩小其他维度。", a.Shape, a.DType, fb(slice), fb(room))
	}
	return fmt.Sprintf("The %s %s tensor is %s; with its first dimension at %d instead of %d it would be %s and fit in %s.", a.Shape, a.DType, fb(a.Requested), fit, d0, fb(fit*slice), fb(room)),
		fmt.Sprintf("%s %s 张量为 %s；把第一维从 %d 降到 %d，它就是 %s，能放进 %s。", a.Shape, a.DType, fb(a.Requested), d0, fit, fb(fit*slice), fb(room))
}

// figures is the opening clause "GPU 0 (79.15 GiB) had 1.02 GiB free" when
// capacity and free are known.
func (a *Analysis) figures() (en, zh string, ok bool) {
	if !known(a.Capacity, a.Free) {
		return "", "", false
	}
	g, gz := a.gpuLabel()
	return fmt.Sprintf("%s (%s) had %s free", g, fb(a.Capacity), fb(a.Free)),
		fmt.Sprintf("%s（%s）仅剩 %s 空闲", gz, fb(a.Capacity), fb(a.Free)), true
}

func (a *Analysis) explainFragmentation(torch string) {
	req := fb(a.Requested)
	ru := fb(a.ReservedUnallocated)
	if f, fz, ok := a.figures(); ok {
		a.Reason = fmt.Sprintf("%s, but PyTorch held %s reserved but unallocated, at least the %s requested: its cached memory was split into pieces too small for the request (fragmentation).", f, ru, req)
		a.ReasonZh = fmt.Sprintf("%s，而 PyTorch 保留但未分配的显存有 %s，不少于请求的 %s：缓存被切成了放不下这次请求的碎块（碎片化）。", fz, ru, req)
	} else {
		a.Reason = fmt.Sprintf("PyTorch held %s reserved but unallocated, at least the %s requested: its cached memory was split into pieces too small for the request (fragmentation).", ru, req)
		a.ReasonZh = fmt.Sprintf("PyTorch 保留但未分配的显存有 %s，不少于请求的 %s：缓存被切成了放不下这次请求的碎块（碎片化）。", ru, req)
	}
	en, zh := a.allocatorAdvice(torch)
	a.advise(en, zh)
	a.adviseLowerPeak()
}

// Allocator generations, by the PyTorch release.
const (
	allocNone     = iota // before 1.10: no allocator settings
	allocMaxSplit        // 1.10 to 2.0: max_split_size_mb
	allocCUDAConf        // 2.1 to 2.8: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
	alloc29              // 2.9.x: the new name is ignored for expandable_segments on CUDA
	allocNew             // 2.10+: PYTORCH_ALLOC_CONF
)

// allocGeneration picks the allocator settings torch has. An unknown
// version counts as 2.1-2.8, unless the message's own form says the release
// is older: the parenthesised form is from before 2.1, and its "X cached"
// ending from before 1.5 (and so before 1.10's allocator settings).
func (a *Analysis) allocGeneration(torch string) int {
	at := func(v string) bool {
		c, err := facts.CompareStrings(torch, v)
		return err == nil && c >= 0
	}
	if _, err := facts.ParseVersion(torch); err != nil {
		switch {
		case a.cached:
			return allocNone
		case a.Form == FormPyTorchLegacy:
			return allocMaxSplit
		}
		return allocCUDAConf
	}
	switch {
	case at("2.10"):
		return allocNew
	case at("2.9"):
		return alloc29
	case at("2.1"):
		return allocCUDAConf
	case at("1.10"):
		return allocMaxSplit
	}
	return allocNone
}

// maxSplitMiB is the max_split_size_mb to advise for a request: the largest
// power of two (in MiB) at or below it, so that blocks of the request's size
// are never split; 128 for requests under 128 MiB.
func maxSplitMiB(req int64) int64 {
	r := req / mib
	if r < 128 {
		return 128
	}
	n := int64(128)
	for n*2 <= r {
		n *= 2
	}
	return n
}

// allocatorAdvice is the allocator setting against fragmentation for the
// installed release.
func (a *Analysis) allocatorAdvice(torch string) (en, zh string) {
	ru, req := fb(a.ReservedUnallocated), fb(a.Requested)
	lead := fmt.Sprintf("%s is reserved but unallocated, at least the %s asked", ru, req)
	leadZh := fmt.Sprintf("有 %s 被保留但未分配，不少于请求的 %s", ru, req)
	gen := a.allocGeneration(torch)
	if a.hip {
		v := "PYTORCH_HIP_ALLOC_CONF"
		if gen >= alloc29 {
			v = "PYTORCH_ALLOC_CONF"
		}
		return fmt.Sprintf("%s: enable expandable segments before Python starts: export %s=expandable_segments:True.", lead, v),
			fmt.Sprintf("%s：在启动 Python 前启用 expandable segments：export %s=expandable_segments:True。", leadZh, v)
	}
	switch gen {
	case allocNew:
		return lead + ": enable expandable segments before Python starts: export PYTORCH_ALLOC_CONF=expandable_segments:True (PYTORCH_CUDA_ALLOC_CONF is still read as its deprecated alias; not available on Windows builds).",
			leadZh + "：在启动 Python 前启用 expandable segments：export PYTORCH_ALLOC_CONF=expandable_segments:True（旧名 PYTORCH_CUDA_ALLOC_CONF 作为已弃用的别名仍然有效；Windows 版本不支持）。"
	case alloc29:
		return lead + ": enable expandable segments before Python starts with the older variable: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True. On 2.9.x the new name PYTORCH_ALLOC_CONF was reported to be ignored for this setting on CUDA (2.9.1, pytorch issue 183387); the old name works and prints a deprecation warning.",
			leadZh + "：在启动 Python 前用旧变量启用 expandable segments：export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True。据报告 2.9.x 在 CUDA 上会忽略新变量名 PYTORCH_ALLOC_CONF 的这一设置（2.9.1，pytorch issue 183387）；旧名有效，只会打印弃用警告。"
	case allocCUDAConf:
		return lead + ": enable expandable segments before Python starts: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch 2.1 or newer; not available on Windows builds).",
			leadZh + "：在启动 Python 前启用 expandable segments：export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True（需要 PyTorch 2.1 及以上；Windows 版本不支持）。"
	case allocMaxSplit:
		n := maxSplitMiB(a.Requested)
		which, whichZh := "", ""
		if torch == "" {
			which, whichZh = " (this message's form is printed by releases before 2.1; the setting needs 1.10 or newer)", "（这种消息格式出自 2.1 之前的版本；该设置需要 1.10 及以上）"
		}
		if a.Requested/mib >= 128 {
			return fmt.Sprintf("%s: expandable segments need PyTorch 2.1, so limit block splitting instead%s: export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:%d. Requests of %d MiB or more then take whole cached blocks that no smaller tensor may split, so blocks sized for this %s request stay whole and can be reused or returned to the driver; keep the value at or below the request, or the request is still served by splitting blocks.",
					lead, which, n, n, req),
				fmt.Sprintf("%s：expandable segments 需要 PyTorch 2.1，因此改为限制缓存块切分%s：export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:%d。这样 %d MiB 及以上的请求会整块使用缓存块，且这些块不会被更小的张量切分，为这次 %s 请求分配的块就能保持完整、被复用或归还驱动；该值应不大于请求大小，否则这次请求仍会靠切分缓存块来满足。",
					leadZh, whichZh, n, n, req)
		}
		return fmt.Sprintf("%s: expandable segments need PyTorch 2.1, so limit block splitting instead%s: export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:%d. Cached blocks of %d MiB or more are then never split by smaller requests such as this %s one, so they stay whole and are returned to the driver when memory runs short instead of sitting in unusable pieces.",
				lead, which, n, n, req),
			fmt.Sprintf("%s：expandable segments 需要 PyTorch 2.1，因此改为限制缓存块切分%s：export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:%d。这样 %d MiB 及以上的缓存块不会被这次 %s 这样的小请求切分，显存紧张时能整块归还驱动，而不是变成用不上的碎块。",
				leadZh, whichZh, n, n, req)
	}
	release, releaseZh := "PyTorch "+torch, "PyTorch "+torch
	if torch == "" {
		release, releaseZh = "this release (the message's 'cached' form is from before 1.5)", "这个版本（消息中的 'cached' 格式出自 1.5 之前）"
	}
	return fmt.Sprintf("%s: %s has no allocator setting against fragmentation (PYTORCH_CUDA_ALLOC_CONF arrived in 1.10, expandable_segments in 2.1): upgrade, or lower the peak memory of a step.", lead, release),
		fmt.Sprintf("%s：%s没有应对碎片化的分配器设置（PYTORCH_CUDA_ALLOC_CONF 从 1.10 起才有，expandable_segments 从 2.1 起）：请升级，或降低单步峰值显存。", leadZh, releaseZh)
}

// adviseLowerPeak adds the framework's ways to lower the peak memory of a
// step.
func (a *Analysis) adviseLowerPeak() {
	switch a.Form {
	case FormTensorFlow:
		a.advise("Lower the peak memory of a step: halve the batch (model.fit(..., batch_size=...)) and run 16-bit activations with tf.keras.mixed_precision.set_global_policy('mixed_float16').",
			"降低单步峰值显存：把批大小减半（model.fit(..., batch_size=...)），并用 tf.keras.mixed_precision.set_global_policy('mixed_float16') 以 16 位保存激活。")
	case FormXLA:
		a.advise("Lower the working set: halve the batch, recompute activations in the backward pass with jax.checkpoint, and let XLA reuse input buffers with jax.jit(train_step, donate_argnums=(0, 1)).",
			"降低工作集：把批大小减半，用 jax.checkpoint 在反向传播时重算激活，并用 jax.jit(train_step, donate_argnums=(0, 1)) 让 XLA 复用输入缓冲区。")
	default:
		a.advise("Lower the peak memory of a step: halve the micro-batch and accumulate gradients over 2 steps, recompute activations with torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False), run the forward pass under torch.autocast for 16-bit activations, and wrap evaluation in torch.no_grad().",
			"降低单步峰值显存：把 micro-batch 减半并累积 2 步梯度；用 torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False) 重算激活；在 torch.autocast 下运行前向以 16 位保存激活；评估放在 torch.no_grad() 中。")
	}
}

// processList describes the other processes, largest first, at most three:
// "process 4242 holds 20.00 GiB, process 77 holds 1.00 GiB"; n is how many
// there are.
func (a *Analysis) processList() (en, zh string, n int) {
	var others []Process
	for i, p := range a.Processes {
		if i != a.selfIndex && p.Bytes > 0 {
			others = append(others, p)
		}
	}
	sort.SliceStable(others, func(i, j int) bool { return others[i].Bytes > others[j].Bytes })
	var parts, partsZh []string
	for i, p := range others {
		if i == 3 {
			var rest int64
			for _, q := range others[3:] {
				rest += q.Bytes
			}
			parts = append(parts, fmt.Sprintf("%d more hold %s", len(others)-3, fb(rest)))
			partsZh = append(partsZh, fmt.Sprintf("另有 %d 个进程占用 %s", len(others)-3, fb(rest)))
			break
		}
		if p.PID == 0 {
			parts = append(parts, "a process whose PID the message does not show holds "+fb(p.Bytes))
			partsZh = append(partsZh, "一个未显示 PID 的进程占用 "+fb(p.Bytes))
			continue
		}
		parts = append(parts, fmt.Sprintf("process %d holds %s", p.PID, fb(p.Bytes)))
		partsZh = append(partsZh, fmt.Sprintf("进程 %d 占用 %s", p.PID, fb(p.Bytes)))
	}
	return strings.Join(parts, ", "), strings.Join(partsZh, "，"), len(others)
}

const nvidiaSMI = "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"

func (a *Analysis) explainOther() {
	req := fb(a.Requested)
	missing := fb(a.Requested - a.Free)
	f, fz, _ := a.figures()
	g, gz := a.gpuLabel()
	if a.usesOutside() {
		out := fb(a.outside())
		a.Reason = fmt.Sprintf("%s and PyTorch reserved %s; the other %s was held outside PyTorch's allocator (other processes, CUDA context, other libraries), more than the %s missing for the %s request.",
			f, fb(a.Reserved), out, missing, req)
		a.ReasonZh = fmt.Sprintf("%s，PyTorch 保留了 %s；其余 %s 被 PyTorch 分配器之外占用（其他进程、CUDA 上下文、其他库），超过这次 %s 请求所缺的 %s。",
			fz, fb(a.Reserved), out, req, missing)
		a.advise(
			fmt.Sprintf("Free at least %s on %s: %s is held outside PyTorch's allocator; find the holders with %s, stop them or move this job to another GPU (CUDA_VISIBLE_DEVICES=<idle GPU index>).", missing, g, out, nvidiaSMI),
			fmt.Sprintf("在 %s 上至少释放 %s：有 %s 被 PyTorch 分配器之外占用；用 %s 找到占用者，结束它们，或把本任务移到另一张 GPU（CUDA_VISIBLE_DEVICES=<空闲 GPU 编号>）。", gz, missing, out, nvidiaSMI))
		a.advise(
			fmt.Sprintf("If nothing else runs on %s, the %s belongs to this process outside PyTorch: JAX or TensorFlow imported in the same process preallocates most of the GPU (export XLA_PYTHON_CLIENT_PREALLOCATE=false, or TF_FORCE_GPU_ALLOW_GROWTH=true), or a library holds large workspaces.", g, out),
			fmt.Sprintf("如果 %s 上没有其他任务，这 %s 属于本进程中 PyTorch 之外的部分：同一进程里导入的 JAX 或 TensorFlow 会预占大部分显存（export XLA_PYTHON_CLIENT_PREALLOCATE=false，或 TF_FORCE_GPU_ALLOW_GROWTH=true），或某个库占用了大块工作区。", gz, out))
		return
	}
	others := fb(a.OtherProcesses)
	a.Reason = fmt.Sprintf("%s; processes other than this one held %s, more than the %s missing for the %s request.", f, others, missing, req)
	a.ReasonZh = fmt.Sprintf("%s；其他进程占用 %s，超过这次 %s 请求所缺的 %s。", fz, others, req, missing)
	list, listZh, n := a.processList()
	it, itZh := "it", "它"
	if n > 1 {
		it, itZh = "them", "它们"
	}
	a.advise(
		fmt.Sprintf("Free at least %s on %s: %s; stop %s or move this job to another GPU (CUDA_VISIBLE_DEVICES=<idle GPU index>).", missing, g, list, it),
		fmt.Sprintf("在 %s 上至少释放 %s：%s；结束%s，或把本任务移到另一张 GPU（CUDA_VISIBLE_DEVICES=<空闲 GPU 编号>）。", gz, missing, listZh, itZh))
	a.advise(
		fmt.Sprintf("See what those processes are with %s (stale runs, notebook kernels, DataLoader workers that touched CUDA); in a container the PIDs differ from the host's.", nvidiaSMI),
		fmt.Sprintf("用 %s 查看这些进程是什么（残留任务、notebook 内核、碰过 CUDA 的 DataLoader worker）；容器内看到的 PID 与宿主机不同。", nvidiaSMI))
}

func (a *Analysis) explainLive() {
	req := fb(a.Requested)
	g, gz := a.gpuLabel()
	if a.bfc() {
		a.explainLiveBFC()
		return
	}
	f, fz, haveFigures := a.figures()
	var en, zh []string
	switch {
	case haveFigures && a.Allocated >= 0:
		en = append(en, fmt.Sprintf("%s and PyTorch's live tensors held %s", f, fb(a.Allocated)))
		zh = append(zh, fmt.Sprintf("%s，PyTorch 的存活张量占用 %s", fz, fb(a.Allocated)))
	case haveFigures:
		en, zh = append(en, f), append(zh, fz)
	default:
		en = append(en, fmt.Sprintf("PyTorch's live tensors held %s on %s", fb(a.Allocated), g))
		zh = append(zh, fmt.Sprintf("PyTorch 的存活张量在 %s 上占用 %s", gz, fb(a.Allocated)))
	}
	if a.OtherProcesses > 0 {
		en = append(en, fmt.Sprintf("other processes held %s", fb(a.OtherProcesses)))
		zh = append(zh, fmt.Sprintf("其他进程占用 %s", fb(a.OtherProcesses)))
	}
	if a.allowed >= 0 {
		en = append(en, fmt.Sprintf("a memory fraction capped this process at %s", fb(a.allowed)))
		zh = append(zh, fmt.Sprintf("显存比例上限把本进程限制在 %s", fb(a.allowed)))
	}
	tail, tailZh := "", ""
	if a.Requested > 0 {
		ru := "no"
		ruZh := "没有"
		if a.ReservedUnallocated >= 0 {
			ru, ruZh = "only "+fb(a.ReservedUnallocated), "只有 "+fb(a.ReservedUnallocated)
		}
		tail = fmt.Sprintf(", and with %s reserved but unallocated the %s request could not fit", ru, req)
		tailZh = fmt.Sprintf("，保留未分配的显存%s，这次 %s 请求放不下", ruZh, req)
		if a.ReservedUnallocated < 0 {
			tail = fmt.Sprintf(", and the %s request could not fit", req)
			tailZh = fmt.Sprintf("，这次 %s 请求放不下", req)
		}
	}
	a.Reason = capitalize(strings.Join(en, "; ")) + tail + "."
	a.ReasonZh = strings.Join(zh, "；") + tailZh + "。"

	if a.Requested > 0 {
		free := max(a.Free, 0)
		z := a.Requested - free - max(a.ReservedUnallocated, 0)
		if z <= 0 {
			z = a.Requested - free
		}
		have, haveZh := fmt.Sprintf("%s free", fb(free)), fmt.Sprintf("%s 空闲", fb(free))
		if a.ReservedUnallocated >= 0 {
			have += fmt.Sprintf(" and %s reserved but unallocated", fb(a.ReservedUnallocated))
			haveZh += fmt.Sprintf("和 %s 保留未分配", fb(a.ReservedUnallocated))
		}
		held, heldZh := "", ""
		if a.Allocated >= 0 {
			held, heldZh = fmt.Sprintf("live tensors hold %s, and ", fb(a.Allocated)), fmt.Sprintf("存活张量占用 %s，", fb(a.Allocated))
		}
		if heldZh != "" {
			heldZh += "而"
		}
		a.advise(
			fmt.Sprintf("Free at least %s on %s: %sthe %s request finds only %s.", fb(z), g, held, req, have),
			fmt.Sprintf("在 %s 上至少腾出 %s：%s这次 %s 请求只找到 %s。", gz, fb(z), heldZh, req, haveZh))
	}
	a.adviseLowerPeak()
}

// explainLiveBFC writes the LiveTensors reason and advice from a BFC
// allocator's limit and in-use figures (TensorFlow, XLA).
func (a *Analysis) explainLiveBFC() {
	g, gz := a.gpuLabel()
	req := fb(a.Requested)
	if a.Requested < 0 {
		req = "a tensor's"
	}
	if known(a.Capacity, a.Allocated) {
		pf := max(a.Capacity-a.Allocated, 0)
		a.Reason = fmt.Sprintf("The allocator on %s had %s of its %s limit in use, leaving %s for the %s request.", g, fb(a.Allocated), fb(a.Capacity), fb(pf), req)
		a.ReasonZh = fmt.Sprintf("%s 上的分配器已用 %s（上限 %s），只剩 %s，放不下这次 %s 请求。", gz, fb(a.Allocated), fb(a.Capacity), fb(pf), req)
		if a.Requested > 0 {
			z := a.Requested - pf
			a.advise(
				fmt.Sprintf("Free at least %s on %s: tensors in use hold %s of the allocator's %s, and the %s request finds only %s.", fb(z), g, fb(a.Allocated), fb(a.Capacity), req, fb(pf)),
				fmt.Sprintf("在 %s 上至少腾出 %s：使用中的张量占了分配器 %s 中的 %s，这次 %s 请求只找到 %s。", gz, fb(z), fb(a.Capacity), fb(a.Allocated), req, fb(pf)))
			if s, zh := a.shapeAdvice(pf); s != "" {
				a.advise(s, zh)
			}
		}
	} else {
		a.Reason = fmt.Sprintf("Tensors in use held %s on %s, and the %s request could not fit.", fb(a.Allocated), g, req)
		a.ReasonZh = fmt.Sprintf("%s 上使用中的张量占用 %s，这次 %s 请求放不下。", gz, fb(a.Allocated), req)
	}
	a.adviseLowerPeak()
}

func (a *Analysis) explainUnknown() {
	g, gz := a.gpuLabel()
	req := fb(a.Requested)
	getFigures := fmt.Sprintf("Get the figures: run %s while the job runs to see what each process holds, and in PyTorch print torch.cuda.mem_get_info() (free and total bytes) right before the failing step.", nvidiaSMI)
	getFiguresZh := fmt.Sprintf("先拿到数字：任务运行时执行 %s 查看各进程占用；在 PyTorch 中于出错步骤之前打印 torch.cuda.mem_get_info()（空闲和总字节数）。", nvidiaSMI)
	switch {
	case a.Requested > 0 && a.bfc() && a.poolFree() >= a.Requested:
		pf := fb(a.poolFree())
		a.Reason = fmt.Sprintf("The allocator on %s had %s of its %s limit in use, leaving %s, at least the %s requested, yet the allocation failed: the unused part was in pieces too small, or (with memory growth on) the driver could not extend the pool.",
			g, fb(a.Allocated), fb(a.Capacity), pf, req)
		a.ReasonZh = fmt.Sprintf("%s 上的分配器已用 %s（上限 %s），还剩 %s，不少于请求的 %s，分配却失败了：剩余部分被切成了放不下的碎块，或者（开启显存增长时）驱动无法再扩大内存池。",
			gz, fb(a.Allocated), fb(a.Capacity), pf, req)
		if a.Form == FormTensorFlow {
			a.advise(
				fmt.Sprintf("%s of the pool was unused, at least the %s asked: switch TensorFlow to CUDA's stream-ordered allocator, which has no pool of its own to fragment: export TF_GPU_ALLOCATOR=cuda_malloc_async before TensorFlow starts.", pf, req),
				fmt.Sprintf("内存池中有 %s 未使用，不少于请求的 %s：在 TensorFlow 启动前 export TF_GPU_ALLOCATOR=cuda_malloc_async，改用 CUDA 的流序分配器，它没有会被切碎的内存池。", pf, req))
		} else {
			a.advise(
				fmt.Sprintf("%s of the pool was unused, at least the %s asked: to rule fragmentation out, make JAX allocate exactly what each buffer needs and free it right away: export XLA_PYTHON_CLIENT_ALLOCATOR=platform (slower).", pf, req),
				fmt.Sprintf("内存池中有 %s 未使用，不少于请求的 %s：为排除碎片化，export XLA_PYTHON_CLIENT_ALLOCATOR=platform，让 JAX 按需精确分配并立即释放（较慢）。", pf, req))
		}
		a.advise(
			fmt.Sprintf("Check with %s whether other processes hold %s.", nvidiaSMI, g),
			fmt.Sprintf("用 %s 检查 %s 是否被其他进程占用。", nvidiaSMI, gz))
		return
	case a.Requested > 0 && a.Free >= a.Requested:
		a.Reason = fmt.Sprintf("The driver reported %s free on %s, at least the %s requested, yet the allocation failed, so the figures do not explain it.", fb(a.Free), g, req)
		a.ReasonZh = fmt.Sprintf("驱动报告 %s 上有 %s 空闲，不少于请求的 %s，分配却失败了，这些数字解释不了原因。", gz, fb(a.Free), req)
		a.advise(
			fmt.Sprintf("The driver could not hand out one block of %s although %s was free: on Windows the WDDM driver often cannot, and memory freed between the failure and the report also shows as free. Check with %s during the run, and make the request smaller (batch, resolution) if it persists.", req, fb(a.Free), nvidiaSMI),
			fmt.Sprintf("虽然有 %s 空闲，驱动却给不出一块 %s：Windows 的 WDDM 驱动常有此问题，失败与报告之间被释放的显存也会显示为空闲。运行时用 %s 检查；若持续出现，请缩小请求（批大小、分辨率）。", fb(a.Free), req, nvidiaSMI))
		if a.Capacity > 0 && a.Free*20 < a.Capacity {
			a.advise(
				fmt.Sprintf("The card is nearly full anyway (%s of %s free), so lower the peak memory of a step as well.", fb(a.Free), fb(a.Capacity)),
				fmt.Sprintf("显卡本来也几乎满了（%s 中仅 %s 空闲），因此也请降低单步峰值显存。", fb(a.Capacity), fb(a.Free)))
			a.adviseLowerPeak()
		}
		return
	case a.Form == FormCUDARuntime && a.host:
		a.Reason = fmt.Sprintf("Allocating %s of pinned host memory failed (CUDA_ERROR_OUT_OF_MEMORY for host memory): the host's RAM ran short, not the GPU's.", req)
		a.ReasonZh = fmt.Sprintf("分配 %s 锁页主机内存失败（主机内存的 CUDA_ERROR_OUT_OF_MEMORY）：不足的是主机内存，而不是显存。", req)
		a.advise("Check the host's free memory (free -h, and the container's memory limit), then ask for less pinned memory: fewer or smaller pinned buffers, fewer data-loading workers.",
			"检查主机可用内存（free -h，以及容器的内存上限），然后减少锁页内存：更少或更小的锁页缓冲区、更少的数据加载 worker。")
		return
	case a.Form == FormCUDARuntime:
		if a.Requested > 0 {
			a.Reason = fmt.Sprintf("A CUDA allocation of %s failed; the message gives neither the GPU's capacity nor its free memory.", req)
			a.ReasonZh = fmt.Sprintf("一次 %s 的 CUDA 分配失败；消息既没有给出 GPU 容量，也没有给出空闲显存。", req)
		} else {
			a.Reason = "A CUDA call ran out of memory; the message gives no figures (how much was asked, how much was free, who held the rest)."
			a.ReasonZh = "一次 CUDA 调用显存不足；消息没有任何数字（请求多少、空闲多少、其余被谁占用）。"
		}
		a.advise(getFigures, getFiguresZh)
		a.advise("In multi-process jobs bind each process to its own GPU before any CUDA work, so that not every rank creates a context on GPU 0: torch.cuda.set_device(local_rank), or CUDA_VISIBLE_DEVICES per process.",
			"多进程任务中，在任何 CUDA 操作之前把每个进程绑定到自己的 GPU，避免所有 rank 都在 GPU 0 上创建上下文：torch.cuda.set_device(local_rank)，或为每个进程设置 CUDA_VISIBLE_DEVICES。")
		return
	case a.Form == FormXLA:
		a.Reason = fmt.Sprintf("XLA could not allocate %s on %s; the message gives neither the GPU's capacity nor what was in use.", req, g)
		a.ReasonZh = fmt.Sprintf("XLA 无法在 %s 上分配 %s；消息既没有给出 GPU 容量，也没有给出已用显存。", gz, req)
		a.advise(
			fmt.Sprintf("If another process shares %s (a second JAX process, TensorFlow or PyTorch), give each a share before it starts: export XLA_PYTHON_CLIENT_MEM_FRACTION=.45 per process, or XLA_PYTHON_CLIENT_PREALLOCATE=false; %s shows who holds the GPU.", g, nvidiaSMI),
			fmt.Sprintf("如果 %s 被其他进程共享（另一个 JAX 进程、TensorFlow 或 PyTorch），在启动前给每个进程分配份额：每个进程 export XLA_PYTHON_CLIENT_MEM_FRACTION=.45，或 XLA_PYTHON_CLIENT_PREALLOCATE=false；%s 可查看谁占用了 GPU。", gz, nvidiaSMI))
		a.adviseLowerPeak()
		return
	case a.Form == FormTensorFlow:
		what := req
		whatZh := req
		if a.Shape != "" {
			what = fmt.Sprintf("%s for a %s %s tensor", req, a.Shape, a.DType)
			whatZh = fmt.Sprintf("%s（%s %s 张量）", req, a.Shape, a.DType)
		}
		if a.Requested < 0 {
			what = fmt.Sprintf("a %s %s tensor", a.Shape, a.DType)
			whatZh = fmt.Sprintf("%s %s 张量", a.Shape, a.DType)
		}
		a.Reason = fmt.Sprintf("TensorFlow could not allocate %s on %s; the message gives neither the allocator's limit nor what was in use.", what, g)
		a.ReasonZh = fmt.Sprintf("TensorFlow 无法在 %s 上分配 %s；消息既没有给出分配器上限，也没有给出已用显存。", gz, whatZh)
		a.advise(
			fmt.Sprintf("Get the figures: the BFC allocator prints its summary ('Limit:' and 'InUse:' lines) in the log just before the error; pass that part of the log too, and run %s to see other processes.", nvidiaSMI),
			fmt.Sprintf("先拿到数字：BFC 分配器会在错误之前的日志中打印汇总（'Limit:' 和 'InUse:' 行）；把这部分日志一并提供，并运行 %s 查看其他进程。", nvidiaSMI))
		if s, zh := a.halfShapeAdvice(); s != "" {
			a.advise(s, zh)
		}
		a.adviseLowerPeak()
		return
	}
	// PyTorch without the figures: the message was cut, or printed bare.
	if a.Requested > 0 {
		a.Reason = fmt.Sprintf("PyTorch could not allocate %s; the message stops before the GPU's figures.", req)
		a.ReasonZh = fmt.Sprintf("PyTorch 无法分配 %s；消息在 GPU 的各项数字之前就截断了。", req)
	} else {
		a.Reason = "PyTorch ran out of GPU memory, but the message carries no figures."
		a.ReasonZh = "PyTorch 显存不足，但消息没有任何数字。"
	}
	a.advise(getFigures+" The full exception text also lists them.", getFiguresZh+"完整的异常文本也会列出这些数字。")
	a.adviseLowerPeak()
}

// halfShapeAdvice, for a TensorFlow tensor with a known shape, says what
// halving its first dimension (usually the batch) gives.
func (a *Analysis) halfShapeAdvice() (en, zh string) {
	dims, ok := parseShape(strings.Trim(a.Shape, "[]"))
	if a.Shape == "" || !ok || len(dims) == 0 || dims[0] < 2 || a.Requested <= 0 {
		return "", ""
	}
	d0, half := dims[0], dims[0]/2
	smaller := a.Requested / d0 * half
	return fmt.Sprintf("The failing tensor %s %s is %s; if its first dimension is the batch, halving it (%d to %d) makes it %s.", a.Shape, a.DType, fb(a.Requested), d0, half, fb(smaller)),
		fmt.Sprintf("出错的张量 %s %s 为 %s；如果第一维是批大小，把它减半（%d 到 %d）后为 %s。", a.Shape, a.DType, fb(a.Requested), d0, half, fb(smaller))
}
