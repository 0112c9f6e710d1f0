package env

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Timeouts of the commands Collect runs. Importing torch can take several
// seconds on a cold disk, so Python gets more.
const (
	toolTimeout   = 5 * time.Second
	pythonTimeout = 15 * time.Second
	maxToolOutput = 4 << 20
)

// smiQuery is the nvidia-smi query Collect runs; the detector reads its
// header-less rows in this column order.
var smiQuery = []string{"--query-gpu=index,name,memory.total,pci.bus_id,driver_version,compute_cap",
	"--format=csv,noheader,nounits"}

// pythonProbe prints what the installed torch says about itself, one
// "key=value" a line; every step may fail without stopping the rest.
const pythonProbe = `import sys
print("python=%d.%d.%d" % tuple(sys.version_info[:3]))
try:
    import torch
except Exception:
    torch = None
if torch is not None:
    for k, f in (("torch", lambda: torch.__version__),
                 ("torch_cuda", lambda: torch.version.cuda),
                 ("cudnn", lambda: torch.backends.cudnn.version()),
                 ("nccl", lambda: torch.cuda.nccl.version())):
        try:
            print("%s=%s" % (k, f()))
        except Exception:
            pass
`

// Collect gathers the environment live on this machine from what is
// installed: nvidia-smi (a GPU query and the plain table, for the CUDA
// version the driver supports), /proc/driver/nvidia/version, nvcc
// --version, python3 or python (what torch reports about itself), pip
// list, the OS release file and runtime.GOOS. Each command runs under its own timeout
// within ctx; a tool that is missing, fails or times out is skipped, so
// Collect never fails — it may simply find little.
func Collect(ctx context.Context) Environment {
	probes := []func(context.Context) Environment{
		collectSMIQuery,
		collectSMI,
		collectProcDriver,
		collectNVCC,
		collectPython,
		collectPip,
		collectOS,
	}
	results := make([]Environment, len(probes))
	var wg sync.WaitGroup
	for i, p := range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = p(ctx)
		}()
	}
	wg.Wait()
	var e Environment
	for _, r := range results {
		e.Merge(r)
	}
	return e
}

// runTool runs name with args under timeout and returns its standard
// output; ok is false when the tool is missing, fails or times out.
func runTool(ctx context.Context, timeout time.Duration, name string, args ...string) ([]byte, bool) {
	if ctx.Err() != nil {
		return nil, false
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, false
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, path, args...)
	out := &limitedBuffer{max: maxToolOutput}
	cmd.Stdout = out
	cmd.Env = append(os.Environ(), "PIP_DISABLE_PIP_VERSION_CHECK=1", "PYTHONIOENCODING=utf-8", "LC_ALL=C")
	cmd.WaitDelay = time.Second // do not wait for children that keep the pipe open
	if err := cmd.Run(); err != nil || cctx.Err() != nil {
		return nil, false
	}
	return out.Bytes(), true
}

// limitedBuffer keeps the first max bytes written and drops the rest.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		if len(p) > room {
			b.Buffer.Write(p[:room])
		} else {
			b.Buffer.Write(p)
		}
	}
	return len(p), nil
}

// detect feeds out to a fresh detector, every line sourced as src.
func detect(out []byte, src string) Environment {
	d := NewDetector()
	_ = eachLine(bytes.NewReader(out), func(_ int, line []byte) { d.Line(line, src) })
	return d.Env()
}

func collectSMIQuery(ctx context.Context) Environment {
	out, ok := runTool(ctx, toolTimeout, "nvidia-smi", smiQuery...)
	if !ok {
		// Drivers before 510 do not know compute_cap: ask without it.
		q := strings.Replace(smiQuery[0], ",compute_cap", "", 1)
		if out, ok = runTool(ctx, toolTimeout, "nvidia-smi", q, smiQuery[1]); !ok {
			return Environment{}
		}
	}
	return detect(out, "nvidia-smi")
}

func collectSMI(ctx context.Context) Environment {
	out, ok := runTool(ctx, toolTimeout, "nvidia-smi")
	if !ok {
		return Environment{}
	}
	return detect(out, "nvidia-smi")
}

func collectProcDriver(context.Context) Environment {
	const p = "/proc/driver/nvidia/version"
	b, err := readSmall(p)
	if err != nil {
		return Environment{}
	}
	e := detect(b, p)
	e.OS = "" // the file says nothing about the OS beyond what GOOS does
	delete(e.Sources, "os")
	return e
}

func collectNVCC(ctx context.Context) Environment {
	out, ok := runTool(ctx, toolTimeout, "nvcc", "--version")
	if !ok {
		return Environment{}
	}
	return detect(out, "nvcc")
}

// collectPython asks python3 what torch says about itself.
func collectPython(ctx context.Context) Environment {
	src := "python3"
	out, ok := runTool(ctx, pythonTimeout, src, "-c", pythonProbe)
	if !ok {
		src = "python" // Windows installs no python3
		if out, ok = runTool(ctx, pythonTimeout, src, "-c", pythonProbe); !ok {
			return Environment{}
		}
	}
	var e Environment
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, found := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !found {
			continue
		}
		switch k {
		case "python", "torch", "torch_cuda":
			if looksLikeVersion(v) {
				setField(&e, k, v, src)
			}
		case "cudnn":
			setField(&e, k, versionFromCode(v), src)
		case "nccl":
			setField(&e, k, versionFromCode(v), src)
		}
	}
	fillFromPackages(&e) // torch_cuda from a "+cu121" label if torch.version.cuda failed
	return e
}

func looksLikeVersion(v string) bool {
	return v != "" && v[0] >= '0' && v[0] <= '9' && strings.Contains(v, ".")
}

// collectPip lists the installed packages with the first pip that answers.
func collectPip(ctx context.Context) Environment {
	tries := [][]string{
		{"pip3", "list", "--format=freeze"},
		{"pip", "list", "--format=freeze"},
		{"python3", "-m", "pip", "list", "--format=freeze"},
		{"python", "-m", "pip", "list", "--format=freeze"},
	}
	for _, t := range tries {
		if out, ok := runTool(ctx, pythonTimeout, t[0], t[1:]...); ok {
			return detect(out, "pip")
		}
	}
	return Environment{}
}

// collectOS records runtime.GOOS and, on Linux, the release's name.
func collectOS(context.Context) Environment {
	e := Environment{OS: runtime.GOOS, Sources: map[string]string{"os": "runtime"}}
	if runtime.GOOS == "linux" {
		if b, err := readSmall("/etc/os-release"); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
					if v = strings.Trim(strings.TrimSpace(v), `"'`); v != "" {
						setField(&e, "os_detail", v, "/etc/os-release")
					}
				}
			}
		}
	}
	return e
}

// readSmall reads at most 64 KiB of a file.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err == nil && len(b) == 0 {
		err = errors.New(path + " is empty")
	}
	return b, err
}
