package memory

import (
	"fmt"

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
		switch {
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
