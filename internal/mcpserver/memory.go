package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/memory"
	"github.com/gpudx/gpudx/snapshot"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SnapshotIn is analyze_memory_snapshot's input.
type SnapshotIn struct {
	Path           string `json:"path,omitempty" jsonschema:"a snapshot file (pickle from torch.cuda.memory._dump_snapshot, plain or gzip); only when gpudx runs on your machine (gpudx mcp over stdio), refused over HTTP; give path or snapshot_base64"`
	SnapshotBase64 string `json:"snapshot_base64,omitempty" jsonschema:"the snapshot file's bytes in standard base64, at most 64 MiB of base64 text (48 MiB of snapshot); give path or snapshot_base64"`
	Request        string `json:"request,omitempty" jsonschema:"ask whether a request of this size would fit at snapshot time, e.g. 2GiB, 512MB or a byte count (without it, the trace's out-of-memory event is explained)"`
	Capacity       string `json:"capacity,omitempty" jsonschema:"the GPU's total memory, e.g. 80GB (nvidia-smi shows it); tells memory held outside PyTorch apart"`
	Device         *int   `json:"device,omitempty" jsonschema:"the device ordinal request is asked on (default: the one with the most reserved memory); needs request"`
	Top            int    `json:"top,omitempty" jsonschema:"how many allocation sites to list, 1 to 100 (default 10)"`
}

// SnapshotOut is analyze_memory_snapshot's structured output: the
// gpudx mem --format json report, summarised.
type SnapshotOut struct {
	Summary  string          `json:"summary" jsonschema:"one line: the verdict, or the memory in use when there is no out-of-memory event"`
	OOM      *SnapshotOOM    `json:"oom,omitempty" jsonschema:"the out-of-memory event of the trace (or the request asked about): why it could not be served"`
	Devices  []SnapshotDev   `json:"devices" jsonschema:"per device at snapshot time"`
	TopSites []SnapshotSite  `json:"top_sites" jsonschema:"allocation sites holding the most live memory at snapshot time, largest first"`
	Peak     *SnapshotPeak   `json:"peak,omitempty" jsonschema:"the highest memory in use over the trace, with what was alive then"`
	Info     SnapshotInfoOut `json:"info"`
}

// SnapshotOOM explains why a request could not be served.
type SnapshotOOM struct {
	Source                string   `json:"source" jsonschema:"trace (the recorded oom event) or request (the request argument)"`
	Device                int      `json:"device"`
	RequestedBytes        uint64   `json:"requested_bytes"`
	DeviceFreeBytes       *uint64  `json:"device_free_bytes" jsonschema:"what the driver had free; null for a request question"`
	LargestFreeBlockBytes uint64   `json:"largest_free_block_bytes" jsonschema:"largest free block in the pool the request needed"`
	CacheFreeBytes        uint64   `json:"cache_free_bytes" jsonschema:"free memory inside reserved segments of that pool"`
	ReservedBytes         uint64   `json:"reserved_bytes"`
	AllocatedBytes        uint64   `json:"allocated_bytes"`
	OutsideBytes          *uint64  `json:"outside_bytes,omitempty" jsonschema:"memory held outside PyTorch's allocator, when capacity is known"`
	CapacityBytes         *uint64  `json:"capacity_bytes,omitempty"`
	Pool                  string   `json:"pool"`
	Verdict               string   `json:"verdict" jsonschema:"fragmentation, outside_allocator, exceeds_available, live_tensors, fits or unknown"`
	Reason                string   `json:"reason" jsonschema:"why, with the figures"`
	NotTheFix             string   `json:"not_the_fix,omitempty" jsonschema:"what does not help for this verdict (do not try it first)"`
	Fix                   string   `json:"fix" jsonschema:"what to do"`
	Site                  string   `json:"site,omitempty" jsonschema:"the code that made the failing request"`
	Stack                 []string `json:"stack,omitempty" jsonschema:"its stack, innermost first (at most 8 frames)"`
}

// SnapshotDev is one device's figures.
type SnapshotDev struct {
	Device                int     `json:"device"`
	ReservedBytes         uint64  `json:"reserved_bytes" jsonschema:"memory PyTorch's allocator holds from the driver"`
	AllocatedBytes        uint64  `json:"allocated_bytes" jsonschema:"held by live tensors"`
	ActiveBytes           uint64  `json:"active_bytes" jsonschema:"allocated plus blocks freed but still in use by a stream"`
	FreeInReservedBytes   uint64  `json:"free_in_reserved_bytes" jsonschema:"free inside reserved segments"`
	ReleasableBytes       uint64  `json:"releasable_bytes" jsonschema:"free in wholly free segments: what torch.cuda.empty_cache() returns"`
	StrandedBytes         uint64  `json:"stranded_bytes" jsonschema:"free between live blocks: empty_cache() cannot return it"`
	LargestFreeBlockBytes uint64  `json:"largest_free_block_bytes"`
	Fragmentation         float64 `json:"fragmentation" jsonschema:"1 - largest free block / free memory; 0 when nothing is free"`
	Segments              int     `json:"segments"`
	Blocks                int     `json:"blocks"`
	Figures               string  `json:"figures" jsonschema:"the same figures for people"`
}

// SnapshotSite is memory grouped by the code that allocated it.
type SnapshotSite struct {
	Site   string   `json:"site" jsonschema:"innermost user frame: function (file:line)"`
	Bytes  uint64   `json:"bytes"`
	Blocks int      `json:"blocks"`
	Stack  []string `json:"stack" jsonschema:"stack of the site's largest block, innermost first (at most 8 frames)"`
}

// SnapshotPeak is the peak of the trace.
type SnapshotPeak struct {
	Device   int            `json:"device"`
	Bytes    uint64         `json:"bytes"`
	TopSites []SnapshotSite `json:"top_sites"`
}

// SnapshotInfoOut says what the snapshot held.
type SnapshotInfoOut struct {
	Format             string `json:"format"`
	Segments           int    `json:"segments"`
	Blocks             int    `json:"blocks"`
	TraceEvents        int    `json:"trace_events" jsonschema:"0: history was not recorded, so no out-of-memory event or peak"`
	ExpandableSegments *bool  `json:"expandable_segments" jsonschema:"the allocator's expandable_segments setting; null when the file does not say"`
	AllocatorConf      string `json:"allocator_conf,omitempty"`
}

func (h *handlers) addSnapshot(s *mcp.Server) {
	addTool(s, &mcp.Tool{
		Name:  "analyze_memory_snapshot",
		Title: "Explain a PyTorch CUDA memory snapshot",
		Description: `Read a PyTorch CUDA memory snapshot (the pickle torch.cuda.memory._dump_snapshot writes; record history first with torch.cuda.memory._record_memory_history(max_entries=100000)) and say why the out-of-memory error happened and which code holds the memory, as gpudx mem does.
Returns the verdict (fragmentation, memory outside PyTorch's allocator, a request larger than what was available, live tensors) with its figures, what does not help and what does, the failing request's code, per-device allocated/reserved/free/fragmentation figures, the top allocation sites and the peak.
With "request" (a size such as 2GiB) it asks whether that request would fit at snapshot time. The file is decoded as plain data: nothing in it can run.`,
		Annotations: readOnly(),
		InputSchema: h.fileSchema(inputSchema[SnapshotIn]()),
	}, h.snapshot)
}

const maxTop = 100

func (h *handlers) snapshot(ctx context.Context, in SnapshotIn) (*SnapshotOut, string, error) {
	opt := memory.Options{RequestDevice: -1, Top: in.Top}
	var err error
	if opt.Request, err = sizeArg("request", in.Request); err != nil {
		return nil, "", err
	}
	if opt.Capacity, err = sizeArg("capacity", in.Capacity); err != nil {
		return nil, "", err
	}
	switch {
	case in.Top < 0 || in.Top > maxTop:
		return nil, "", fmt.Errorf("top %d is out of range: give 1 to %d", in.Top, maxTop)
	case in.Top == 0:
		opt.Top = 10
	}
	if in.Device != nil {
		if *in.Device < 0 {
			return nil, "", fmt.Errorf("device %d: want a device ordinal, 0 or more", *in.Device)
		}
		if opt.Request == 0 {
			return nil, "", errors.New("device applies to request: give request (a size such as 2GiB) too")
		}
		opt.RequestDevice = *in.Device
	}

	var r io.Reader
	name := "snapshot_base64"
	switch {
	case in.Path != "" && in.SnapshotBase64 != "":
		return nil, "", errors.New("give path or snapshot_base64, not both")
	case in.Path != "":
		f, abs, err := h.openPath("path", in.Path)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		r, name = f, abs
	case in.SnapshotBase64 != "":
		data, err := decodeBase64(in.SnapshotBase64)
		if err != nil {
			return nil, "", err
		}
		r = bytes.NewReader(data)
	default:
		hint := `"snapshot_base64"`
		if h.opt.AllowFiles {
			hint = `"path" (a file) or "snapshot_base64"`
		}
		return nil, "", errors.New("no snapshot: give " + hint)
	}

	snap, rep, err := h.svc.Snapshot(ctx, r, opt)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	if in.Device != nil && !hasDevice(snap, *in.Device) {
		return nil, "", fmt.Errorf("device %d: the snapshot has no segments on cuda:%d (devices: %s)", *in.Device, *in.Device, deviceList(rep))
	}
	out := snapshotOut(rep)
	return out, snapshotText(out), nil
}

// sizeArg reads a size argument such as "2GiB"; "" is 0.
func sizeArg(name, v string) (uint64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	n, ok := facts.ParseSize(v)
	if !ok || n < 1 || n > 1<<62 {
		return 0, fmt.Errorf("%s: want a size such as 2GiB, 512MB or a byte count, got %q", name, v)
	}
	return uint64(n), nil
}

// decodeBase64 accepts standard base64 with or without padding, with line
// breaks or spaces anywhere (as base64 tools wrap it).
func decodeBase64(s string) ([]byte, error) {
	if len(s) > MaxSnapshotBase64 {
		return nil, fmt.Errorf("snapshot_base64 is %d bytes, more than the %d (64 MiB) accepted; a bigger snapshot can be read by path with gpudx mcp over stdio, or posted to gpudx serve's /api/v1/snapshots", len(s), MaxSnapshotBase64)
	}
	clean := strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
			return -1
		}
		return r
	}, s)
	enc := base64.StdEncoding
	if !strings.HasSuffix(clean, "=") && len(clean)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	data, err := enc.DecodeString(clean)
	if err != nil {
		return nil, fmt.Errorf("snapshot_base64 is not valid base64 (%v): encode the file's bytes with standard base64, e.g. base64 -w0 snapshot.pickle", err)
	}
	return data, nil
}

func hasDevice(s *snapshot.Snapshot, d int) bool {
	for i := range s.Segments {
		if s.Segments[i].Device == d {
			return true
		}
	}
	return false
}

func deviceList(rep *memory.Report) string {
	var ds []string
	for _, d := range rep.Devices {
		ds = append(ds, fmt.Sprint(d.Device))
	}
	if len(ds) == 0 {
		return "none"
	}
	return strings.Join(ds, ", ")
}

func snapshotOut(rep *memory.Report) *SnapshotOut {
	out := &SnapshotOut{Devices: []SnapshotDev{}, TopSites: sites(rep.TopSites),
		Info: SnapshotInfoOut{Format: rep.Info.Format, Segments: rep.Info.Segments, Blocks: rep.Info.Blocks,
			TraceEvents: rep.Info.TraceEvents, ExpandableSegments: rep.Info.Expandable, AllocatorConf: rep.Info.AllocatorConf}}
	for _, d := range rep.Devices {
		out.Devices = append(out.Devices, SnapshotDev{Device: d.Device, ReservedBytes: d.ReservedBytes,
			AllocatedBytes: d.AllocatedBytes, ActiveBytes: d.ActiveBytes, FreeInReservedBytes: d.InactiveBytes,
			ReleasableBytes: d.ReleasableBytes, StrandedBytes: d.StrandedBytes, LargestFreeBlockBytes: d.LargestFreeBlockBytes,
			Fragmentation: d.Fragmentation, Segments: d.Segments, Blocks: d.Blocks,
			Figures: fmt.Sprintf("cuda:%d reserved %s · allocated %s · free inside reserved %s (releasable %s, stranded %s) · largest free block %s · fragmentation %.1f%%",
				d.Device, fb(d.ReservedBytes), fb(d.AllocatedBytes), fb(d.InactiveBytes), fb(d.ReleasableBytes),
				fb(d.StrandedBytes), fb(d.LargestFreeBlockBytes), 100*d.Fragmentation)})
	}
	if o := rep.OOM; o != nil {
		out.OOM = &SnapshotOOM{Source: o.Source, Device: o.Device, RequestedBytes: o.RequestedBytes,
			DeviceFreeBytes: o.DeviceFreeBytes, LargestFreeBlockBytes: o.LargestFreeBlockBytes, CacheFreeBytes: o.CacheFreeBytes,
			ReservedBytes: o.ReservedBytes, AllocatedBytes: o.AllocatedBytes, OutsideBytes: o.OutsideBytes,
			CapacityBytes: o.CapacityBytes, Pool: o.Pool, Verdict: o.Verdict, Reason: o.Reason,
			NotTheFix: notTheFix[o.Verdict], Fix: flagsToArgs(o.Fix), Site: o.Site, Stack: frames(o.Frames)}
	}
	if p := rep.Peak; p != nil {
		out.Peak = &SnapshotPeak{Device: p.Device, Bytes: p.Bytes, TopSites: sites(p.TopSites)}
	}
	switch {
	case out.OOM != nil:
		out.Summary = fmt.Sprintf("%s on cuda:%d: %s", strings.ReplaceAll(out.OOM.Verdict, "_", " "), out.OOM.Device, out.OOM.Reason)
	case len(out.Devices) > 0:
		out.Summary = "no out-of-memory event in the trace (give request to ask about a size); " + out.Devices[0].Figures
	default:
		out.Summary = "the snapshot holds no segments: PyTorch had reserved no GPU memory"
	}
	return out
}

// notTheFix says what does not help for a verdict: the first thing people
// try and the reason it cannot work here.
var notTheFix = map[string]string{
	memory.VerdictFragmentation:    "torch.cuda.empty_cache(): it returns only wholly free segments, never free blocks stranded between live ones, and the allocator already did that before raising.",
	memory.VerdictLiveTensors:      "torch.cuda.empty_cache() or allocator settings (expandable_segments, max_split_size_mb): the memory is held by live tensors, not lost to the cache.",
	memory.VerdictOutside:          "shrinking this process's tensors or tuning PyTorch's allocator: the memory is held outside PyTorch's allocator.",
	memory.VerdictExceedsAvailable: "torch.cuda.empty_cache() or allocator settings: no setting or freeing makes a request larger than what the process could get fit.",
}

// flagsToArgs names this tool's arguments where the advice names gpudx
// mem's flags.
func flagsToArgs(s string) string {
	return strings.NewReplacer("pass --capacity", "give capacity", "--capacity", "capacity", "a --request question", "a request question").Replace(s)
}

const maxFrames = 8

func frames(fs []memory.Frame) []string {
	out := []string{}
	for _, f := range fs[:min(len(fs), maxFrames)] {
		switch {
		case f.Filename == "":
			out = append(out, f.Name)
		case f.Line == 0:
			out = append(out, fmt.Sprintf("%s (%s)", f.Name, f.Filename))
		default:
			out = append(out, fmt.Sprintf("%s (%s:%d)", f.Name, f.Filename, f.Line))
		}
	}
	return out
}

func sites(ss []memory.Site) []SnapshotSite {
	out := []SnapshotSite{}
	for _, s := range ss {
		out = append(out, SnapshotSite{Site: s.Site, Bytes: s.Bytes, Blocks: s.Count, Stack: frames(s.Frames)})
	}
	return out
}

func fb(n uint64) string { return facts.FormatBytes(float64(n)) }

func snapshotText(out *SnapshotOut) string {
	var b strings.Builder
	if o := out.OOM; o != nil {
		what := "Out of memory"
		if o.Source == "request" {
			what = "Request"
		}
		fmt.Fprintf(&b, "%s on cuda:%d: %s requested; largest free block %s; reserved %s, allocated %s.\n",
			what, o.Device, fb(o.RequestedBytes), fb(o.LargestFreeBlockBytes), fb(o.ReservedBytes), fb(o.AllocatedBytes))
		fmt.Fprintf(&b, "Verdict: %s: %s\n", o.Verdict, o.Reason)
		if o.NotTheFix != "" {
			fmt.Fprintf(&b, "Do not try first: %s\n", o.NotTheFix)
		}
		fmt.Fprintf(&b, "Try: %s\n", o.Fix)
		if o.Site != "" {
			fmt.Fprintf(&b, "Failing request: %s\n", o.Site)
		}
	} else {
		b.WriteString("No out-of-memory event in the trace; give request (e.g. 2GiB) to ask whether a size fits.\n")
	}
	for _, d := range out.Devices {
		b.WriteString(d.Figures + "\n")
	}
	if len(out.TopSites) > 0 {
		b.WriteString("Who holds the memory:\n")
		for i, s := range out.TopSites[:min(len(out.TopSites), 5)] {
			fmt.Fprintf(&b, "  %d. %s: %s in %d block(s)\n", i+1, s.Site, fb(s.Bytes), s.Blocks)
		}
	}
	return b.String()
}
