// Package env finds out which versions of the GPU software stack (PyTorch,
// CUDA, the NVIDIA driver, cuDNN, NCCL, Python, pip and conda packages) and
// which GPUs a failed job ran with, because the right advice for an error
// often depends on them. It reads them from three places: the log itself, a
// line at a time while it is scanned (Detector); captured tool output the
// user hands over (Parse); and this machine (Collect).
package env

import (
	"strings"

	"github.com/gpudx/gpudx/facts"
)

// Environment is what is known about the software and hardware a job ran
// on. An empty string (or nil) means unknown; nothing is ever guessed to
// fill a gap. Sources says where each known field was read, so that a
// report can show its evidence.
type Environment struct {
	Torch      string            `json:"torch,omitempty"`       // "2.1.0+cu121"
	TorchCUDA  string            `json:"torch_cuda,omitempty"`  // CUDA the torch build targets: "12.1"
	CUDA       string            `json:"cuda,omitempty"`        // CUDA toolkit/runtime, e.g. nvcc "12.4.131" or "12.4"
	DriverCUDA string            `json:"driver_cuda,omitempty"` // nvidia-smi "CUDA Version": newest CUDA the driver supports
	Driver     string            `json:"driver,omitempty"`      // "535.104.05"
	CUDNN      string            `json:"cudnn,omitempty"`       // "8.9.2"
	NCCL       string            `json:"nccl,omitempty"`        // "2.18.1"
	Python     string            `json:"python,omitempty"`      // "3.10.12"
	OS         string            `json:"os,omitempty"`          // "linux", "windows" or "darwin"
	OSDetail   string            `json:"os_detail,omitempty"`   // "Ubuntu 22.04.3 LTS (x86_64)"
	GPUs       []GPU             `json:"gpus,omitempty"`
	Packages   map[string]string `json:"packages,omitempty"` // pip/conda: normalized name -> version
	Sources    map[string]string `json:"sources,omitempty"`  // field (json name or "packages.NAME") -> "train.log:12", "nvidia-smi"
}

// GPU is one device as a tool listed it. Index is the tool's device
// number; the other fields are empty when the tool did not print them.
type GPU struct {
	Index       int    `json:"index"`
	Name        string `json:"name"`                   // "NVIDIA A100-SXM4-80GB"
	MemoryBytes int64  `json:"memory_bytes,omitempty"` // total memory
	BusID       string `json:"bus_id,omitempty"`
	Capability  string `json:"capability,omitempty"` // "8.0" when printed
}

// stringFields lists the scalar fields by their json names, in a fixed
// order, so that Merge, IsZero and the detector treat them alike.
var stringFields = []string{"torch", "torch_cuda", "cuda", "driver_cuda", "driver",
	"cudnn", "nccl", "python", "os", "os_detail"}

// field returns the scalar field called key (its json name), or nil.
func (e *Environment) field(key string) *string {
	switch key {
	case "torch":
		return &e.Torch
	case "torch_cuda":
		return &e.TorchCUDA
	case "cuda":
		return &e.CUDA
	case "driver_cuda":
		return &e.DriverCUDA
	case "driver":
		return &e.Driver
	case "cudnn":
		return &e.CUDNN
	case "nccl":
		return &e.NCCL
	case "python":
		return &e.Python
	case "os":
		return &e.OS
	case "os_detail":
		return &e.OSDetail
	}
	return nil
}

// Merge fills the fields e lacks from o: where both know a field, e wins.
// GPUs are taken from o only when e has none; packages are merged name by
// name the same way. A source is copied along with the value it explains.
func (e *Environment) Merge(o Environment) {
	taken := map[string]bool{}
	for _, k := range stringFields {
		p, q := e.field(k), o.field(k)
		if *p == "" && *q != "" {
			*p = *q
			taken[k] = true
		}
	}
	if len(e.GPUs) == 0 && len(o.GPUs) > 0 {
		e.GPUs = append([]GPU(nil), o.GPUs...)
		taken["gpus"] = true
	}
	for name, v := range o.Packages {
		if _, ok := e.Packages[name]; ok {
			continue
		}
		if e.Packages == nil {
			e.Packages = map[string]string{}
		}
		e.Packages[name] = v
		taken["packages."+name] = true
	}
	for k, src := range o.Sources {
		_, have := e.Sources[k]
		if have || !(taken[k] || !knownSourceKey(k)) {
			continue
		}
		if e.Sources == nil {
			e.Sources = map[string]string{}
		}
		e.Sources[k] = src
	}
}

// knownSourceKey reports whether k names a field of Environment, whose
// source must follow its value; other keys are copied when absent.
func knownSourceKey(k string) bool {
	if k == "gpus" || strings.HasPrefix(k, "packages.") {
		return true
	}
	var e Environment
	return e.field(k) != nil
}

// IsZero reports whether nothing is known (sources alone do not count).
func (e Environment) IsZero() bool {
	for _, k := range stringFields {
		if *e.field(k) != "" {
			return false
		}
	}
	return len(e.GPUs) == 0 && len(e.Packages) == 0
}

// clone returns a deep copy, so that callers cannot alias a detector's maps.
func (e Environment) clone() Environment {
	c := e
	c.GPUs = append([]GPU(nil), e.GPUs...)
	if e.GPUs == nil {
		c.GPUs = nil
	}
	c.Packages = copyMap(e.Packages)
	c.Sources = copyMap(e.Sources)
	return c
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// Values returns the environment as the `env` variable of condition
// expressions. Version keys (torch, torch_cuda, cuda, driver_cuda, driver,
// cudnn, nccl, python, and jax, jaxlib, tensorflow, triton from the
// packages) hold a facts.V; os is a string; gpu is the name of GPU 0,
// gpu_memory its memory in bytes (int64) and gpus the number of GPUs (int).
// A key is absent when its value is unknown or unparsable, so a condition
// on it cannot be satisfied by a zero value.
func (e Environment) Values() map[string]any {
	m := map[string]any{}
	putV := func(key, s string) {
		if s == "" {
			return
		}
		if v, err := facts.ParseVersion(s); err == nil {
			m[key] = v
		}
	}
	putV("torch", e.Torch)
	putV("torch_cuda", e.TorchCUDA)
	putV("cuda", e.CUDA)
	putV("driver_cuda", e.DriverCUDA)
	putV("driver", e.Driver)
	putV("cudnn", e.CUDNN)
	putV("nccl", e.NCCL)
	putV("python", e.Python)
	for _, k := range []string{"jax", "jaxlib", "tensorflow", "triton"} {
		putV(k, e.pkg(packageAliases[k]...))
	}
	if e.OS != "" {
		m["os"] = e.OS
	}
	if g, ok := e.gpu0(); ok {
		if g.Name != "" {
			m["gpu"] = g.Name
		}
		if g.MemoryBytes > 0 {
			m["gpu_memory"] = g.MemoryBytes
		}
		// The compute capability, where the log printed it (nvidia-smi's
		// compute_cap, TensorFlow's device line, PyTorch's sm_ warning):
		// what GPU generation advice depends on.
		putV("gpu_capability", g.Capability)
	}
	if len(e.GPUs) > 0 {
		m["gpus"] = len(e.GPUs)
	}
	return m
}

// gpu0 returns the GPU with index 0, or the first listed when none has it.
func (e Environment) gpu0() (GPU, bool) {
	for _, g := range e.GPUs {
		if g.Index == 0 {
			return g, true
		}
	}
	if len(e.GPUs) > 0 {
		return e.GPUs[0], true
	}
	return GPU{}, false
}

// packageAliases lists, for the components read from package lists, the
// distribution names that carry them, preferred first.
var packageAliases = map[string][]string{
	"torch":      {"torch"},
	"jax":        {"jax"},
	"jaxlib":     {"jaxlib"},
	"tensorflow": {"tensorflow", "tensorflow-gpu", "tensorflow-cpu", "tf-nightly"},
	"triton":     {"triton", "pytorch-triton", "torchtriton"},
}

// pkg returns the version of the first of names that is installed.
func (e Environment) pkg(names ...string) string {
	for _, n := range names {
		if v := e.Packages[n]; v != "" {
			return v
		}
	}
	return ""
}

// Version returns the installed version of a component named as in a
// knowledge-base version row ("PyTorch", "CUDA", "cuDNN", "NCCL", "driver"
// or "NVIDIA driver", "TensorFlow", "JAX", "jaxlib", "Triton", "Python") or
// of any package (case-insensitive). "CUDA" is the toolkit/runtime and
// falls back to the CUDA the torch build targets, which pip wheels bundle.
// ok is false when the version is unknown or does not parse.
func (e Environment) Version(component string) (facts.V, bool) {
	c := strings.ToLower(strings.TrimSpace(component))
	var s string
	switch c {
	case "pytorch", "torch":
		s = first(e.Torch, e.pkg("torch"))
	case "cuda", "cuda toolkit", "cuda runtime":
		s = first(e.CUDA, e.TorchCUDA)
	case "torch_cuda", "torch cuda":
		s = e.TorchCUDA
	case "driver_cuda", "cuda driver":
		s = e.DriverCUDA
	case "driver", "nvidia driver", "nvidia-driver", "nvidia_driver":
		s = e.Driver
	case "cudnn":
		s = e.CUDNN
	case "nccl":
		s = e.NCCL
	case "python":
		s = first(e.Python, e.pkg("python"))
	case "tensorflow", "tf":
		s = e.pkg(packageAliases["tensorflow"]...)
	case "jax", "jaxlib", "triton":
		s = e.pkg(packageAliases[c]...)
	default:
		s = e.pkg(normalizePackage(c))
	}
	if s == "" {
		return facts.V{}, false
	}
	v, err := facts.ParseVersion(s)
	if err != nil {
		return facts.V{}, false
	}
	return v, true
}

func first(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// normalizePackage gives the key a package is stored under: lower case,
// '_' as '-', and conda's "pytorch" as pip's "torch".
func normalizePackage(name string) string {
	n := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "_", "-")
	if n == "pytorch" {
		return "torch"
	}
	return n
}
