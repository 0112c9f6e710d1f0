package memory

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/snapshot"
)

// fb formats a byte count for people: "1.50 GiB".
func fb(n uint64) string { return facts.FormatBytes(float64(n)) }

// poolPhrase names the pool the request needed, with its stream when it is
// not the default stream (a block on another stream cannot serve it).
func poolPhrase(o *OOM) (en, zh string) {
	en, zh = "the "+o.Pool+" pool", o.Pool+" 池"
	if o.Stream != 0 {
		en += fmt.Sprintf(" of stream %#x", o.Stream)
		zh = fmt.Sprintf("流 %#x 的 ", o.Stream) + zh
	}
	return en, zh
}

// holdClause compares the largest free block with the request.
func holdClause(o *OOM) (en, zh string) {
	req := fb(o.RequestedBytes)
	if o.LargestFreeBlockBytes < o.RequestedBytes {
		return "less than the " + req + " requested", "小于请求的 " + req
	}
	return "which could hold the " + req + " requested", "足以容纳请求的 " + req
}

// explain writes the reason and the fix for the verdict, in English and
// Chinese with the same figures.
func explain(o *OOM, settings *snapshot.Settings, top []Site) {
	req, largest, cacheFree := fb(o.RequestedBytes), fb(o.LargestFreeBlockBytes), fb(o.CacheFreeBytes)
	reserved, allocated := fb(o.ReservedBytes), fb(o.AllocatedBytes)
	pool, poolZh := poolPhrase(o)
	hold, holdZh := holdClause(o)
	trace := o.Source != "request"
	stepTexts(o, settings)
	const emptyCache = "torch.cuda.empty_cache() does not help here: it releases only segments that are entirely free, never free blocks stranded between live ones."
	const emptyCacheZh = "torch.cuda.empty_cache() 在这里无效：它只释放完全空闲的段，无法归还夹在存活块之间的空闲块。"

	switch o.Verdict {
	case VerdictFragmentation:
		subj := fmt.Sprintf("A %s request on device %d cannot be served from the cache", req, o.Device)
		subjZh := fmt.Sprintf("设备 %d 上 %s 的请求无法由缓存满足", o.Device, req)
		if trace {
			subj = fmt.Sprintf("The %s request on device %d failed", req, o.Device)
			subjZh = fmt.Sprintf("设备 %d 上 %s 的请求失败了", o.Device, req)
		}
		o.Reason = fmt.Sprintf("%s although %s held %s free, at least the amount requested: its largest free block was only %s, so the free memory was split into pieces too small for the request (fragmentation).",
			subj, pool, cacheFree, largest)
		o.ReasonZH = fmt.Sprintf("%s，尽管 %s还有 %s 空闲，不少于请求量：其中最大的空闲块只有 %s，空闲显存被切成了放不下这次请求的碎块（碎片化）。",
			subjZh, poolZh, cacheFree, largest)
		if settings != nil && settings.ExpandableSegments {
			o.Fix = "Expandable segments are already on (the snapshot's allocator settings say so), so make tensor sizes less varied: pad variable dimensions such as sequence length or batch size to a few fixed buckets, so that freed blocks fit the next request. " + emptyCache
			o.FixZH = "expandable segments 已经开启（快照的分配器设置如此），因此请减少张量大小的变化：把序列长度、批大小等可变维度补齐到少数几个固定档位，让释放的块能放下下一次请求。" + emptyCacheZh
		} else {
			o.Fix = "Export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before Python starts (PyTorch 2.1 or newer; not available on Windows builds): segments then grow in place instead of leaving free pieces between live blocks. " + emptyCache
			o.FixZH = "在启动 Python 前 export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True（需要 PyTorch 2.1 及以上；Windows 版本不支持）：段会原地增长，不再在存活块之间留下空闲碎块。" + emptyCacheZh
		}

	case VerdictOutside:
		out, capacity, free := fb(*o.OutsideBytes), fb(*o.CapacityBytes), fb(*o.DeviceFreeBytes)
		o.Reason = fmt.Sprintf("%s of device %d's %s was held outside PyTorch's allocator (%s capacity - %s reserved - %s free), at least the %s requested and at least a tenth of the GPU.",
			out, o.Device, capacity, capacity, reserved, free, req)
		o.ReasonZH = fmt.Sprintf("设备 %d 的 %s 中有 %s 被 PyTorch 分配器之外的内存占用（容量 %s - 保留 %s - 空闲 %s），不少于请求的 %s，且至少占显存的十分之一。",
			o.Device, capacity, out, capacity, reserved, free, req)
		o.Fix = fmt.Sprintf("Other processes or non-PyTorch memory (NCCL buffers, cuBLAS workspaces, the CUDA context) hold %s: run nvidia-smi to see the processes on the GPU, and call torch.cuda.mem_get_info() inside the job to see its free and total memory.", out)
		o.FixZH = fmt.Sprintf("其他进程或非 PyTorch 内存（NCCL 缓冲区、cuBLAS 工作区、CUDA 上下文）占用了 %s：运行 nvidia-smi 查看 GPU 上的进程，并在作业内调用 torch.cuda.mem_get_info() 查看空闲和总显存。", out)

	case VerdictExceedsAvailable:
		if o.CapacityBytes != nil && o.RequestedBytes > *o.CapacityBytes {
			capacity := fb(*o.CapacityBytes)
			o.Reason = fmt.Sprintf("The %s request is larger than device %d's whole %s: no setting or freeing makes it fit.", req, o.Device, capacity)
			o.ReasonZH = fmt.Sprintf("%s 的请求大于设备 %d 的全部显存 %s：任何设置或释放都无法放下它。", req, o.Device, capacity)
		} else {
			free := fb(derefOr(o.DeviceFreeBytes))
			o.Reason = fmt.Sprintf("The %s request is larger than all the memory PyTorch held on device %d (%s reserved) plus what the device had free (%s): freeing tensors in this process cannot make room for it.",
				req, o.Device, reserved, free)
			o.ReasonZH = fmt.Sprintf("%s 的请求大于 PyTorch 在设备 %d 上持有的全部显存（保留 %s）加上设备的空闲显存（%s）：释放本进程中的张量也腾不出这么多空间。",
				req, o.Device, reserved, free)
		}
		o.Fix = "Make the single tensor smaller: a smaller batch, sequence length or resolution, or split the work across devices (tensor or sequence parallelism). If other processes share the GPU, nvidia-smi shows what they hold."
		o.FixZH = "让这个张量变小：减小批大小、序列长度或分辨率，或把计算拆分到多个设备（张量并行或序列并行）。如果有其他进程共用这张 GPU，nvidia-smi 可以看到它们占用的显存。"

	case VerdictLiveTensors:
		when, whenZh := "at snapshot time", "快照时"
		if trace {
			when, whenZh = "when the request failed", "请求失败时"
		}
		o.Reason = fmt.Sprintf("Live tensors fill the memory PyTorch reserved on device %d: %s of %s was allocated %s, and the largest free block in %s was %s, %s.",
			o.Device, allocated, reserved, when, pool, largest, hold)
		o.ReasonZH = fmt.Sprintf("存活的张量占满了 PyTorch 在设备 %d 上保留的显存：%s已分配 %s（共保留 %s），%s中最大的空闲块为 %s，%s。",
			o.Device, whenZh, allocated, reserved, poolZh, largest, holdZh)
		lead, leadZh := "", ""
		if len(top) > 0 {
			s := top[0]
			lead = fmt.Sprintf("The largest holder is %s with %s in %s. ", s.Site, fb(s.Bytes), plural(s.Count, "block", "blocks"))
			leadZh = fmt.Sprintf("占用最多的是 %s，共 %s，%d 个块。", s.Site, fb(s.Bytes), s.Count)
		}
		o.Fix = lead + "Lower the peak: use a smaller batch or sequence length, recompute activations with activation checkpointing (torch.utils.checkpoint.checkpoint), and drop references kept across steps (for example accumulate loss.item() rather than the loss tensor)."
		o.FixZH = leadZh + "降低峰值：减小批大小或序列长度，用激活检查点（torch.utils.checkpoint.checkpoint）重算激活，并去掉跨步保留的引用（例如累加 loss.item() 而不是 loss 张量）。"

	case VerdictNewSegment:
		step := lastStep(o)
		seg, segZh := segWord(settings)
		need, free := fb(step.NeedBytes), fb(derefOr(step.HaveBytes))
		has, hasZh := "has", "有"
		if o.DeviceFreeSource == FreeFromCapacity {
			has, hasZh = "has at most", "至多有"
		}
		o.Reason = fmt.Sprintf("A %s request on device %d needs a %s of %s, and the device %s %s free: no cached block of %s is large enough (its largest free block is %s).",
			req, o.Device, seg, need, has, free, pool, largest)
		o.ReasonZH = fmt.Sprintf("设备 %d 上 %s 的请求需要 %s 的%s，设备%s %s 空闲：%s中没有足够大的缓存块（最大的空闲块为 %s）。",
			o.Device, req, need, segZh, hasZh, free, poolZh, largest)
		o.Fix = fmt.Sprintf("Nothing to fix for %s: the allocator takes a new segment from the device. If the job still fails here, something outside PyTorch holds more memory than counted: run nvidia-smi, or call torch.cuda.mem_get_info() in the job.", req)
		o.FixZH = fmt.Sprintf("%s 的请求无需处理：分配器会向设备申请新段。如果作业仍在此处失败，说明 PyTorch 之外占用的显存比计入的多：运行 nvidia-smi，或在作业内调用 torch.cuda.mem_get_info()。", req)

	case VerdictAfterRelease:
		step := lastStep(o)
		seg, segZh := segWord(settings)
		rel, need := fb(o.ReleasableBytes), fb(step.NeedBytes)
		o.Reason = fmt.Sprintf("A %s request on device %d is served once the allocator releases its entirely free cached segments (%s), which it does by itself before raising an out-of-memory error, and retries the %s of %s: no cached block of %s is large enough (its largest free block is %s).",
			req, o.Device, rel, seg, need, pool, largest)
		o.ReasonZH = fmt.Sprintf("设备 %d 上 %s 的请求在分配器释放其完全空闲的缓存段（%s）后即可满足，分配器在报显存不足之前会自动释放并重试 %s 的%s：%s中没有足够大的缓存块（最大的空闲块为 %s）。",
			o.Device, req, rel, need, segZh, poolZh, largest)
		o.Fix = fmt.Sprintf("Nothing to fix for %s: the release and retry happen by themselves. The retry first waits for every stream, so if it happens on every step it costs time; torch.cuda.empty_cache() releases the same %s.", req, rel)
		o.FixZH = fmt.Sprintf("%s 的请求无需处理：释放与重试会自动进行。重试前要等待所有流，若每一步都发生会耗费时间；torch.cuda.empty_cache() 释放的是同样的 %s。", req, rel)

	case VerdictDeviceFreeUnknown:
		step := lastStep(o)
		seg, segZh := segWord(settings)
		rel, need := fb(o.ReleasableBytes), fb(step.NeedBytes)
		o.Reason = fmt.Sprintf("Whether a %s request on device %d fits depends on the device's free memory, which is not known: no cached block of %s is large enough (its largest free block is %s), and releasing the entirely free cached segments gives back %s, less than the %s of %s it needs.",
			req, o.Device, pool, largest, rel, seg, need)
		o.ReasonZH = fmt.Sprintf("设备 %d 上 %s 的请求能否满足取决于设备的空闲显存，而它未知：%s中没有足够大的缓存块（最大的空闲块为 %s），释放完全空闲的缓存段可归还 %s，少于所需 %s 的%s。",
			o.Device, req, poolZh, largest, rel, need, segZh)
		o.Fix = fmt.Sprintf("Pass --capacity with the GPU's total memory (nvidia-smi shows it), or call torch.cuda.mem_get_info() in the job and compare its free memory with the %s needed.", need)
		o.FixZH = fmt.Sprintf("用 --capacity 传入 GPU 的总显存（nvidia-smi 可查看），或在作业内调用 torch.cuda.mem_get_info()，把其空闲显存与所需的 %s 比较。", need)

	case VerdictFits:
		{
			o.Reason = fmt.Sprintf("A %s request on device %d fits in the cache: %s held %s free with a largest block of %s, and %s of %s reserved was allocated.",
				req, o.Device, pool, cacheFree, largest, allocated, reserved)
			o.ReasonZH = fmt.Sprintf("设备 %d 上 %s 的请求能由缓存满足：%s有 %s 空闲，最大的空闲块为 %s，保留的 %s 中已分配 %s。",
				o.Device, req, poolZh, cacheFree, largest, reserved, allocated)
			o.Fix = fmt.Sprintf("Nothing to fix for %s: a free block of %s serves it without new memory from the device.", req, largest)
			o.FixZH = fmt.Sprintf("%s 的请求无需处理：%s 的空闲块即可满足，无需向设备申请新显存。", req, largest)
		}

	default:
		lead, leadZh := "The figures do not explain the failure", "这些数字无法解释这次失败"
		if !trace {
			lead, leadZh = "The figures do not settle whether the request fits", "这些数字无法确定这次请求能否满足"
		}
		o.Reason = fmt.Sprintf("%s: on device %d, %s of %s reserved was allocated, and %s held %s free with a largest block of %s, %s.",
			lead, o.Device, allocated, reserved, pool, cacheFree, largest, hold)
		o.ReasonZH = fmt.Sprintf("%s：设备 %d 保留的 %s 中已分配 %s，%s有 %s 空闲，最大的空闲块为 %s，%s。",
			leadZh, o.Device, reserved, allocated, poolZh, cacheFree, largest, holdZh)
		last := lastStep(o)
		switch {
		case trace && last != nil && last.Outcome == OutcomeSucceeds:
			free, need := fb(derefOr(last.HaveBytes)), fb(last.NeedBytes)
			o.Fix = fmt.Sprintf("The device had %s free, enough for the %s segment the request needed, so a per-process memory fraction probably capped PyTorch (the OOM message then shows an 'allowed' figure): raise or remove the fraction, or lower the peak.", free, need)
			o.FixZH = fmt.Sprintf("设备有 %s 空闲，足够请求所需的 %s 段，因此很可能是进程显存比例限制了 PyTorch（此时 OOM 信息中会有 'allowed' 数字）：调高或取消该比例，或降低峰值。", free, need)
		case o.CapacityBytes == nil:
			o.Fix = "The GPU's capacity is missing: pass --capacity with its total memory (nvidia-smi shows it) to tell memory held outside PyTorch's allocator apart."
			o.FixZH = "缺少 GPU 的总容量：用 --capacity 传入其总显存（nvidia-smi 可查看），才能区分 PyTorch 分配器之外占用的显存。"
		case o.DeviceFreeBytes == nil:
			o.Fix = fmt.Sprintf("The device's free memory is missing (a --request question has none): call torch.cuda.mem_get_info() in the job and compare its free memory with the %s requested.", req)
			o.FixZH = fmt.Sprintf("缺少设备的空闲显存（--request 提问没有这个数字）：在作业内调用 torch.cuda.mem_get_info()，把空闲显存与请求的 %s 比较。", req)
		default:
			out := fb(derefOr(o.OutsideBytes))
			why := fmt.Sprintf("less than the %s requested", req)
			whyZh := fmt.Sprintf("小于请求的 %s", req)
			if derefOr(o.OutsideBytes) >= o.RequestedBytes {
				tenth := fb(*o.CapacityBytes / 10)
				why, whyZh = fmt.Sprintf("less than a tenth of the GPU (%s)", tenth), fmt.Sprintf("不到显存的十分之一（%s）", tenth)
			}
			o.Fix = fmt.Sprintf("No single cause stands out: the %s outside the allocator is %s. Free cached memory may sit in other pools or streams: call torch.cuda.empty_cache() before the failing step to return whole free segments to the device.", out, why)
			o.FixZH = fmt.Sprintf("没有单一的原因：分配器之外的 %s %s。空闲的缓存可能在其他池或流中：在出错的步骤前调用 torch.cuda.empty_cache()，把完全空闲的段还给设备。", out, whyZh)
		}
	}
}

func derefOr(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// freeSource says where the device's free figure comes from.
func freeSource(o *OOM) (en, zh string) {
	switch o.DeviceFreeSource {
	case FreeFromCapacity:
		c, r := fb(derefOr(o.CapacityBytes)), fb(o.ReservedBytes)
		return fmt.Sprintf(" (%s capacity − %s reserved; memory held outside PyTorch, such as the CUDA context or other processes, is not known and counted as none)", c, r),
			fmt.Sprintf("（容量 %s − 已保留 %s；PyTorch 之外占用的显存，如 CUDA 上下文或其他进程，未知，按 0 计）", c, r)
	case FreeFromOOM:
		if o.Source == "request" {
			return " (measured by PyTorch at the trace's OOM event, moved by what it reserved or released since)",
				"（由 PyTorch 在跟踪中的 OOM 事件处测得，并按其后保留或释放的显存调整）"
		}
		return " (measured by PyTorch when it raised)", "（PyTorch 报错时测得）"
	}
	return "", ""
}

// segWord names what a new segment is: a cudaMalloc, or pages mapped into
// an expandable segment.
func segWord(st *snapshot.Settings) (en, zh string) {
	if st != nil && st.ExpandableSegments {
		return "pages mapped into an expandable segment", "映射进可扩展段的页"
	}
	return "new segment (cudaMalloc)", "新段（cudaMalloc）"
}

// stepTexts writes each step's sentence, in English and Chinese with the
// same figures.
func stepTexts(o *OOM, st *snapshot.Settings) {
	pool, poolZh := poolPhrase(o)
	seg, segZh := segWord(st)
	src, srcZh := freeSource(o)
	rounded, roundedZh := fb(o.RoundedBytes), fb(o.RoundedBytes)
	if o.RoundedBytes != o.RequestedBytes && o.Source == "request" {
		rounded = fmt.Sprintf("%s (%s rounded up to the allocator's block size)", fb(o.RoundedBytes), fb(o.RequestedBytes))
		roundedZh = fmt.Sprintf("%s（%s 按分配器的块大小向上取整）", fb(o.RoundedBytes), fb(o.RequestedBytes))
	}
	for i := range o.Path {
		s := &o.Path[i]
		need, have := fb(s.NeedBytes), fb(derefOr(s.HaveBytes))
		switch s.Step {
		case StepCachedBlock:
			if s.Outcome == OutcomeSucceeds && o.Source != "request" {
				s.Text = fmt.Sprintf("In this state a free block of %s in %s would serve %s: it was not free when the request failed (a free still pending on another stream, or a change the trace does not show).", have, pool, rounded)
				s.TextZH = fmt.Sprintf("在此状态下，%s中 %s 的空闲块可以满足 %s：请求失败时它并不空闲（其他流上尚未完成的释放，或跟踪中没有记录的变化）。", poolZh, have, roundedZh)
			} else if s.Outcome == OutcomeSucceeds {
				s.Text = fmt.Sprintf("A free cached block serves it: the best fit in %s is %s, for %s.", pool, have, rounded)
				s.TextZH = fmt.Sprintf("缓存中的空闲块即可满足：%s中最合适的块为 %s，请求为 %s。", poolZh, have, roundedZh)
			} else if o.LargestFreeBlockBytes >= o.RoundedBytes {
				s.Text = fmt.Sprintf("No cached block serves it: the free blocks of %s that are large enough (up to %s) are at least max_split_size and too large for %s, and such blocks are never split.", pool, fb(o.LargestFreeBlockBytes), rounded)
				s.TextZH = fmt.Sprintf("缓存中没有可用的块：%s中足够大的空闲块（最大 %s）不小于 max_split_size，对 %s 来说过大，而这类块从不拆分。", poolZh, fb(o.LargestFreeBlockBytes), roundedZh)
			} else {
				s.Text = fmt.Sprintf("No cached block serves it: the largest free block in %s is %s, less than %s.", pool, fb(o.LargestFreeBlockBytes), rounded)
				s.TextZH = fmt.Sprintf("缓存中没有可用的块：%s中最大的空闲块为 %s，小于 %s。", poolZh, fb(o.LargestFreeBlockBytes), roundedZh)
			}
		case StepGC:
			th := strconv.FormatFloat(st.GCThreshold, 'g', -1, 64)
			s.Text = fmt.Sprintf("Garbage collection (garbage_collection_threshold %s) runs only when a per-process memory fraction is set, which the snapshot does not record; it frees old entirely free large segments, which the release step frees anyway.", th)
			s.TextZH = fmt.Sprintf("垃圾回收（garbage_collection_threshold %s）只在设置了进程显存比例时运行，快照不记录该比例；它释放较早的完全空闲的大段，释放步骤也会释放这些段。", th)
		case StepNewSegment:
			if o.DeviceFreeSource == FreeFromCapacity {
				have = "at most " + have
			}
			haveZh := strings.Replace(have, "at most ", "至多 ", 1)
			switch s.Outcome {
			case OutcomeSucceeds:
				s.Text = fmt.Sprintf("A %s of %s fits in the device's free memory: %s%s.", seg, need, have, src)
				s.TextZH = fmt.Sprintf("%s 的%s放得进设备的空闲显存：%s%s。", need, segZh, haveZh, srcZh)
			case OutcomeFails:
				s.Text = fmt.Sprintf("A %s of %s does not fit: the device has %s free%s.", seg, need, have, src)
				s.TextZH = fmt.Sprintf("%s 的%s放不下：设备只有 %s 空闲%s。", need, segZh, haveZh, srcZh)
			default:
				s.Text = fmt.Sprintf("A %s of %s needs that much free device memory, which is not known: pass --capacity, or read torch.cuda.mem_get_info() in the job.", seg, need)
				s.TextZH = fmt.Sprintf("%s 的%s需要同样多的设备空闲显存，而它未知：请传入 --capacity，或在作业内读取 torch.cuda.mem_get_info()。", need, segZh)
			}
		case StepReleaseOversize:
			s.Text = fmt.Sprintf("Releasing the entirely free oversize segments (at least max_split_size) of %s and retrying: %s.", pool, outcomeWord(s, "en"))
			s.TextZH = fmt.Sprintf("释放%s中完全空闲的超大段（不小于 max_split_size）后重试：%s。", poolZh, outcomeWord(s, "zh"))
		case StepReleaseCached:
			rel := fb(o.ReleasableBytes)
			switch {
			case o.Source != "request":
				s.Text = fmt.Sprintf("After releasing every entirely free cached segment, the device had %s free%s, %s the %s of %s it needed.", have, src, cmpWord(s, "en"), seg, need)
				s.TextZH = fmt.Sprintf("释放所有完全空闲的缓存段之后，设备有 %s 空闲%s，%s所需 %s 的%s。", have, srcZh, cmpWord(s, "zh"), need, segZh)
			case o.ReleasableBytes >= s.NeedBytes:
				s.Text = fmt.Sprintf("Releasing every entirely free cached segment gives back %s (PyTorch does this by itself before raising an OOM), enough for the %s of %s whatever else the device has free.", rel, seg, need)
				s.TextZH = fmt.Sprintf("释放所有完全空闲的缓存段可归还 %s（PyTorch 在报 OOM 之前会自动这样做），无论设备还有多少空闲，都足够 %s 的%s。", rel, need, segZh)
			case s.HaveBytes == nil:
				s.Text = fmt.Sprintf("Releasing every entirely free cached segment gives back %s, less than the %s of %s: whether it then fits depends on the device's free memory, which is not known.", rel, seg, need)
				s.TextZH = fmt.Sprintf("释放所有完全空闲的缓存段可归还 %s，少于 %s 的%s：之后能否放下取决于设备的空闲显存，而它未知。", rel, need, segZh)
			default:
				s.Text = fmt.Sprintf("Releasing every entirely free cached segment gives back %s: the device then has %s free, %s the %s of %s.", rel, have, cmpWord(s, "en"), seg, need)
				s.TextZH = fmt.Sprintf("释放所有完全空闲的缓存段可归还 %s：设备随后有 %s 空闲，%s %s 的%s。", rel, have, cmpWord(s, "zh"), need, segZh)
			}
		}
	}
}

func cmpWord(s *Step, lang string) string {
	ok := s.Outcome == OutcomeSucceeds
	switch {
	case lang == "zh" && ok:
		return "足够"
	case lang == "zh":
		return "少于"
	case ok:
		return "enough for"
	}
	return "less than"
}

func outcomeWord(s *Step, lang string) string {
	have := fb(derefOr(s.HaveBytes))
	switch {
	case s.Outcome == OutcomeSkipped && lang == "zh":
		return "没有这样的段"
	case s.Outcome == OutcomeSkipped:
		return "there is none"
	case s.Outcome == OutcomeUnknown && lang == "zh":
		return "可归还 " + have + "，之后能否放下取决于未知的设备空闲显存"
	case s.Outcome == OutcomeUnknown:
		return "it gives back " + have + ", and whether that is enough depends on the device's free memory, which is not known"
	case lang == "zh":
		return fmt.Sprintf("设备随后有 %s 空闲，%s %s", have, cmpWord(s, "zh"), fb(s.NeedBytes))
	}
	return fmt.Sprintf("the device then has %s free, %s %s", have, cmpWord(s, "en"), fb(s.NeedBytes))
}

// lastStep is the path's last step, or nil.
func lastStep(o *OOM) *Step {
	if len(o.Path) == 0 {
		return nil
	}
	return &o.Path[len(o.Path)-1]
}
