package oom

import (
	"fmt"
	"math"
	"math/bits"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpudx/gpudx/facts"
)

// A size as PyTorch's format_size prints it: "0 bytes", "512.00 KiB",
// "2.00 GiB".
const ptSize = `([0-9]+(?:\.[0-9]+)?\s*(?:bytes|KiB|MiB|GiB|TiB))`

// A size as XLA and TensorFlow print it: "1.20GiB", "176.00MiB", "2.95G".
const xlaSize = `([0-9]+(?:\.[0-9]+)?\s?[KMGT]i?B)`

var (
	// The start of every PyTorch caching-allocator OOM message.
	ptOOMRE = regexp.MustCompile(`(CUDA|HIP) out of memory\.`)
	// The bare message, with nothing after it worth reading.
	ptBareRE  = regexp.MustCompile(`(OutOfMemoryError|RuntimeError):\s*(CUDA|HIP) out of memory\.`)
	ptTriedRE = regexp.MustCompile(`^\s+Tried\s+to\s+allocate\s+` + ptSize)

	// PyTorch 2.1+, read right after "Tried to allocate X".
	ptNewGPURE = regexp.MustCompile(`^\.\s+GPU\s+([0-9]+)\s+has\s+a\s+total\s+capac(?:i)?ty\s+of\s+` + ptSize +
		`\s+of\s+which\s+` + ptSize + `\s+is\s+free\.`)
	ptProcessRE = regexp.MustCompile(`Process\s+(?:([0-9]+)\s+)?has\s+` + ptSize + `\s+(?:memory\s+)?in\s+use`)
	ptThisRE    = regexp.MustCompile(`Including\s+non-PyTorch\s+memory,\s+this\s+process\s+has\s+` + ptSize)
	ptAllowedRE = regexp.MustCompile(ptSize + `\s+allowed;`)
	ptAllocRE   = regexp.MustCompile(`Of\s+the\s+allocated\s+memory\s+` + ptSize + `\s+is\s+allocated\s+by\s+PyTorch,?` +
		`(?:\s+with\s+` + ptSize + `\s+allocated\s+in\s+private\s+pools\s*\([^)]*\),)?` +
		`(?:\s+and\s+` + ptSize + `\s+is\s+reserved\s+by\s+PyTorch\s+but\s+unallocated)?`)

	// PyTorch 1.x and 2.0, read right after "Tried to allocate X".
	ptLegacyGPURE   = regexp.MustCompile(`^\s*\(GPU\s+([0-9]+)\s*;`)
	ptLegacyTotalRE = regexp.MustCompile(ptSize + `\s+total\s+capacity`)
	ptLegacyAllocRE = regexp.MustCompile(ptSize + `\s+already\s+allocated`)
	ptLegacyFreeRE  = regexp.MustCompile(ptSize + `\s+free\b`)
	ptLegacyResRE   = regexp.MustCompile(ptSize + `\s+reserved\s+in\s+total\s+by\s+PyTorch`)
	ptLegacyCacheRE = regexp.MustCompile(ptSize + `\s+cached`)

	// TensorFlow.
	tfTensorRE = regexp.MustCompile(`OOM\s+when\s+allocating\s+tensor\s+(?:with|of)\s+shape\s*\[([0-9,\s]*)\]` +
		`(?:\s+and\s+type\s+(\w+))?(?:\s+on\s+(\S+))?`)
	tfDeviceGPURE = regexp.MustCompile(`(?i)gpu:\s?([0-9]+)`)
	tfBFCRE       = regexp.MustCompile(`Allocator\s+\(GPU_([0-9]+)_bfc\)\s+ran\s+out\s+of\s+memory\s+trying\s+to\s+allocate\s+` +
		xlaSize + `\s*\(rounded\s+to\s+([0-9]+)\)`)
	bfcLimitRE = regexp.MustCompile(`\bLimit:\s+([0-9]+)`)
	bfcInUseRE = regexp.MustCompile(`\bInUse:\s+([0-9]+)`)

	// XLA (JAX, and TensorFlow running XLA-compiled functions).
	xlaOOMRE = regexp.MustCompile(`Out\s+of\s+memory\s+(?:while\s+trying\s+to\s+allocate|allocating)\s+(?:([0-9]+)\s*bytes|` + xlaSize + `)`)
	xlaReqRE = regexp.MustCompile(`Failed\s+to\s+allocate\s+request\s+for\s+` + xlaSize +
		`(?:\s*\(([0-9]+)B\))?(?:\s+on\s+device\s+ordinal\s+([0-9]+))?`)

	// A raw CUDA call.
	cudaRTRE = regexp.MustCompile(`CUDA error:\s*out of memory|cuda runtime error \(2\)\s*:\s*out of memory|` +
		`THCudaCheck FAIL file=\S+ line=[0-9]+ error=2 : out of memory|cudaErrorMemoryAllocation|` +
		`CUDA_ERROR_OUT_OF_MEMORY|cuda failed with error 2 out of memory|` +
		`cudaSuccess \((?:2 vs\. 0|0 vs\. 2)\)\s+(?:Cuda Error: )?out of memory`)
	// TensorFlow/XLA's stream executor prints the size it asked the driver for.
	cudaDeviceAllocRE = regexp.MustCompile(`failed to allocate\s+\S+\s+\(([0-9]+) bytes\) from device: CUDA_ERROR_OUT_OF_MEMORY`)
	cudaHostAllocRE   = regexp.MustCompile(`failed to alloc(?:ate)?\s+(?:\S+\s+\()?([0-9]+) bytes\)? on host: CUDA_ERROR_OUT_OF_MEMORY`)
)

// Windows after a message's head in which its figures are looked for: they
// keep a figure of the next message (or of unrelated log lines) out.
const (
	ptTailWindow     = 2000
	legacyTailWindow = 400
)

// size reads a printed size in bytes; -1 when s is not one.
func size(s string) int64 {
	n, ok := facts.ParseSize(s)
	if !ok || n < 0 || n > math.MaxInt64/2 {
		return -1
	}
	return int64(math.Round(n))
}

// integer reads a decimal integer; -1 when s is not one or is too large.
func integer(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// gpuIndex reads a GPU index; -1 when s is not one.
func gpuIndex(s string) int {
	n := integer(s)
	if n < 0 || n > math.MaxInt32 {
		return -1
	}
	return int(n)
}

// parsePyTorch reads the caching allocator's message, 2.x or legacy form.
func parsePyTorch(text string) *Analysis {
	for _, loc := range ptOOMRE.FindAllStringSubmatchIndex(text, -1) {
		hip := text[loc[2]:loc[3]] == "HIP"
		rest := text[loc[1]:]
		m := ptTriedRE.FindStringSubmatch(rest)
		if m == nil {
			// "CUDA out of memory." alone is a message only as an
			// exception's text.
			start := max(0, loc[0]-40)
			b := ptBareRE.FindStringSubmatch(text[start:loc[1]])
			if b == nil {
				continue
			}
			a := newAnalysis(FormPyTorch)
			if b[1] == "RuntimeError" {
				a.Form = FormPyTorchLegacy
			}
			a.hip = hip
			return a
		}
		req := size(m[1])
		rest = rest[len(m[0]):]
		if g := ptLegacyGPURE.FindStringSubmatch(rest); g != nil {
			a := parseLegacy(rest[len(g[0]):])
			a.GPU = gpuIndex(g[1])
			a.Requested = req
			return a
		}
		a := newAnalysis(FormPyTorch)
		a.hip = hip
		a.Requested = req
		g := ptNewGPURE.FindStringSubmatch(rest)
		if g == nil {
			return a
		}
		a.GPU = gpuIndex(g[1])
		a.Capacity = size(g[2])
		a.Free = size(g[3])
		tail := window(rest[len(g[0]):], ptTailWindow)
		parseNewTail(a, tail)
		return a
	}
	return nil
}

// window returns s up to the next PyTorch OOM message or n bytes.
func window(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	if loc := ptOOMRE.FindStringIndex(s); loc != nil {
		s = s[:loc[0]]
	}
	return s
}

// parseNewTail reads what follows "GPU N has a total capacity of X of which
// Y is free." in a PyTorch 2.x message: the NVML process clauses, the
// memory-fraction clause and the allocator's own figures.
func parseNewTail(a *Analysis, tail string) {
	end := len(tail)
	alloc := ptAllocRE.FindStringSubmatchIndex(tail)
	if alloc != nil {
		end = alloc[0]
	}
	head := tail[:end]
	for _, p := range ptProcessRE.FindAllStringSubmatch(head, -1) {
		pid := 0
		if p[1] != "" {
			pid = gpuIndex(p[1])
		}
		a.Processes = append(a.Processes, Process{PID: pid, Bytes: size(p[2])})
	}
	if t := ptThisRE.FindStringSubmatch(head); t != nil {
		a.ThisProcess = size(t[1])
	}
	if al := ptAllowedRE.FindStringSubmatch(head); al != nil {
		a.allowed = size(al[1])
	}
	if alloc != nil {
		sub := func(i int) string {
			if alloc[2*i] < 0 {
				return ""
			}
			return tail[alloc[2*i]:alloc[2*i+1]]
		}
		a.Allocated = size(sub(1))
		if s := sub(2); s != "" {
			a.private = size(s)
		}
		if s := sub(3); s != "" {
			a.ReservedUnallocated = size(s)
		}
		if known(a.Allocated, a.ReservedUnallocated) {
			a.Reserved = a.Allocated + a.ReservedUnallocated
		}
	}
	a.countOthers()
}

// countOthers sets OtherProcesses (and selfIndex) from the process clauses;
// see the package comment.
func (a *Analysis) countOthers() {
	// PyTorch prints figures with two decimals; a process figure and an
	// allocator figure for the same memory may differ by that rounding.
	const slack = 16 << 20
	self := -1
	switch {
	case a.ThisProcess >= 0:
		for i, p := range a.Processes {
			if p.Bytes == a.ThisProcess {
				self = i
				break
			}
		}
	case len(a.Processes) == 0:
		// Neither this process nor any other: NVML gave nothing.
		return
	default:
		floor := max(a.Reserved, a.Allocated)
		if floor < 0 {
			return // cannot tell which one is this process
		}
		for i, p := range a.Processes {
			if p.Bytes+slack >= floor && (self < 0 || p.Bytes < a.Processes[self].Bytes) {
				self = i
			}
		}
	}
	var sum int64
	for i, p := range a.Processes {
		if i != self && p.Bytes > 0 {
			sum += p.Bytes
		}
	}
	a.OtherProcesses = sum
	a.selfIndex = self
	if self < 0 {
		return
	}
	p := &a.Processes[self]
	p.This = true
	a.SelfPID = p.PID
	name, nameZh := fmt.Sprintf("Process %d", p.PID), fmt.Sprintf("Process %d", p.PID)
	if p.PID == 0 {
		name, nameZh = "the process listed without a PID", "未列出 PID 的那个进程"
	}
	// PyTorch names its own process in the "this process" clause and
	// lists the others by PID; in a PID namespace (a container) it cannot
	// recognise its own PID and lists itself by PID too.
	if a.ThisProcess >= 0 {
		a.SelfWhy = fmt.Sprintf("%s has %s, the same as 'this process has %s': it is this process listed again by its PID; it is not counted among other processes",
			name, fb(p.Bytes), fb(a.ThisProcess))
		a.SelfWhyZh = fmt.Sprintf("%s 占用 %s，与 'this process has %s' 相同：它是按 PID 再次列出的本进程，不计入其他进程",
			nameZh, fb(p.Bytes), fb(a.ThisProcess))
		return
	}
	a.SelfWhy = fmt.Sprintf("%s has %s, the smallest listed process holding at least what PyTorch reserved (%s): it is taken to be this process, listed by PID because PyTorch runs in a PID namespace (a container); it is not counted among other processes",
		name, fb(p.Bytes), fb(max(a.Reserved, a.Allocated)))
	a.SelfWhyZh = fmt.Sprintf("%s 占用 %s，是占用不少于 PyTorch 已保留显存（%s）的进程中最小的一个：视为本进程（PyTorch 运行在 PID 命名空间/容器中，按 PID 列出了自己），不计入其他进程",
		nameZh, fb(p.Bytes), fb(max(a.Reserved, a.Allocated)))
}

// parseLegacy reads the parenthesised figures of a PyTorch 1.x / 2.0
// message: "X total capacity; Y already allocated; Z free; [A allowed;]
// W reserved in total by PyTorch)" or, before 1.5, "W cached)", where cached
// is the memory held by the allocator but not handed out.
func parseLegacy(rest string) *Analysis {
	a := newAnalysis(FormPyTorchLegacy)
	seg := window(rest, legacyTailWindow)
	if i := strings.IndexByte(seg, ')'); i >= 0 {
		seg = seg[:i]
	}
	find := func(re *regexp.Regexp) int64 {
		if m := re.FindStringSubmatch(seg); m != nil {
			return size(m[1])
		}
		return -1
	}
	a.Capacity = find(ptLegacyTotalRE)
	a.Allocated = find(ptLegacyAllocRE)
	a.Free = find(ptLegacyFreeRE)
	a.allowed = find(ptAllowedRE)
	if r := find(ptLegacyResRE); r >= 0 {
		a.Reserved = r
		if a.Allocated >= 0 {
			a.ReservedUnallocated = max(0, r-a.Allocated)
		}
	} else if c := find(ptLegacyCacheRE); c >= 0 {
		a.cached = true
		a.ReservedUnallocated = c
		if a.Allocated >= 0 {
			a.Reserved = a.Allocated + c
		}
	}
	return a
}

// dtypeSizes are the element sizes of TensorFlow's type names.
var dtypeSizes = map[string]int64{
	"float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2,
	"double": 8, "float64": 8, "int8": 1, "uint8": 1, "bool": 1,
	"int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
	"complex64": 8, "complex128": 16,
}

// tensorBytes is the size of a tensor of the given dimensions and element
// type, or -1 when the type is unknown or the product overflows.
func tensorBytes(dims []int64, dtype string) int64 {
	n, ok := dtypeSizes[strings.ToLower(dtype)]
	if !ok {
		return -1
	}
	p := uint64(n)
	for _, d := range dims {
		hi, lo := bits.Mul64(p, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return -1
		}
		p = lo
	}
	return int64(p)
}

// parseShape reads "32, 3,224" into dimensions; ok is false for a malformed
// or negative dimension.
func parseShape(s string) (dims []int64, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, true // a scalar
	}
	for _, f := range strings.Split(s, ",") {
		d := integer(f)
		if d < 0 {
			return nil, false
		}
		dims = append(dims, d)
	}
	return dims, true
}

// parseTensorFlow reads "OOM when allocating tensor with shape[...] and type
// T on .../device:GPU:N" and the BFC allocator's "ran out of memory trying to
// allocate X (rounded to N)", with the Limit/InUse summary when the text
// holds it. A tensor on the CPU is host memory, not a GPU OOM.
func parseTensorFlow(text string) *Analysis {
	var a *Analysis
	for _, m := range tfTensorRE.FindAllStringSubmatch(text, -1) {
		device := m[3]
		if device != "" && !tfDeviceGPURE.MatchString(device) {
			continue // CPU or another host device
		}
		a = newAnalysis(FormTensorFlow)
		dims, ok := parseShape(m[1])
		if ok {
			parts := make([]string, len(dims))
			for i, d := range dims {
				parts[i] = strconv.FormatInt(d, 10)
			}
			a.Shape = "[" + strings.Join(parts, ",") + "]"
		}
		a.DType = m[2]
		if ok && a.DType != "" {
			a.Requested = tensorBytes(dims, a.DType)
		}
		if g := tfDeviceGPURE.FindStringSubmatch(device); g != nil {
			a.GPU = gpuIndex(g[1])
		}
		break
	}
	if b := tfBFCRE.FindStringSubmatch(text); b != nil {
		if a == nil {
			a = newAnalysis(FormTensorFlow)
		}
		// The rounded figure is what the allocator looked for; the tensor's
		// own size, when known, is kept as the request people recognise.
		if a.Requested < 0 {
			a.Requested = integer(b[3])
		}
		if a.GPU < 0 {
			a.GPU = gpuIndex(b[1])
		}
	}
	if a == nil {
		return nil
	}
	readBFCStats(a, text)
	return a
}

// readBFCStats reads the BFC allocator's "Limit:" and "InUse:" summary lines
// as the capacity available to the allocator and the memory in use.
func readBFCStats(a *Analysis, text string) {
	if m := bfcLimitRE.FindStringSubmatch(text); m != nil {
		a.Capacity = integer(m[1])
	}
	if m := bfcInUseRE.FindStringSubmatch(text); m != nil {
		a.Allocated = integer(m[1])
	}
}

// parseXLA reads XLA's "Out of memory while trying to allocate N bytes" (or
// a size with a unit) and "Failed to allocate request for X (NB) on device
// ordinal N", where the byte count in parentheses wins.
func parseXLA(text string) *Analysis {
	m := xlaOOMRE.FindStringSubmatchIndex(text)
	r := xlaReqRE.FindStringSubmatchIndex(text)
	if m == nil && r == nil {
		return nil
	}
	a := newAnalysis(FormXLA)
	sub := func(loc []int, i int) string {
		if loc[2*i] < 0 {
			return ""
		}
		return text[loc[2*i]:loc[2*i+1]]
	}
	if m != nil && (r == nil || m[0] < r[0]) {
		if n := sub(m, 1); n != "" {
			a.Requested = integer(n)
		} else {
			a.Requested = size(sub(m, 2))
		}
	} else {
		if n := sub(r, 2); n != "" {
			a.Requested = integer(n)
		} else {
			a.Requested = size(sub(r, 1))
		}
		if g := sub(r, 3); g != "" {
			a.GPU = gpuIndex(g)
		}
	}
	readBFCStats(a, text)
	return a
}

// parseCUDARuntime recognises a raw CUDA out-of-memory error. It carries no
// figures, except the size TensorFlow/XLA's stream executor asked the
// driver for.
func parseCUDARuntime(text string) *Analysis {
	if !cudaRTRE.MatchString(text) {
		return nil
	}
	a := newAnalysis(FormCUDARuntime)
	if m := cudaDeviceAllocRE.FindStringSubmatch(text); m != nil {
		a.Requested = integer(m[1])
	} else if m := cudaHostAllocRE.FindStringSubmatch(text); m != nil {
		a.host = true
		a.Requested = integer(m[1])
	}
	return a
}
