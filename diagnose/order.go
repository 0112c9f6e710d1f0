package diagnose

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// edge is why one diagnosis is placed after another: the transition graph
// says so, from one side or the other.
type edge struct {
	from *Diagnosis
	rule said
}

// said is a reason in English and Chinese.
type said struct{ en, zh string }

func (s said) empty() bool { return s.en == "" }

// order sorts diagnoses root first. A diagnosis the transition graph says
// is caused by another present one comes after it, when both were first
// seen in inputs of one job (group, from grouper.groups; nil: one job); so does a CUDA or NCCL
// error seen after a fatal hardware event (hardwareEvent) on the same
// node, and what a hardware event leads to is only linked to it when seen
// after it and on its node. Among the diagnoses
// whose causes are placed, the next is chosen by these rules, in turn:
//  1. errors before warnings (lines healthy runs print too);
//  2. a diagnosis whose known causes the installed versions rule out
//     after the others;
//  3. the one seen first: by the timestamps of their first lines when the
//     report spans several inputs and every diagnosis's first line carries
//     one of the same kind, else by input order and line;
//  4. the id, so that the order never depends on anything else.
//
// These rules form one total order, so the result does not depend on the
// order diagnoses arrive in. A diagnosis is a root when none of its causes
// was placed before it; a cycle in the graph is broken at the diagnosis the
// rules put first, which becomes a root. Why records, for each diagnosis,
// the rules that put it where it is.
func order(ds []*Diagnosis, idx map[string]*Diagnosis, host func(file int) string, group []int) {
	byStamp := len(ds) > 1
	files := map[int]bool{}
	for _, d := range ds {
		files[d.order.file] = true
		if d.when.kind == 0 || d.when.kind != ds[0].when.kind {
			byStamp = false
		}
	}
	byStamp = byStamp && len(files) > 1
	cmpr := func(a, b *Diagnosis) (int, said) { return rank(a, b, byStamp) }
	slices.SortFunc(ds, func(a, b *Diagnosis) int { c, _ := cmpr(a, b); return c })
	preds := map[*Diagnosis][]edge{}
	link := func(from, to *Diagnosis, rule said) {
		if from == nil || to == nil || from == to || slices.ContainsFunc(preds[to], func(e edge) bool { return e.from == from }) {
			return
		}
		if !related(group, from.order.file, to.order.file) {
			return // inputs of different jobs
		}
		preds[to] = append(preds[to], edge{from, rule})
	}
	// What a hardware event leads to happens after it, on its node: a CUDA
	// error printed before it, or on another host, has another cause.
	elsewhere := func(h, d *Diagnosis) bool {
		return d != nil && hardwareEvent(h) && followsHardware(d) && (before(d, h) || !sameNode(h, d, host))
	}
	for _, d := range ds {
		for _, id := range d.entry.TransitionGraph.LeadsTo {
			if elsewhere(d, idx[id]) {
				continue
			}
			link(d, idx[id], said{"the knowledge base says " + d.ID + " leads to " + id,
				"知识库记载 " + d.ID + " 会引发 " + id})
		}
		for _, id := range d.entry.TransitionGraph.PrecededBy {
			if h := idx[id]; h != nil && elsewhere(h, d) {
				continue
			}
			link(idx[id], d, said{"the knowledge base says " + d.ID + " is preceded by " + id,
				"知识库记载 " + d.ID + " 之前通常先出现 " + id})
		}
	}
	// A fatal hardware event is the root of the CUDA and NCCL errors that
	// follow it on that node, whether or not the graph names them.
	for _, h := range ds {
		if !hardwareEvent(h) {
			continue
		}
		for _, d := range ds {
			if d != h && followsHardware(d) && !before(d, h) && sameNode(h, d, host) {
				link(h, d, said{h.ID + " is a hardware event: CUDA and NCCL errors after it on that node follow from it",
					h.ID + " 是硬件事件：同一节点上随后的 CUDA 与 NCCL 错误都由它引起"})
			}
		}
	}
	placed := map[*Diagnosis]bool{}
	out := make([]*Diagnosis, 0, len(ds))
	for len(out) < len(ds) {
		var ready []*Diagnosis
		for _, d := range ds {
			if !placed[d] && !slices.ContainsFunc(preds[d], func(e edge) bool { return !placed[e.from] }) {
				ready = append(ready, d)
			}
		}
		cycle := len(ready) == 0
		if cycle { // a cycle in the graph: break it at the best remaining one
			for _, d := range ds {
				if !placed[d] {
					ready = append(ready, d)
				}
			}
		}
		next := ready[0] // ds is sorted by the rules, so ready is too
		var why []said
		causes := []string{}
		for _, e := range preds[next] {
			if placed[e.from] {
				why = append(why, said{"after " + e.from.ID + ": " + e.rule.en, "排在 " + e.from.ID + " 之后：" + e.rule.zh})
				causes = append(causes, e.from.ID)
			}
		}
		if cycle {
			var in []string
			for _, e := range preds[next] {
				if !placed[e.from] {
					in = append(in, e.from.ID)
				}
			}
			ids := next.ID + " and " + strings.Join(in, ", ")
			why = append(why, said{"the transition graph has a cycle (" + ids +
				" lead to each other); it is broken here, at the one the rules below put first",
				"转移图中有环（" + next.ID + " 与 " + strings.Join(in, ", ") + " 互相引发），在按下列规则排第一的这一项处断开"})
		}
		if len(ready) > 1 {
			if _, rule := cmpr(next, ready[1]); !rule.empty() {
				why = append(why, said{"before " + ready[1].ID + ": " + rule.en, "排在 " + ready[1].ID + " 之前：" + rule.zh})
			}
		}
		slices.Sort(causes)
		next.CausedBy = causes
		if len(causes) == 0 {
			next.CausedBy = nil
		}
		next.Root = len(causes) == 0
		if next.Root {
			why = append([]said{{"root: nothing found before it leads to it", "根因：之前发现的错误都不会引发它"}}, why...)
		}
		if next.FixedInInstalled {
			why = append(why, said{"its known causes are ruled out by the installed versions (" + fixedList(next) + ")",
				"已安装的版本排除了它的已知原因（" + fixedList(next) + "）"})
		}
		for _, w := range why {
			next.Why = append(next.Why, w.en)
			next.WhyZh = append(next.WhyZh, w.zh)
		}
		placed[next] = true
		out = append(out, next)
	}
	copy(ds, out)
}

// rank compares two diagnoses by the ordering rules and says which rule
// decided, worded for a that comes first (c < 0).
func rank(a, b *Diagnosis, byStamp bool) (int, said) {
	if wa, wb := a.entry.IsWarning(), b.entry.IsWarning(); wa != wb {
		if wb {
			return -1, said{"an error comes before a warning (" + b.ID + " is printed by healthy runs too)",
				"错误排在警告之前（正常运行也会打印 " + b.ID + "）"}
		}
		return 1, said{}
	}
	if a.FixedInInstalled != b.FixedInInstalled {
		if b.FixedInInstalled {
			return -1, said{b.ID + "'s known causes are ruled out by the installed versions",
				"已安装的版本排除了 " + b.ID + " 的已知原因"}
		}
		return 1, said{}
	}
	if byStamp && a.when.ns != b.when.ns {
		return cmp.Compare(a.when.ns, b.when.ns), said{"seen earlier by the timestamps of their first lines (" +
			at(a) + " before " + at(b) + ")", "按首次出现行的时间戳更早（" + at(a) + " 早于 " + at(b) + "）"}
	}
	if a.order != b.order {
		if a.order.less(b.order) {
			if a.order.file != b.order.file {
				return -1, said{"seen earlier in the input (" + at(a) + "; " + b.ID + " first at " + at(b) + ", a later input)",
					"在输入中更早出现（" + at(a) + "；" + b.ID + " 首次出现在后面的输入 " + at(b) + "）"}
			}
			return -1, said{"seen first (" + at(a) + "; " + b.ID + " at " + at(b) + ")",
				"先出现（" + at(a) + "；" + b.ID + " 在 " + at(b) + "）"}
		}
		return 1, said{}
	}
	return cmp.Compare(a.ID, b.ID), said{"same line; ordered by id", "同一行；按 id 排序"}
}
func at(d *Diagnosis) string {
	s := "line " + strconv.Itoa(d.FirstLine)
	if d.File != "" {
		s = d.File + ":" + strconv.Itoa(d.FirstLine)
	}
	return s
}

func fixedList(d *Diagnosis) string {
	var parts []string
	for _, n := range d.VersionNotes {
		switch n.Status {
		case FixedInstalled:
			parts = append(parts, fmt.Sprintf("%s %s ≥ %s, the fix", n.Component, n.Installed, n.FixedIn))
		case NotAffected:
			parts = append(parts, fmt.Sprintf("%s %s predates the %s problem", n.Component, n.Installed, n.Affected))
		}
	}
	return strings.Join(parts, "; ")
}

// hardwareEvent: a driver entry for a hardware fault that the knowledge
// base says makes CUDA calls fail (it leads to a cuda/ entry): the GPU
// fell off the bus, an uncorrectable ECC error, a GSP timeout, a lost GPU.
// Corrected errors and bookkeeping events (row remapping recorded) lead to
// none and are not roots of what follows.
func hardwareEvent(d *Diagnosis) bool {
	e := d.entry
	if e.Domain != "driver" || e.RootCauseType != "hardware" || e.IsWarning() {
		return false
	}
	return slices.ContainsFunc(e.TransitionGraph.LeadsTo, func(id string) bool { return strings.HasPrefix(id, "cuda/") })
}

// followsHardware: a CUDA or NCCL error, what a process sees when its GPU
// fails under it.
func followsHardware(d *Diagnosis) bool {
	return (d.entry.Domain == "cuda" || d.entry.Domain == "nccl") && !d.entry.IsWarning()
}

// before: a was seen before b where that can be told: earlier in the same
// input, or by comparable timestamps.
func before(a, b *Diagnosis) bool {
	if a.order.file == b.order.file {
		return a.order.line < b.order.line
	}
	return a.when.comparable(b.when) && a.when.ns < b.when.ns
}

// sameNode: unless both inputs name their host and the hosts differ.
func sameNode(a, b *Diagnosis, host func(int) string) bool {
	if host == nil || a.order.file == b.order.file {
		return true
	}
	ha, hb := host(a.order.file), host(b.order.file)
	return ha == "" || hb == "" || ha == hb
}
