package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpudx/gpudx/env"
	"github.com/gpudx/gpudx/internal/render"
)

// maxEnvFile bounds an --env file: tool output is kilobytes; a larger
// file is a mistake (a log, a device) and must not hang the command.
const maxEnvFile = 64 << 20

// readEnvFiles parses every --env file into one environment; the first
// file that knows a value wins.
func readEnvFiles(flag string, paths []string) (env.Environment, error) {
	var out env.Environment
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return out, usageErr("%s %s: %v", flag, p, unwrapPath(err))
		}
		e, err := parseEnvFile(f, p)
		f.Close()
		if err != nil {
			return out, usageErr("%s %s: %v", flag, p, err)
		}
		out.Merge(e)
	}
	return out, nil
}

func parseEnvFile(f *os.File, name string) (env.Environment, error) {
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return env.Environment{}, fmt.Errorf("is a directory; give the captured output files themselves")
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, err := peekHead(br)
	if err != nil {
		return env.Environment{}, err
	}
	if looksBinary(head) {
		return env.Environment{}, fmt.Errorf("looks like a binary file (NUL bytes in its first 8 KiB), not captured tool output")
	}
	lr := &io.LimitedReader{R: br, N: maxEnvFile + 1}
	e, err := env.Parse(lr, name)
	if err != nil {
		return e, err
	}
	if lr.N == 0 {
		return e, fmt.Errorf("larger than %d MiB: not captured tool output", maxEnvFile>>20)
	}
	return e, nil
}

// collectLive reads this machine's environment with a bound on the time
// the tools may take.
func collectLive() env.Environment {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return env.Collect(ctx)
}

func newEnvCmd(io *IO) *cobra.Command {
	var format string
	var files []string
	cmd := &cobra.Command{
		Use:   "env [--file FILE]...",
		Short: "Show the GPU software environment gpudx reasons with",
		Long: `Show the versions and GPUs that diagnoses are compared against: PyTorch
(and the CUDA it was built for), the CUDA toolkit, the NVIDIA driver (and the
newest CUDA it supports), cuDNN, NCCL, Python, the OS and the GPUs.

With no --file, the environment is collected live on this machine from what
is installed: nvidia-smi, nvcc, python3 with torch, pip, and
/proc/driver/nvidia/version. A missing tool is skipped, never an error.
With --file, the same is read from captured output of those tools, as
'gpudx diagnose --env' reads it.`,
		Example: `  # What is installed here
  gpudx env

  # What a user's captured output says, as JSON
  python -m torch.utils.collect_env > env.txt
  gpudx env --file env.txt --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			var e env.Environment
			if len(files) > 0 {
				var err error
				if e, err = readEnvFiles("--file", files); err != nil {
					return err
				}
			} else {
				e = collectLive()
			}
			if format == "json" {
				return render.WriteJSON(io.Out, e)
			}
			text := envText(e)
			if len(files) == 0 {
				text += notFound(e)
			}
			_, err := fmt.Fprint(io.Out, text)
			return err
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output format: text or json")
	cmd.Flags().StringArrayVar(&files, "file", nil, "read captured tool output from `FILE` instead of this machine (repeatable)")
	return cmd
}

func envText(e env.Environment) string {
	if e.IsZero() {
		return "Nothing found: no NVIDIA driver, CUDA toolkit, PyTorch or package list.\n"
	}
	var b strings.Builder
	row := func(name, v, key string) {
		if v == "" {
			return
		}
		fmt.Fprintf(&b, "%-22s %s", name, v)
		if src := e.Sources[key]; src != "" {
			fmt.Fprintf(&b, "   (%s)", src)
		}
		b.WriteString("\n")
	}
	row("PyTorch", e.Torch, "torch")
	row("PyTorch built for CUDA", e.TorchCUDA, "torch_cuda")
	row("CUDA toolkit/runtime", e.CUDA, "cuda")
	row("NVIDIA driver", e.Driver, "driver")
	row("Driver supports CUDA", e.DriverCUDA, "driver_cuda")
	row("cuDNN", e.CUDNN, "cudnn")
	row("NCCL", e.NCCL, "nccl")
	row("Python", e.Python, "python")
	os := e.OS
	if e.OSDetail != "" {
		os = e.OSDetail
	}
	row("OS", os, "os")
	for _, g := range e.GPUs {
		s := g.Name
		if g.MemoryBytes > 0 {
			s += fmt.Sprintf(", %.0f MiB", float64(g.MemoryBytes)/(1<<20))
		}
		if g.Capability != "" {
			s += ", compute " + g.Capability
		}
		if g.BusID != "" {
			s += ", " + g.BusID
		}
		fmt.Fprintf(&b, "%-22s %s\n", fmt.Sprintf("GPU %d", g.Index), s)
	}
	for _, k := range []string{"jax", "jaxlib", "tensorflow", "triton"} {
		row(k, e.Packages[k], "packages."+k)
	}
	return b.String()
}

// notFound says, for a live look at this machine, what was looked for and
// not found, so that a short list does not read as a complete one.
func notFound(e env.Environment) string {
	var miss []string
	if e.Driver == "" {
		miss = append(miss, "NVIDIA driver (/proc/driver/nvidia/version, nvidia-smi)")
	}
	if len(e.GPUs) == 0 {
		miss = append(miss, "GPUs (nvidia-smi)")
	}
	if e.CUDA == "" {
		miss = append(miss, "CUDA toolkit (nvcc)")
	}
	if e.Torch == "" {
		miss = append(miss, "PyTorch (python3 -c 'import torch')")
	}
	if len(miss) == 0 {
		return ""
	}
	return "Not found here: " + strings.Join(miss, "; ") + ".\n"
}
