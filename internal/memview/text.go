package memview

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/gpudx/gpudx/memory"
)

// Text writes the report for a terminal. Its first screen answers "why did
// this OOM happen and which code holds the memory": a header, the OOM (its
// figures, verdict, failing site and fix), then the top allocation sites.
// The per-device and per-pool figures, the peak and, with Options.Stacks,
// the full stacks follow.
func Text(w io.Writer, r *memory.Report, o Options) error {
	L := lang(o)
	W := o.width()
	var b strings.Builder
	b.WriteString(header(r, o, L, W))
	b.WriteByte('\n')
	if r.OOM != nil {
		oomText(&b, r.OOM, o, L, W)
	} else {
		b.WriteString(wrap(L["nooom"], "", "", W))
	}
	b.WriteByte('\n')
	b.WriteString(L["holders"] + "\n")
	if len(r.TopSites) == 0 {
		b.WriteString("  " + L["noholders"] + "\n")
	} else {
		siteTable(&b, r.TopSites, L, W, "  ")
	}
	// The first table that lists memory without a stack says what that
	// means and how to record it.
	noStack := hasNoStack(r.TopSites)
	if noStack {
		b.WriteString(wrap(L["nostack_why"], "  ", "  ", W))
	}
	for i, d := range r.Devices {
		b.WriteByte('\n')
		deviceText(&b, &d, L, W, i == 0)
	}
	b.WriteByte('\n')
	for _, m := range r.TraceMismatch {
		t := m.Text
		if o.Lang == "zh" && m.TextZH != "" {
			t = m.TextZH
		}
		b.WriteString(wrap(L["note"]+t, "", "  ", W))
	}
	peakText(&b, r.Peak, L, W)
	if r.Peak != nil && !noStack && hasNoStack(r.Peak.TopSites) {
		b.WriteString(wrap(L["nostack_why"], "  ", "  ", W))
	}
	if o.Stacks {
		stacksText(&b, r, L)
	}
	_, err := io.WriteString(w, printable(b.String()))
	return err
}

// printable replaces control characters (other than newlines) and invalid
// UTF-8 with U+FFFD. Frame names and file names come from the snapshot, and
// a shared snapshot must not be able to retitle or clear the terminal that
// prints its report.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if isControl(r) || r == utf8.RuneError {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

func isControl(r rune) bool {
	return (r < 0x20 && r != '\n') || (r >= 0x7f && r < 0xa0)
}

func header(r *memory.Report, o Options, L map[string]string, W int) string {
	name := o.Name
	if name == "" {
		name = "-"
	}
	// A long path keeps its end, where the file name is.
	if room := W - width("gpudx mem: …"); width(name) > room && room > 8 {
		for width(name) > room-1 {
			_, n := utf8.DecodeRuneInString(name)
			name = name[n:]
		}
		name = "…" + name
	}
	parts := []string{name}
	if r.Info.Format != "" {
		parts = append(parts, r.Info.Format)
	}
	switch len(r.Devices) {
	case 0:
		parts = append(parts, L["nodevice"])
	case 1:
		parts = append(parts, fmt.Sprintf(L["device1"], device(r.Devices[0].Device)))
	default:
		ds := make([]string, len(r.Devices))
		for i, d := range r.Devices {
			ds[i] = device(d.Device)
		}
		parts = append(parts, fmt.Sprintf(L["devices"], strings.Join(ds, ", ")))
	}
	parts = append(parts, count(L, "segments", r.Info.Segments)+L["comma"]+count(L, "blocksN", r.Info.Blocks))
	if r.Info.TraceEvents == 1 {
		parts = append(parts, L["event1"])
	} else if r.Info.TraceEvents > 0 {
		parts = append(parts, fmt.Sprintf(L["events"], group(r.Info.TraceEvents)))
	} else {
		parts = append(parts, L["noevents"])
	}
	if r.Info.Expandable != nil {
		v := L["off"]
		if *r.Info.Expandable {
			v = L["on"]
		}
		parts = append(parts, fmt.Sprintf(L["expandable"], v))
	}
	return items(parts, "gpudx mem: ", "  ", W)
}

// count writes n with its noun: the label key's singular form (key+"1")
// when n is 1 and the language has one.
func count(L map[string]string, key string, n int) string {
	if s, ok := L[key+"1"]; ok && n == 1 {
		return s
	}
	return fmt.Sprintf(L[key], group(n))
}

func stream(s uint64) string {
	if s == 0 {
		return "0"
	}
	return fmt.Sprintf("0x%x", s)
}

func verdictName(v string, L map[string]string) string {
	if s, ok := L["v_"+v]; ok {
		return s
	}
	return v
}

func oomText(b *strings.Builder, m *memory.OOM, o Options, L map[string]string, W int) {
	var head []string
	if m.Source == "request" {
		head = []string{fmt.Sprintf(L["oomreq"], size(m.RequestedBytes), device(m.Device))}
	} else {
		head = []string{fmt.Sprintf(L["oom"], device(m.Device))}
		if m.Event >= 0 {
			head = append(head, fmt.Sprintf(L["event"], group(m.Event)))
		}
		head = append(head, when(m.TimeUS))
	}
	b.WriteString(items(head, "", "  ", W))
	figs := []string{fmt.Sprintf(L["requested"], size(m.RequestedBytes), m.Pool, stream(m.Stream))}
	switch {
	case m.DeviceFreeBytes != nil && m.DeviceFreeSource == memory.FreeFromCapacity:
		figs = append(figs, fmt.Sprintf(L["devfree_cap"], size(*m.DeviceFreeBytes)))
	case m.DeviceFreeBytes != nil:
		figs = append(figs, fmt.Sprintf(L["devfree"], size(*m.DeviceFreeBytes)))
	case m.Source == "request":
		figs = append(figs, L["devfree_unknown"])
	}
	figs = append(figs,
		fmt.Sprintf(L["largest"], size(m.LargestFreeBlockBytes)),
		fmt.Sprintf(L["cachefree"], size(m.CacheFreeBytes)),
		fmt.Sprintf(L["reserved"], size(m.ReservedBytes)),
		fmt.Sprintf(L["allocated"], size(m.AllocatedBytes)))
	switch {
	case m.OutsideBytes != nil && m.CapacityBytes != nil:
		figs = append(figs, fmt.Sprintf(L["outside"], size(*m.OutsideBytes), size(*m.CapacityBytes)))
	case m.CapacityBytes != nil:
		figs = append(figs, fmt.Sprintf(L["capacity"], size(*m.CapacityBytes)))
	}
	if m.Replayed {
		figs = append(figs, L["replayed"])
	}
	b.WriteString(items(figs, "  ", "  ", W))
	reason, fix := m.Reason, m.Fix
	if o.Lang == "zh" {
		if m.ReasonZH != "" {
			reason = m.ReasonZH
		}
		if m.FixZH != "" {
			fix = m.FixZH
		}
	}
	v := L["verdict"] + verdictName(m.Verdict, L)
	if reason != "" {
		v += " — " + reason
	}
	b.WriteString(wrap(v, "  ", "    ", W))
	if len(m.Path) > 0 {
		h := L["path_req"]
		if m.Source != "request" {
			h = L["path_trace"]
		}
		b.WriteString("  " + h + "\n")
		for i, s := range m.Path {
			t := s.Text
			if o.Lang == "zh" && s.TextZH != "" {
				t = s.TextZH
			}
			n := fmt.Sprintf("%d. ", i+1)
			b.WriteString(wrap(n+t, "    ", "    "+strings.Repeat(" ", len(n)), W))
		}
	}
	site := siteName(m.Site, L)
	if m.Source != "request" {
		b.WriteString("  " + L["failing"] + clip(site, W-2-width(L["failing"])) + "\n")
	}
	if fix != "" {
		b.WriteString(wrap(L["fix"]+fix, "  ", "    ", W))
	}
}

// siteTable writes sites as numbered rows: bytes, blocks, site.
func siteTable(b *strings.Builder, sites []memory.Site, L map[string]string, W int, pre string) {
	const nW, bW, cW = 3, 11, 7
	fmt.Fprintf(b, "%s%s  %s  %s  %s\n", pre, padLeft("#", nW), padLeft(L["h_bytes"], bW), padLeft(L["h_blocks"], cW), L["h_site"])
	room := W - width(pre) - nW - bW - cW - 6
	for i, s := range sites {
		fmt.Fprintf(b, "%s%s  %s  %s  %s\n", pre, padLeft(fmt.Sprint(i+1), nW), padLeft(size(s.Bytes), bW),
			padLeft(group(s.Count), cW), clip(siteName(s.Site, L), room))
	}
}

// hasNoStack reports whether a site table lists memory without a stack.
func hasNoStack(sites []memory.Site) bool {
	for _, s := range sites {
		if s.Site == memory.NoStack {
			return true
		}
	}
	return false
}

// deviceText writes a device's figures; explain (the first device) says
// what the allocator's words mean where they first appear.
func deviceText(b *strings.Builder, d *memory.Device, L map[string]string, W int, explain bool) {
	f := &d.Figures
	key := func(k string) string {
		if explain {
			return L[k+"x"]
		}
		return L[k]
	}
	head := []string{
		fmt.Sprintf(L["dev_line"], size(f.ReservedBytes)),
		fmt.Sprintf(L["allocated"], size(f.AllocatedBytes)),
		fmt.Sprintf(L["active"], size(f.ActiveBytes)),
	}
	req := fmt.Sprintf(key("requested_r"), size(f.RequestedBytes), size(f.RoundingBytes))
	if !explain {
		head = append(head, req)
	}
	b.WriteString(items(head, device(d.Device)+"  ", "  ", W))
	if explain {
		// A sentence, not an item: it wraps.
		b.WriteString(wrap(req, "  ", "    ", W))
	}
	free := fmt.Sprintf(key("freein"), size(f.InactiveBytes), size(f.ReleasableBytes), size(f.StrandedBytes))
	if explain {
		// A sentence, not an item: it wraps.
		b.WriteString(wrap(free, "  ", "    ", W))
		b.WriteString(items([]string{fmt.Sprintf(L["largest"], size(f.LargestFreeBlockBytes))}, "  ", "  ", W))
	} else {
		b.WriteString(items([]string{free, fmt.Sprintf(L["largest"], size(f.LargestFreeBlockBytes))}, "  ", "  ", W))
	}
	frag := []string{fmt.Sprintf(key("fragm"), percent(f.Fragmentation))}
	// With nothing allocated there is no median live block to compare with.
	if f.TypicalRequestBytes > 0 {
		frag = append(frag, fmt.Sprintf(L["smallfree"], size(f.TypicalRequestBytes), group(f.SmallFreeBlocks)))
	}
	b.WriteString(items(frag, "  ", "  ", W))
	exp := L["noexp"]
	if f.ExpandableSegments > 0 {
		exp = fmt.Sprintf(L["expseg"], group(f.ExpandableSegments), size(f.ExpandableBytes))
	}
	bs := f.BlockStates
	b.WriteString(items([]string{
		fmt.Sprintf(key("segs"), group(f.Segments), group(f.SegmentStates.Full), group(f.SegmentStates.Mixed), group(f.SegmentStates.Free)),
		fmt.Sprintf(L["blocks"], group(f.Blocks), group(bs.ActiveAllocated.Count), group(bs.ActivePendingFree.Count), group(bs.Inactive.Count)),
		exp,
	}, "  ", "  ", W))
	if len(d.Pools) == 0 {
		return
	}
	nameW := width(L["p_pool"])
	for _, p := range d.Pools {
		nameW = max(nameW, width(p.Pool))
	}
	cols := []string{"p_reserved", "p_allocated", "p_free", "p_largest", "p_frag", "p_segs", "p_blocks"}
	widths := []int{10, 10, 10, 12, 6, 6, 7}
	for i, c := range cols {
		widths[i] = max(widths[i], width(L[c]))
	}
	row := func(name string, vals []string) {
		var line strings.Builder
		line.WriteString("  " + padRight(name, nameW))
		for i, v := range vals {
			line.WriteString("  " + padLeft(v, widths[i]))
		}
		b.WriteString(line.String() + "\n")
	}
	hs := make([]string, len(cols))
	for i, c := range cols {
		hs[i] = L[c]
	}
	row(L["p_pool"], hs)
	for _, p := range d.Pools {
		row(p.Pool, []string{size(p.ReservedBytes), size(p.AllocatedBytes), size(p.InactiveBytes),
			size(p.LargestFreeBlockBytes), percent(p.Fragmentation), group(p.Segments), group(p.Blocks)})
	}
}

func peakText(b *strings.Builder, p *memory.Peak, L map[string]string, W int) {
	if p == nil {
		b.WriteString(L["nopeak"] + "\n")
		return
	}
	parts := []string{fmt.Sprintf(L["peak"], size(p.Bytes), device(p.Device))}
	if p.Event >= 0 {
		parts = append(parts, fmt.Sprintf(L["peakat"], group(p.Event)))
	} else {
		parts = append(parts, L["peakend"])
	}
	parts = append(parts, when(p.TimeUS))
	b.WriteString(items(parts, "", "  ", W))
	if len(p.TopSites) > 0 {
		b.WriteString("  " + L["alive"] + "\n")
		siteTable(b, p.TopSites, L, W, "  ")
	}
}

func stacksText(b *strings.Builder, r *memory.Report, L map[string]string) {
	b.WriteString("\n" + L["stacks"] + "\n")
	frames := func(fs []memory.Frame) {
		if len(fs) == 0 {
			b.WriteString("    " + L["nostack"] + "\n")
		}
		for _, f := range fs {
			b.WriteString("    " + frameText(f) + "\n")
		}
	}
	if r.OOM != nil {
		b.WriteString("  " + fmt.Sprintf(L["oomstack"], siteName(r.OOM.Site, L)) + "\n")
		frames(r.OOM.Frames)
	}
	for i, s := range r.TopSites {
		b.WriteString("  " + fmt.Sprintf(L["sitestack"], i+1, siteName(s.Site, L), size(s.Bytes), group(s.Count)) + "\n")
		frames(s.Frames)
	}
}

// DiffText writes what grew between two snapshots: the totals before and
// after, then the sites by change, largest growth first.
func DiffText(w io.Writer, d *memory.Diff, before, after string, o Options) error {
	L := lang(o)
	W := o.width()
	var b strings.Builder
	b.WriteString(fmt.Sprintf(L["diffhead"], before, after) + "\n\n")
	const cW = 12
	lW := max(width(L["d_reserved"]), width(L["d_allocated"]), width(L["d_blocks"]))
	fmt.Fprintf(&b, "  %s  %s  %s  %s\n", padRight("", lW), padLeft(L["d_before"], cW), padLeft(L["d_after"], cW), padLeft(L["d_change"], cW))
	row := func(label string, x, y uint64, sizes bool) {
		bx, ay, ch := fmt.Sprint(x), fmt.Sprint(y), fmt.Sprintf("%+d", int64(y)-int64(x))
		if sizes {
			bx, ay, ch = size(x), size(y), signedSize(int64(y)-int64(x))
		} else {
			bx, ay = group(int(x)), group(int(y))
		}
		fmt.Fprintf(&b, "  %s  %s  %s  %s\n", padRight(label, lW), padLeft(bx, cW), padLeft(ay, cW), padLeft(ch, cW))
	}
	row(L["d_reserved"], d.Before.ReservedBytes, d.After.ReservedBytes, true)
	row(L["d_allocated"], d.Before.AllocatedBytes, d.After.AllocatedBytes, true)
	row(L["d_blocks"], uint64(d.Before.Blocks), uint64(d.After.Blocks), false)
	b.WriteString("\n" + L["growth"] + "\n")
	if len(d.Sites) == 0 {
		b.WriteString("  " + L["nogrowth"] + "\n")
	} else {
		const chW, bW, nW = 11, 10, 13
		fmt.Fprintf(&b, "  %s  %s  %s  %s  %s\n", padLeft(L["d_change"], chW), padLeft(L["d_before"], bW),
			padLeft(L["d_after"], bW), padLeft(L["d_count"], nW), L["h_site"])
		room := W - 2 - chW - 2*bW - nW - 8
		for _, s := range d.Sites {
			n := group(s.CountBefore) + "→" + group(s.CountAfter)
			fmt.Fprintf(&b, "  %s  %s  %s  %s  %s\n", padLeft(signedSize(s.DeltaBytes), chW), padLeft(size(s.BytesBefore), bW),
				padLeft(size(s.BytesAfter), bW), padLeft(n, nW), clip(siteName(s.Site, L), room))
		}
	}
	if o.Stacks && len(d.Sites) > 0 {
		b.WriteString("\n" + L["stacks"] + "\n")
		for i, s := range d.Sites {
			fmt.Fprintf(&b, "  #%d %s\n", i+1, siteName(s.Site, L))
			if len(s.Frames) == 0 {
				b.WriteString("    " + L["nostack"] + "\n")
			}
			for _, f := range s.Frames {
				b.WriteString("    " + frameText(f) + "\n")
			}
		}
	}
	_, err := io.WriteString(w, printable(b.String()))
	return err
}
