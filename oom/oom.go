// Package oom does the arithmetic of a GPU out-of-memory message. It reads
// the figures a framework prints when an allocation fails — PyTorch 2.x
// ("GPU 0 has a total capacity of ..."), PyTorch 1.x ("(GPU 0; X total
// capacity; ...)"), the bare CUDA runtime error, XLA/JAX ("Out of memory
// while trying to allocate N bytes") and TensorFlow ("OOM when allocating
// tensor with shape[...]", the BFC allocator's "(rounded to N)" line and its
// Limit/InUse summary) — into bytes, and says where the memory went: how much
// was asked, how big the card is, how much was free, how much the framework
// holds for live tensors, how much it holds reserved but unused, and how much
// other processes hold. From those figures it gives a verdict and numeric
// advice in English and Chinese.
//
// The verdict rules, applied in this order:
//
//  1. ExceedsCard: the request is larger than the card's total capacity (the
//     BFC allocator's limit for TensorFlow and XLA). No allocator setting can
//     place it.
//  2. Fragmentation: the framework holds at least the requested amount
//     reserved but unallocated. The memory is there, in pieces too small for
//     the request.
//     Then, when the message reports at least the requested amount free (the
//     driver's free figure, or for a BFC allocator its limit minus what is in
//     use), the figures do not explain the failure: Unknown, with a reason
//     saying so.
//  3. OtherProcess: processes other than this one hold memory on the GPU
//     (OtherProcesses > 0) and the free memory plus theirs would cover the
//     request. Where the message lists no processes (PyTorch 1.x, ROCm, no
//     NVML), the memory outside the allocator — capacity minus free minus
//     reserved, which is other processes, the CUDA context and other
//     libraries — counts instead when it is at least 1 GiB and free plus it
//     would cover the request.
//  4. LiveTensors: the request and the allocated figure (or capacity and
//     free) are known and none of the above holds: memory the framework
//     really uses fills the card.
//  5. Unknown: the message carries too few figures.
//
// Other processes are counted the way PyTorch prints them: its own process
// appears as "Including non-PyTorch memory, this process has X", the others
// as "Process N has X". Inside a PID namespace (containers) PyTorch cannot
// recognise its own PID and lists itself as "Process N has X" (or "Process
// has X" where no PID is known, recorded as PID 0); then a listed process
// whose figure equals the "this process" figure, or, without that clause, the
// smallest listed process holding at least what PyTorch reserved, is taken to
// be this process and left out of OtherProcesses.
//
// Every variable and API the advice names is recorded in the knowledge
// registry (knowledge/_registry); the tests check that.
package oom

// Verdict says what filled the GPU.
type Verdict string

// Verdicts, in the order the rules try them (see the package comment).
const (
	Fragmentation Verdict = "fragmentation" // reserved-but-unallocated >= requested
	LiveTensors   Verdict = "live_tensors"  // the card is full of memory the framework really uses
	OtherProcess  Verdict = "other_process" // memory held outside this process would make the request fit
	ExceedsCard   Verdict = "exceeds_card"  // the request alone is larger than the card
	Unknown       Verdict = "unknown"       // the message carries too few figures
)

// Message forms Analyze reads; Analysis.Form holds one of them.
const (
	FormPyTorch       = "pytorch"        // PyTorch 2.1+: "GPU 0 has a total capacity of ..."
	FormPyTorchLegacy = "pytorch_legacy" // PyTorch 1.x/2.0: "(GPU 0; X total capacity; ...)"
	FormCUDARuntime   = "cuda_runtime"   // a raw CUDA call: "CUDA error: out of memory"
	FormXLA           = "xla"            // XLA/JAX: "Out of memory while trying to allocate ..."
	FormTensorFlow    = "tensorflow"     // "OOM when allocating tensor ...", BFC "(rounded to N)"
)

// Process is one "Process N has X memory in use" part of a PyTorch message.
// PID is 0 where the message shows no PID.
type Process struct {
	PID   int   `json:"pid"`
	Bytes int64 `json:"bytes"`
	// This: the clause is taken to be this process (see the package
	// comment), so it is not counted in OtherProcesses.
	This bool `json:"this,omitempty"`
}

// Advice is one thing to do, in English and in Chinese.
type Advice struct {
	Text string `json:"text"`
	Zh   string `json:"zh"`
}

// Analysis is the arithmetic of one out-of-memory message. Byte figures are
// -1 when the message does not give them.
type Analysis struct {
	Form                string    `json:"form"`                 // "pytorch", "pytorch_legacy", "cuda_runtime", "xla", "tensorflow"
	GPU                 int       `json:"gpu"`                  // -1 when unknown
	Requested           int64     `json:"requested"`            // the allocation that failed
	Capacity            int64     `json:"capacity"`             // total memory of the GPU (TensorFlow: the BFC limit)
	Free                int64     `json:"free"`                 // free on the GPU when it failed, as the driver said
	Allocated           int64     `json:"allocated"`            // by the framework, live tensors
	Reserved            int64     `json:"reserved"`             // by the framework's caching allocator in total
	ReservedUnallocated int64     `json:"reserved_unallocated"` // reserved but not handed out
	ThisProcess         int64     `json:"this_process"`         // "Including non-PyTorch memory, this process has X"
	OtherProcesses      int64     `json:"other_processes"`      // held by other processes (sum), or -1
	Processes           []Process `json:"processes,omitempty"`  // every "Process N has X memory in use" part
	// SelfPID is the PID of the listed process taken to be this one (0
	// where the clause shows no PID), or -1 when none is; SelfWhy says why,
	// and why it is not counted as another process.
	SelfPID   int      `json:"self_pid"`
	SelfWhy   string   `json:"self_why,omitempty"`
	SelfWhyZh string   `json:"self_why_zh,omitempty"`
	Shape     string   `json:"shape,omitempty"` // TF: "[32,3,224,224]"
	DType     string   `json:"dtype,omitempty"` // TF: "float"
	Verdict   Verdict  `json:"verdict"`
	Reason    string   `json:"reason"`    // one sentence with the figures, English
	ReasonZh  string   `json:"reason_zh"` // the same in Chinese
	Advice    []Advice `json:"advice"`    // numeric advice, most useful first

	// Figures that shape the reasons and advice but are not part of the
	// JSON form.
	allowed   int64 // PyTorch "X allowed;" (per-process memory fraction), or -1
	private   int64 // PyTorch "with X allocated in private pools", or -1
	hip       bool  // "HIP out of memory": a ROCm build
	cached    bool  // PyTorch 1.0-1.4's "X cached)" ending
	host      bool  // the CUDA error was for pinned host memory, not the GPU
	selfIndex int   // index in Processes taken to be this process, or -1
}

// Analyze reads one out-of-memory message (a log line, or a few lines joined
// with "\n") and returns its arithmetic and verdict, or nil when text is not
// an OOM message it knows. torch is the installed PyTorch version ("" when
// unknown): it picks the allocator setting to advise.
//
// When text holds several forms, the one with the most figures wins:
// PyTorch, then TensorFlow, then XLA, then the bare CUDA error. Within a
// form the first message is read.
func Analyze(text, torch string) *Analysis {
	var a *Analysis
	for _, parse := range []func(string) *Analysis{parsePyTorch, parseTensorFlow, parseXLA, parseCUDARuntime} {
		if a = parse(text); a != nil {
			break
		}
	}
	if a == nil {
		return nil
	}
	a.judge()
	a.explain(torch)
	return a
}

// Facts returns the known figures as named numbers for condition
// expressions: requested, total_capacity, free, allocated, reserved,
// reserved_unallocated, this_process, other_processes, gpu (only the known
// ones; bytes as int64).
func (a *Analysis) Facts() map[string]int64 {
	m := map[string]int64{}
	if a == nil {
		return m
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"requested", a.Requested},
		{"total_capacity", a.Capacity},
		{"free", a.Free},
		{"allocated", a.Allocated},
		{"reserved", a.Reserved},
		{"reserved_unallocated", a.ReservedUnallocated},
		{"this_process", a.ThisProcess},
		{"other_processes", a.OtherProcesses},
		{"gpu", int64(a.GPU)},
	} {
		if f.v >= 0 {
			m[f.name] = f.v
		}
	}
	return m
}

// newAnalysis returns an Analysis of the given form with every figure
// unknown.
func newAnalysis(form string) *Analysis {
	return &Analysis{
		Form: form, GPU: -1,
		Requested: -1, Capacity: -1, Free: -1, Allocated: -1, Reserved: -1,
		ReservedUnallocated: -1, ThisProcess: -1, OtherProcesses: -1,
		allowed: -1, private: -1, selfIndex: -1, SelfPID: -1,
	}
}

// known reports whether every figure is known (not negative).
func known(vs ...int64) bool {
	for _, v := range vs {
		if v < 0 {
			return false
		}
	}
	return true
}
