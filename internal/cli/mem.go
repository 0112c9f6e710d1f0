package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/internal/memview"
	"github.com/gpudx/gpudx/memory"
	"github.com/gpudx/gpudx/snapshot"
)

type memOpts struct {
	format, lang, output string
	request, capacity    string
	device               string
	top                  int
	stacks               bool
	maxMemory            string
}

// maxMemoryUsage is the help of --max-memory.
const maxMemoryUsage = "most memory that reading a snapshot may hold (`SIZE`); a file that needs more, or more than 32 MiB plus 4 bytes per byte of it, is refused"

const memCapture = `A snapshot is the pickle file PyTorch's CUDA caching allocator writes about
itself: every segment it reserved from the driver, every block inside one
(allocated to a tensor, freed but waiting on another stream, or free), the
stack that allocated each block and, when history recording is on, a trace
of the last alloc/free/oom events. Capture one from Python:

    import torch
    torch.cuda.memory._record_memory_history(max_entries=100000)
    ... run the steps that use the memory ...
    torch.cuda.memory._dump_snapshot("snapshot.pickle")

To capture it at an out-of-memory error, record history first, then either
catch the error:

    try:
        train()
    except torch.cuda.OutOfMemoryError:
        torch.cuda.memory._dump_snapshot("oom.pickle")
        raise

or attach an observer, which runs when the allocator gives up, before the
error is raised (so the trace ends with the oom event):

    def on_oom(device, alloc, device_alloc, device_free):
        torch.cuda.memory._dump_snapshot("oom.pickle")
    torch._C._cuda_attachOutOfMemoryObserver(on_oom)

A pickled torch.cuda.memory_snapshot() list is read too (it has no trace).
Files from PyTorch 2.0 on, plain or gzip-compressed, are read; - reads
standard input. The pickle is decoded as plain data only: an opcode that
would import or call anything is refused, so a file cannot run code.`

func newMemCmd(env *IO) *cobra.Command {
	var o memOpts
	cmd := &cobra.Command{
		Use:   "mem SNAPSHOT",
		Short: "Explain a PyTorch CUDA memory snapshot: why the OOM happened, which code holds the memory",
		Long: `Read a PyTorch CUDA memory snapshot and answer: why did the out-of-memory
error happen, and which code holds the memory?

The first screen gives the OOM (the size requested, what the device had
free, the largest free block in the cache at that moment), the verdict
(fragmentation, memory held outside PyTorch's allocator, a request larger
than everything the process could get, live tensors fill the memory) with its figures and the fix that fits it, the code path of the
failing request, and the allocation sites that hold the most memory. Then
per device and pool: reserved, allocated, active and free memory, rounding
overhead, releasable and stranded free memory, the largest free block,
fragmentation, segments and blocks by state; and the peak of the trace with
what was alive at it. Without an oom event in the trace, --request SIZE asks
the same question about a request of that size at snapshot time.

` + memCapture + `

Formats: text (default); json (the analysis, fields documented in
docs/json-output.md); html (one self-contained page with a to-scale map of
every block, the top sites and the timeline; no network needed); pprof (a
gzipped profile.proto of the live bytes and blocks per stack, for
'go tool pprof -http=: FILE').

Exit status: 0 when the snapshot was read, 2 for bad flags or a file that
cannot be read as a snapshot (missing, not a PyTorch memory snapshot,
truncated, or holding a refused opcode).`,
		Example: `  # Why did it run out of memory, and who holds it?
  gpudx mem oom.pickle

  # Would a 2 GiB request fit on device 1? (80 GB card)
  gpudx mem --request 2GiB --device 1 --capacity 80GB snapshot.pickle

  # The full stacks of the top 20 sites, in Chinese
  gpudx mem --top 20 --stacks --lang zh snapshot.pickle

  # A page to open in a browser; a flame graph with pprof
  gpudx mem --format html -o mem.html snapshot.pickle
  gpudx mem --format pprof -o mem.pb.gz snapshot.pickle && go tool pprof -http=: mem.pb.gz

  # What grew between two snapshots
  gpudx mem diff step100.pickle step200.pickle`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr("no snapshot: give a snapshot file, or - to read standard input\nRun 'gpudx mem --help' for usage.")
			}
			return runMem(env, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.format, "format", "f", "text", "output format: text, json, html or pprof")
	f.StringVarP(&o.output, "output", "o", "", "write the output to `FILE` instead of standard output (needed for pprof on a terminal)")
	f.StringVar(&o.request, "request", "", "explain a request of `SIZE` (2GiB, 512MB, 1048576) at snapshot time instead of the trace's oom event")
	f.StringVar(&o.device, "device", "", "the device `N` (or cuda:N) for --request; default: the one with the most reserved memory")
	f.StringVar(&o.capacity, "capacity", "", "the device's total memory (`SIZE`, e.g. 80GB): tells memory held outside PyTorch apart")
	f.IntVar(&o.top, "top", 10, "how many allocation sites to list")
	f.BoolVar(&o.stacks, "stacks", false, "text: print the full stacks of the top sites and of the OOM request")
	f.StringVar(&o.lang, "lang", "en", "language of the text and html output: en or zh")
	f.StringVar(&o.maxMemory, "max-memory", "4GiB", maxMemoryUsage)
	cmd.AddCommand(newMemDiffCmd(env))
	return cmd
}

func parseSizeFlag(name, v string) (uint64, error) {
	if v == "" {
		return 0, nil
	}
	n, ok := facts.ParseSize(v)
	if !ok || n < 1 || n > 1<<62 {
		return 0, usageErr("%s: want a size such as 2GiB, 512MB or a byte count, got %q", name, v)
	}
	return uint64(n), nil
}

func runMem(env *IO, o memOpts, path string) error {
	if err := checkFormat(o.format, "text", "json", "html", "pprof"); err != nil {
		return err
	}
	if err := checkLang(o.lang); err != nil {
		return err
	}
	if o.top < 1 {
		return usageErr("--top: want a positive number, got %d", o.top)
	}
	req, err := parseSizeFlag("--request", o.request)
	if err != nil {
		return err
	}
	capacity, err := parseSizeFlag("--capacity", o.capacity)
	if err != nil {
		return err
	}
	dev := -1
	if o.device != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(o.device, "cuda:"))
		if err != nil || n < 0 {
			return usageErr("--device: want a device ordinal such as 0 or cuda:1, got %q", o.device)
		}
		if req == 0 {
			return usageErr("--device applies to --request: give --request SIZE too")
		}
		dev = n
	}
	if o.format == "pprof" && o.output == "" && env.Terminal(env.Out) {
		return usageErr("--format pprof writes a binary profile: give -o FILE or redirect standard output")
	}
	maxMem, err := parseMaxMemory(o.maxMemory)
	if err != nil {
		return err
	}
	s, err := readSnapshot(env, path, maxMem)
	if err != nil {
		return err
	}
	if dev >= 0 && !hasDevice(s, dev) {
		return usageErr("--device %d: the snapshot has no segments on cuda:%d (devices with segments: %s)", dev, dev, devicesOf(s))
	}
	return writeOutput(env, o.output, func(w io.Writer) error {
		return safely(func() error {
			if o.format == "pprof" {
				return memview.Pprof(w, s, "gpudx mem "+displayName(path))
			}
			r := memory.Analyze(s, memory.Options{Request: req, RequestDevice: dev, Capacity: capacity, Top: o.top})
			switch o.format {
			case "json":
				return memview.JSON(w, r)
			case "html":
				return memview.HTML(w, r, s, memview.Options{Lang: o.lang, Name: displayName(path)})
			}
			return memview.Text(w, r, memview.Options{Lang: o.lang, Stacks: o.stacks, Name: displayName(path)})
		})
	})
}

func newMemDiffCmd(env *IO) *cobra.Command {
	var format, lang, output, maxMemory string
	var top int
	var stacks bool
	cmd := &cobra.Command{
		Use:   "diff BEFORE AFTER",
		Short: "Show what grew between two memory snapshots, by allocation site",
		Long: `Compare two PyTorch CUDA memory snapshots of the same job (say, after step
100 and after step 200) and list the allocation sites whose live memory
changed, largest growth first: the code that keeps memory it should free
(a leak: a loss tensor accumulated instead of loss.item(), a growing cache,
tensors kept in a list) rises to the top. Totals before and after
(reserved, allocated, blocks) come first.

` + memCapture + `

Take one snapshot, run more steps, take another; a leak shows as a site
whose bytes and block count grow with the number of steps.

Exit status: 0 when both snapshots were read, 2 for bad flags or a file that
cannot be read as a snapshot.`,
		Example: `  gpudx mem diff step100.pickle step200.pickle
  gpudx mem diff --stacks --top 5 before.pickle after.pickle
  gpudx mem diff --format json before.pickle after.pickle | jq '.sites[0]'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErr("mem diff needs two snapshots, BEFORE and AFTER (got %d)\nRun 'gpudx mem diff --help' for usage.", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			if err := checkLang(lang); err != nil {
				return err
			}
			if top < 1 {
				return usageErr("--top: want a positive number, got %d", top)
			}
			if args[0] == "-" && args[1] == "-" {
				return usageErr("mem diff: only one of BEFORE and AFTER can be standard input")
			}
			maxMem, err := parseMaxMemory(maxMemory)
			if err != nil {
				return err
			}
			before, err := readSnapshot(env, args[0], maxMem)
			if err != nil {
				return err
			}
			after, err := readSnapshot(env, args[1], maxMem)
			if err != nil {
				return err
			}
			return writeOutput(env, output, func(w io.Writer) error {
				return safely(func() error {
					d := memory.Compare(before, after, top)
					if format == "json" {
						return memview.JSON(w, d)
					}
					return memview.DiffText(w, d, displayName(args[0]), displayName(args[1]),
						memview.Options{Lang: lang, Stacks: stacks})
				})
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&format, "format", "f", "text", "output format: text or json")
	f.StringVarP(&output, "output", "o", "", "write the output to `FILE` instead of standard output")
	f.IntVar(&top, "top", 10, "how many sites to list")
	f.BoolVar(&stacks, "stacks", false, "text: print the full stack of each listed site")
	f.StringVar(&lang, "lang", "en", "language of text output: en or zh")
	f.StringVar(&maxMemory, "max-memory", "4GiB", maxMemoryUsage+" (each file)")
	return cmd
}

func hasDevice(s *snapshot.Snapshot, d int) bool {
	for i := range s.Segments {
		if s.Segments[i].Device == d {
			return true
		}
	}
	return false
}

func devicesOf(s *snapshot.Snapshot) string {
	seen := map[int]bool{}
	var ds []int
	for i := range s.Segments {
		if d := s.Segments[i].Device; !seen[d] {
			seen[d] = true
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return "none"
	}
	sort.Ints(ds)
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = strconv.Itoa(d)
	}
	return strings.Join(parts, ", ")
}

func displayName(path string) string {
	if path == "-" {
		return "(standard input)"
	}
	return path
}

// parseMaxMemory reads --max-memory ("" is the default cap).
func parseMaxMemory(v string) (int64, error) {
	n, err := parseSizeFlag("--max-memory", v)
	return int64(n), err
}

// readSnapshot reads the snapshot at path ("-": standard input), holding at
// most maxMem bytes while it decodes. Every failure is a usage error naming
// the file.
func readSnapshot(env *IO, path string, maxMem int64) (s *snapshot.Snapshot, err error) {
	var r io.Reader
	if path == "-" {
		r = env.In
	} else {
		st, err := os.Stat(path)
		if err != nil {
			return nil, usageErr("%s: %v", path, unwrapPath(err))
		}
		if st.IsDir() {
			return nil, usageErr("%s: is a directory; give a snapshot file", path)
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, usageErr("%s: %v", path, unwrapPath(err))
		}
		defer f.Close()
		r = f
	}
	err = safely(func() error {
		var err error
		s, err = snapshot.ReadWith(r, snapshot.Options{MaxMemory: maxMem}) // it buffers its input itself
		return err
	})
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return nil, err
		}
		msg := strings.TrimPrefix(err.Error(), "snapshot: ")
		return nil, usageErr("%s: %s", displayName(path), msg)
	}
	return s, nil
}

// writeOutput runs write on standard output, or on the file named by
// output (created, and removed again when the write fails).
func writeOutput(env *IO, output string, write func(io.Writer) error) error {
	if output == "" || output == "-" {
		if err := write(env.Out); err != nil {
			return outputErr(err)
		}
		return nil
	}
	f, err := os.Create(output)
	if err != nil {
		return usageErr("-o %s: %v", output, unwrapPath(err))
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(output)
		return outputErr(err)
	}
	return nil
}

func outputErr(err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{ExitUsage, fmt.Errorf("writing output: %w", err)}
}

// safely turns a panic in the reader or an analysis into an internal
// error, so a damaged file ends with a message and not a stack dump.
func safely(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &exitError{ExitInternal, fmt.Errorf("internal error: %v (please report this with the snapshot file)", p)}
		}
	}()
	return f()
}
