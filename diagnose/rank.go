package diagnose

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Rank prefixes and fields that say which process of a distributed job
// printed a line. Only the head of a line is searched: these prefixes come
// first, and the rest of a long line must not pay for them.
var (
	// "[rank3]:" (torchrun's per-rank prefix since 2.2), "[default3]:"
	// (torchrun --tee with the default role), and "[Rank 3]" inside
	// ProcessGroupNCCL messages.
	reRankPrefix = regexp.MustCompile(`^\s*\[(?:rank|default)(\d{1,6})\]:|\[(?:PG [^\]]*)?Rank (\d{1,6})\]`)
	// NCCL's "host:pid:tid [cudaDev]" prefix.
	reNCCLPrefix = regexp.MustCompile(`^\s*(?:\[(?:rank|default)\d+\]:\s*)?([\w.-]+):(\d+):\d+ \[(\d+)\] NCCL`)
	// NCCL's init line names the rank of that host:pid.
	reNCCLInit = regexp.MustCompile(`\brank (\d{1,6}) nranks (\d{1,6})\b`)
	// Lightning's "GLOBAL_RANK: 3", a file's own rank.
	reGlobalRank = regexp.MustCompile(`\bGLOBAL_RANK: (\d{1,6})\b`)
	// torchrun: "failed (exitcode: 1) local_rank: 2 (pid: 139832) of binary"
	// and the error table under "Root Cause (first observed failure):"
	// with "rank : 3 (local_rank: 3)".
	reTorchrunFailed = regexp.MustCompile(`failed \(exitcode: -?\d+\) local_rank: \d{1,6} \(pid: (\d+)\)`)
	reTorchrunRank   = regexp.MustCompile(`^\s*(?:\[\w+\]:\s*)?rank\s*:\s*(\d{1,6}) \(local_rank: \d+\)`)
	// A file named for its rank: rank3.log, rank_3.txt, worker-rank-03.log.
	reFileRank = regexp.MustCompile(`(?i)(?:^|[^a-z])rank[_-]?(\d{1,6})(?:[^0-9]|$)`)
)

// What ProcessGroupNCCL prints about the collectives a rank waited in
// (wording from torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp and
// TraceUtils.h). These say which rank the others waited for.
var (
	// The watchdog's "WorkNCCL(SeqNum=4410, OpType=ALLREDUCE, ...)".
	reWorkSeq = regexp.MustCompile(`WorkNCCL\(SeqNum=(\d{1,19}), OpType=(\w+)`)
	// "Exception (either an error or timeout) detected by watchdog at
	// work: 12, last enqueued NCCL work: 14, last completed NCCL work: 11."
	// and "Timeout at NCCL work: 12, ..." (watchdog, the work it found
	// failed first); "Received a dump signal ... Last enqueued NCCL work:
	// 12, last completed NCCL work: 11." (heartbeat monitor).
	reEnqueued = regexp.MustCompile(`(?i)(?:at (?:NCCL )?work: (\d{1,19}), )?last enqueued NCCL work: (-?\d{1,19}), last completed NCCL work: (-?\d{1,19})`)
	// The process group of a ProcessGroupNCCL log prefix: "[PG ID 0 PG GUID
	// 0(default_pg) Rank 1]" (2.4 on), "[PG 0 Rank 2]" (2.2, 2.3).
	rePG = regexp.MustCompile(`\[PG (?:ID )?(\d{1,9})[ \]]`)
	// The TORCH_NCCL_DESYNC_DEBUG report: "ranks [2] are the lagging ranks
	// that caused this timeout", "[2] joined but didn't finish collective
	// #12", "[2] finished collective #11, but didn't join collective #12".
	reLagging = regexp.MustCompile(`ranks \[([\d, ]{1,1000})\] are the lagging ranks that caused this timeout|\[([\d, ]{1,1000})\] (?:joined but didn't finish collective #\d+|finished collective #\d+, but didn't join collective #\d+)`)
)

const rankHead = 200 // bytes of a line searched for a rank prefix

// parseRank returns the rank a log line names in its prefix: "[rank3]:",
// "[default3]:" or "[Rank 3]". ok is false when the line names none.
func parseRank(line []byte) (rank int, ok bool) {
	head := line[:min(len(line), rankHead)]
	m := reRankPrefix.FindSubmatch(head)
	if m == nil {
		return 0, false
	}
	d := m[1]
	if d == nil {
		d = m[2]
	}
	n, err := strconv.Atoi(string(d))
	return n, err == nil
}

// torchrunRank reads the prefix torchrun puts on every line of a rank,
// "[rank3]:" or "[default3]:", without a regex: on a log where 1,000
// ranks print the same error, it is read on every repeat. It is exactly
// the first branch of reRankPrefix, which wins wherever it matches (it
// starts the line); ok is false on anything else, left to parseRank.
func torchrunRank(line []byte) (int, bool) {
	head := line[:min(len(line), rankHead)]
	i := 0
	for i < len(head) && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\f' || head[i] == '\r') {
		i++
	}
	rest := head[i:]
	switch {
	case bytes.HasPrefix(rest, []byte("[rank")):
		rest = rest[5:]
	case bytes.HasPrefix(rest, []byte("[default")):
		rest = rest[8:]
	default:
		return 0, false
	}
	n, d := 0, 0
	for d < len(rest) && d < 7 && rest[d]-'0' < 10 {
		n = n*10 + int(rest[d]-'0')
		d++
	}
	if d == 0 || d > 6 || !bytes.HasPrefix(rest[d:], []byte("]:")) {
		return 0, false
	}
	return n, true
}

// fileRankOf returns the rank a file's name carries ("logs/rank3.log"). Only
// the base name counts: "runs/lora-rank-64/node0.log" names no rank.
func fileRankOf(name string) (int, bool) {
	m := reFileRank.FindStringSubmatch(filepath.Base(filepath.ToSlash(name)))
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// maxRanks bounds the ranks tracked: larger jobs exist, but a report that
// lists more is no longer read.
const maxRanks = 4096

// rankTracker follows what a log says about ranks beyond prefixes: which
// NCCL process is which rank, and which rank torchrun saw fail first.
type rankTracker struct {
	ncclPid      map[string]ncclRank // "host:pid" -> rank
	pidRank      map[string]ncclRank // pid -> rank, from NCCL init lines
	fileRank     int                 // rank of the current file (-1 unknown)
	globalRank   int                 // the one GLOBAL_RANK this input printed, -1 none, -2 several
	inRootTable  int                 // lines left to find the rank under "Root Cause"
	torchrunRoot int                 // rank under "Root Cause (first observed failure)", -1
	torchrunPid  string
	worldSize    int // the largest nranks an NCCL init line printed, 0 unknown

	// What the watchdog lines say, by process group and rank.
	timeoutSeq map[string]map[int]int64 // SeqNum of the first collective that timed out ("at work: N")
	timeoutOp  map[string]string        // its OpType, by "pg/seq", where the WorkNCCL line says
	enqueued   map[string]map[int]int64 // last enqueued collective
	lagging    []int                    // ranks the desync report names

	files int      // inputs started (Collector.File)
	hosts []string // by input: the one host its lines name, "" none, "\x00" several
}

// ncclRank is a process's rank in one communicator of nranks. A process
// inits the world communicator and then sub-communicators (tensor,
// pipeline, data parallel) where it has other ranks: the largest
// communicator is the world, whose rank is the global one.
type ncclRank struct{ rank, nranks int }

func newRankTracker() *rankTracker {
	return &rankTracker{ncclPid: map[string]ncclRank{}, pidRank: map[string]ncclRank{}, fileRank: -1,
		globalRank: -1, torchrunRoot: -1, timeoutSeq: map[string]map[int]int64{}, timeoutOp: map[string]string{},
		enqueued: map[string]map[int]int64{}}
}

// newFile resets what belongs to one input.
func (t *rankTracker) newFile(name string) {
	t.fileRank, t.globalRank = -1, -1
	t.files++
	if r, ok := fileRankOf(name); ok {
		t.fileRank = r
	}
}

// rankLiterals are the strings line looks for: a line without any of them
// changes nothing, unless pending.
var rankLiterals = []string{" nranks ", "GLOBAL_RANK: ", "local_rank", rootCauseHeader,
	"last enqueued NCCL work", "lagging ranks", "collective #", "WorkNCCL(SeqNum="}

const rootCauseHeader = "Root Cause (first observed failure)"

// pending: the tracker is reading torchrun's error table and needs the
// next line whatever it holds.
func (t *rankTracker) pending() bool { return t.inRootTable > 0 }

// line reads the facts a line gives about ranks; cheap on other lines.
func (t *rankTracker) line(text []byte) {
	if bytes.Contains(text, []byte(" nranks ")) && len(t.ncclPid) < maxRanks {
		if p := reNCCLPrefix.FindSubmatch(text); p != nil {
			if m := reNCCLInit.FindSubmatch(text); m != nil {
				r, _ := strconv.Atoi(string(m[1]))
				n, _ := strconv.Atoi(string(m[2]))
				hp := string(p[1]) + ":" + string(p[2])
				if old, ok := t.ncclPid[hp]; !ok || n > old.nranks {
					t.ncclPid[hp] = ncclRank{r, n}
				}
				if old, ok := t.pidRank[string(p[2])]; !ok || n > old.nranks {
					t.pidRank[string(p[2])] = ncclRank{r, n}
				}
				t.worldSize = max(t.worldSize, n)
			}
		}
	}
	// One GLOBAL_RANK in an input names that input's rank; a merged log
	// prints several, and then names none.
	if bytes.Contains(text, []byte("GLOBAL_RANK: ")) && t.globalRank != -2 {
		if m := reGlobalRank.FindSubmatch(text); m != nil {
			g, _ := strconv.Atoi(string(m[1]))
			switch t.globalRank {
			case -1:
				t.globalRank = g
				if t.fileRank < 0 {
					t.fileRank = g
				}
			case g:
			default:
				if t.fileRank == t.globalRank {
					t.fileRank = -1
				}
				t.globalRank = -2
			}
		}
	}
	if bytes.Contains(text, []byte("local_rank")) {
		if t.torchrunPid == "" {
			if m := reTorchrunFailed.FindSubmatch(text); m != nil {
				t.torchrunPid = string(m[1])
			}
		}
		if t.inRootTable > 0 {
			if m := reTorchrunRank.FindSubmatch(text); m != nil {
				t.torchrunRoot, _ = strconv.Atoi(string(m[1]))
				t.inRootTable = 0
			}
		}
	}
	t.collective(text)
	t.host(text)
	if t.inRootTable > 0 {
		t.inRootTable-- // the rank is in the table's first lines or not at all
	}
	if bytes.Contains(text, []byte(rootCauseHeader)) && t.torchrunRoot < 0 {
		t.inRootTable = 8
	}
}

// collective reads what a watchdog, heartbeat or desync line says about
// the collective its rank waited in.
func (t *rankTracker) collective(text []byte) {
	seq := bytes.Contains(text, []byte("WorkNCCL(SeqNum="))
	enq := bytes.Contains(text, []byte("enqueued NCCL work"))
	lag := bytes.Contains(text, []byte("lagging ranks")) || bytes.Contains(text, []byte("collective #"))
	if !seq && !enq && !lag {
		return
	}
	if lag {
		if m := reLagging.FindSubmatch(text); m != nil {
			list := m[1]
			if list == nil {
				list = m[2]
			}
			for _, f := range strings.Split(string(list), ",") {
				if r, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && !slices.Contains(t.lagging, r) && len(t.lagging) < maxRanks {
					t.lagging = append(t.lagging, r)
				}
			}
		}
		return
	}
	r := t.rankOf(text, false)
	if r < 0 {
		return
	}
	pg := ""
	if m := rePG.FindSubmatch(text[:min(len(text), rankHead)]); m != nil {
		pg = string(m[1])
	}
	// Only the first of a rank counts: later timeouts are of collectives
	// queued behind the first. The watchdog's WorkNCCL line carries no
	// process group; its SeqNum is kept apart (group "?") and used where
	// no line with a group says.
	if seq {
		if m := reWorkSeq.FindSubmatch(text); m != nil {
			key := pg
			if key == "" {
				key = "?"
			}
			n, err := strconv.ParseInt(string(m[1]), 10, 64)
			if err == nil && setOnce(t.timeoutSeq, key, r, n) {
				t.timeoutOp[string(m[1])] = string(m[2])
			}
		}
	}
	if enq {
		if m := reEnqueued.FindSubmatch(text); m != nil {
			if m[1] != nil {
				if n, err := strconv.ParseInt(string(m[1]), 10, 64); err == nil {
					setOnce(t.timeoutSeq, pg, r, n)
				}
			}
			if n, err := strconv.ParseInt(string(m[2]), 10, 64); err == nil {
				setOnce(t.enqueued, pg, r, n)
			}
		}
	}
}

// Host names a line gives: a syslog or journal kernel line ("Nov 21
// 10:41:07 gpu-node-07 kernel: NVRM: Xid ...") and NCCL's "host:pid:tid"
// prefix.
var reKernelHost = regexp.MustCompile(`^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d)?) ([\w.-]+) kernel:`)

// host notes the host a line names for the current input.
func (t *rankTracker) host(text []byte) {
	var h []byte
	head := text[:min(len(text), rankHead)]
	if bytes.Contains(head, []byte(" kernel:")) {
		if m := reKernelHost.FindSubmatch(head); m != nil {
			h = m[1]
		}
	} else if bytes.Contains(head, []byte(" NCCL ")) {
		if m := reNCCLPrefix.FindSubmatch(head); m != nil {
			h = m[1]
		}
	}
	if h == nil {
		return
	}
	i := max(t.files-1, 0) // the current input; 0 when File was never called
	if i >= maxFiles {
		return
	}
	for len(t.hosts) <= i {
		t.hosts = append(t.hosts, "")
	}
	cur := &t.hosts[i]
	switch *cur {
	case "":
		*cur = string(h)
	case string(h), "\x00":
	default:
		*cur = "\x00"
	}
}

// hostOf is the one host input i names, or "" when it names none or
// several.
func (t *rankTracker) hostOf(i int) string {
	if i < 0 || i >= len(t.hosts) || t.hosts[i] == "\x00" {
		return ""
	}
	return t.hosts[i]
}

// setOnce records v for rank r of group pg unless one is recorded; it
// reports whether it recorded.
func setOnce(m map[string]map[int]int64, pg string, r int, v int64) bool {
	g := m[pg]
	if g == nil {
		g = map[int]int64{}
		m[pg] = g
	}
	if _, ok := g[r]; ok || len(g) >= maxRanks {
		return false
	}
	g[r] = v
	return true
}

// rankOf returns the rank of a line: its prefix, else the rank of the
// NCCL process printing it, else the file's rank; -1 when unknown. plain
// reads the prefix with the regex alone.
func (t *rankTracker) rankOf(text []byte, plain bool) int {
	if r, ok := torchrunRank(text); ok && !plain {
		return r
	}
	if r, ok := parseRank(text); ok {
		return r
	}
	if bytes.Contains(text[:min(len(text), rankHead)], []byte(" NCCL")) {
		if p := reNCCLPrefix.FindSubmatch(text); p != nil {
			if r, ok := t.ncclPid[string(p[1])+":"+string(p[2])]; ok {
				return r.rank
			}
		}
	}
	return t.fileRank
}

// firstFailed is the rank torchrun names as the first observed failure,
// or the rank of the pid it reported failed, or -1.
func (t *rankTracker) firstFailed() (int, string, string) {
	if t.torchrunRoot >= 0 {
		return t.torchrunRoot, "torchrun's error summary names it as the first observed failure",
			"torchrun 的错误汇总把它列为最先观察到的失败"
	}
	if r, ok := t.pidRank[t.torchrunPid]; ok && t.torchrunPid != "" {
		return r.rank, "torchrun reported its process, pid " + t.torchrunPid + ", as the failed one",
			"torchrun 报告失败的正是它的进程（pid " + t.torchrunPid + "）"
	}
	return -1, "", ""
}

// RankSummary says, for a distributed job, which rank failed first and
// which ranks only waited for it. A rank is blamed only for an error of its
// own: one that is not a collective timeout, a teardown, a peer seen
// exiting or the launcher's report (kb.TagWaiter), nor caused only by such
// lines. A rank that printed only those waited for another.
type RankSummary struct {
	Seen        []int `json:"seen"`
	Failed      []int `json:"failed"` // ranks that printed an error of their own
	FirstFailed *int  `json:"first_failed,omitempty"`
	OnlyWaited  []int `json:"only_waited"`
	// OnlyWaiters: no rank printed an error of its own; every rank with an
	// error only waited for another.
	OnlyWaiters bool `json:"only_waiters,omitempty"`
	// PointedAt is the ranks the waiters' own lines point at (PyTorch's
	// desync report, the last collective each rank enqueued, the collective
	// each timed out in), with why; empty when the log does not say.
	PointedAt    []int  `json:"pointed_at,omitempty"`
	PointedWhy   string `json:"pointed_why,omitempty"`
	PointedWhyZh string `json:"pointed_why_zh,omitempty"`
	Reason       string `json:"reason"`
	ReasonZh     string `json:"reason_zh"`
	Truncated    bool   `json:"truncated,omitempty"` // a diagnosis was seen on more than 4096 ranks; the rest are not listed
}

// waits reports whether a diagnosis is what a rank prints while or after
// waiting for another: tagged so, or caused only by such diagnoses.
func waits(d *Diagnosis, idx map[string]*Diagnosis) bool {
	if d.entry.IsWaiter() {
		return true
	}
	if len(d.CausedBy) == 0 {
		return false
	}
	for _, id := range d.CausedBy {
		if c := idx[id]; c == nil || !c.entry.IsWaiter() {
			return false
		}
	}
	return true
}

// rankSummary is nil when no diagnosed line named a rank and torchrun
// named none.
func (c *Collector) rankSummary(ds []*Diagnosis) *RankSummary {
	seen, waited := map[int]bool{}, map[int]bool{}
	failed := map[int]rankHit{}
	truncated := false
	idx := make(map[string]*Diagnosis, len(ds))
	for _, d := range ds {
		idx[d.ID] = d
	}
	for _, d := range ds {
		g := c.groups[d.entryIdx]
		truncated = truncated || len(g.ranks) >= maxRanks
		w := waits(d, idx)
		for r, h := range g.ranks {
			seen[r] = true
			switch {
			case d.entry.IsWarning():
			case w:
				waited[r] = true
			default:
				if old, ok := failed[r]; !ok || earlier(h, old) {
					failed[r] = h
				}
			}
		}
	}
	tr, trWhy, trWhyZh := c.ranks.firstFailed()
	if len(seen) == 0 && tr < 0 {
		return nil
	}
	s := &RankSummary{Seen: slices.Sorted(maps.Keys(seen)), Failed: []int{}, OnlyWaited: []int{}, Truncated: truncated}
	for r := range failed {
		s.Failed = append(s.Failed, r)
	}
	slices.Sort(s.Failed)
	// torchrun names the first process to exit. A rank whose watchdog fired
	// first exits first: when that rank printed only what waiters print, it
	// is not the one that failed.
	var pre, preZh string
	if _, own := failed[tr]; tr >= 0 && waited[tr] && !own {
		pre = fmt.Sprintf("torchrun names rank %d as the first observed failure, but rank %d only printed a timeout or teardown: it exited first, it did not fail first; ", tr, tr)
		preZh = fmt.Sprintf("torchrun 把 rank %d 列为最先观察到的失败，但 rank %d 只打印了超时或终止信息：它只是最先退出，并非最先失败；", tr, tr)
		tr = -1
	}
	s.PointedAt, s.PointedWhy, s.PointedWhyZh = c.ranks.pointedAt(waited, failed)
	// Only waited: printed what follows a failure (timeouts, teardown) and
	// no error of its own, and is not the rank torchrun names.
	for _, r := range slices.Sorted(maps.Keys(waited)) {
		if _, ok := failed[r]; !ok && r != tr {
			s.OnlyWaited = append(s.OnlyWaited, r)
		}
	}
	switch {
	case tr >= 0:
		s.FirstFailed = &tr
		s.Reason, s.ReasonZh = trWhy, trWhyZh
		if !slices.Contains(s.Failed, tr) && len(s.Failed) > 0 {
			s.Reason += fmt.Sprintf("; the root error was printed with the prefix of rank(s) %s", joinInts(s.Failed))
			s.ReasonZh += fmt.Sprintf("；根因错误带有 rank %s 的前缀", joinInts(s.Failed))
		}
	case len(s.Failed) == 1:
		f := s.Failed[0]
		s.FirstFailed = &f
		s.Reason = fmt.Sprintf("only rank %d printed an error of its own", f)
		s.ReasonZh = fmt.Sprintf("只有 rank %d 打印了它自己的错误", f)
	case len(s.Failed) > 1:
		f := s.Failed[0]
		for _, r := range s.Failed[1:] {
			if earlier(failed[r], failed[f]) {
				f = r
			}
		}
		s.FirstFailed = &f
		h := failed[f]
		if h.when.kind != 0 {
			s.Reason = fmt.Sprintf("rank %d printed the root error first (by timestamp) of ranks %s", f, joinInts(s.Failed))
			s.ReasonZh = fmt.Sprintf("在 rank %s 中，rank %d 最先打印根因错误（按时间戳）", joinInts(s.Failed), f)
		} else {
			s.Reason = fmt.Sprintf("rank %d printed the root error first (by position in the log) of ranks %s", f, joinInts(s.Failed))
			s.ReasonZh = fmt.Sprintf("在 rank %s 中，rank %d 最先打印根因错误（按日志中的位置）", joinInts(s.Failed), f)
		}
	case len(s.OnlyWaited) > 0:
		s.OnlyWaiters = true
		s.Reason = fmt.Sprintf("no rank printed an error of its own: rank(s) %s only timed out or were torn down waiting for another", joinInts(s.OnlyWaited))
		s.ReasonZh = fmt.Sprintf("没有 rank 打印它自己的错误：rank %s 只是在等待其他 rank 时超时或被终止", joinInts(s.OnlyWaited))
		if len(s.PointedAt) > 0 {
			s.Reason += fmt.Sprintf("; their lines point at rank(s) %s: %s", joinInts(s.PointedAt), s.PointedWhy)
			s.ReasonZh += fmt.Sprintf("；它们的日志指向 rank %s：%s", joinInts(s.PointedAt), s.PointedWhyZh)
		} else {
			s.Reason += "; the log does not say which rank they waited for (its log may be missing)"
			s.ReasonZh += "；日志没有说明它们在等哪个 rank（那个 rank 的日志可能缺失）"
		}
		s.Reason, s.ReasonZh = pre+s.Reason, preZh+s.ReasonZh
		return s
	default:
		s.Reason = "no rank printed an error"
		s.ReasonZh = "没有 rank 打印错误"
	}
	s.Reason, s.ReasonZh = pre+s.Reason, preZh+s.ReasonZh
	if len(s.OnlyWaited) > 0 {
		s.Reason += fmt.Sprintf("; rank(s) %s only timed out or were torn down waiting for it", joinInts(s.OnlyWaited))
		s.ReasonZh += fmt.Sprintf("；rank %s 只是在等待它时超时或被终止", joinInts(s.OnlyWaited))
	}
	return s
}

// pointedAt reads which ranks the waiters waited for, from the strongest
// statement down: PyTorch's own desync report; the last collective each
// rank enqueued (a rank behind the others never joined the one they wait
// in); the collective each rank timed out in (the ranks out of step with
// the rest); in the default group, ranks of the job that printed no
// timeout where the others all timed out in one collective. failed ranks
// printed errors of their own and are not named as missing.
func (t *rankTracker) pointedAt(waited map[int]bool, failed map[int]rankHit) ([]int, string, string) {
	if len(t.lagging) > 0 {
		rs := slices.Sorted(slices.Values(t.lagging))
		return rs, "PyTorch's desync report (TORCH_NCCL_DESYNC_DEBUG) names them as the lagging ranks",
			"PyTorch 的失步报告（TORCH_NCCL_DESYNC_DEBUG）把它们列为落后的 rank"
	}
	for _, pg := range slices.Sorted(maps.Keys(t.enqueued)) {
		g := t.enqueued[pg]
		lo, hi := extremes(g)
		if len(g) < 2 || lo == hi {
			continue
		}
		// Ranks enqueue ahead of each other by a few collectives; only a
		// rank that never enqueued the collective another timed out in is
		// behind. Without a timed-out collective, the ones furthest behind.
		var behind []int
		wait, known := int64(0), false
		if w := t.timeoutSeq[pg]; len(w) > 0 {
			wait, _ = extremes(w)
			known = true
			for r, v := range g {
				if v < wait {
					behind = append(behind, r)
				}
			}
			slices.Sort(behind)
		} else {
			behind = ranksWith(g, lo)
		}
		if len(behind) == 0 || len(behind) == len(g) {
			continue
		}
		if known {
			return behind, fmt.Sprintf("their last enqueued collective is %d%s, before collective %d that rank(s) %s timed out in: they never joined it",
					lo, pgSuffix(pg), wait, joinInts(ranksWith(t.timeoutSeq[pg], wait))),
				fmt.Sprintf("它们最后入队的集合通信是 %d%s，早于 rank %s 超时所在的集合通信 %d：它们从未加入该通信",
					lo, pgSuffixZh(pg), joinInts(ranksWith(t.timeoutSeq[pg], wait)), wait)
		}
		return behind, fmt.Sprintf("their last enqueued collective is %d%s while others enqueued up to %d: they are behind the others",
				lo, pgSuffix(pg), hi),
			fmt.Sprintf("它们最后入队的集合通信是 %d%s，而其他 rank 已入队到 %d：它们落后于其他 rank", lo, pgSuffixZh(pg), hi)
	}
	for _, pg := range slices.Sorted(maps.Keys(t.timeoutSeq)) {
		g := t.timeoutSeq[pg]
		lo, hi := extremes(g)
		if len(g) < 2 || lo == hi {
			continue
		}
		// The ranks out of step are the fewer; on a tie, those in the
		// earlier collective.
		counts := map[int64]int{}
		for _, v := range g {
			counts[v]++
		}
		common := lo
		for v, n := range counts {
			if n > counts[common] || (n == counts[common] && v > common) {
				common = v
			}
		}
		var odd []int
		for r, v := range g {
			if v != common {
				odd = append(odd, r)
			}
		}
		slices.Sort(odd)
		return odd, fmt.Sprintf("they timed out in a different collective than rank(s) %s, which timed out in collective %d%s: they are out of step with the others",
				joinInts(ranksWith(g, common)), common, pgSuffix(pg)),
			fmt.Sprintf("它们超时所在的集合通信与 rank %s（在集合通信 %d%s 超时）不同：它们与其他 rank 步调不一致", joinInts(ranksWith(g, common)), common, pgSuffixZh(pg))
	}
	if len(failed) > 0 || t.worldSize < 2 || t.worldSize > maxRanks {
		return nil, "", ""
	}
	for _, pg := range []string{"?", "", "0"} {
		g := t.timeoutSeq[pg]
		if len(g) == 0 {
			continue
		}
		var missing []int
		for r := range t.worldSize {
			if _, ok := g[r]; !ok && !waited[r] {
				missing = append(missing, r)
			}
		}
		// Only where most ranks speak: one rank's file alone says nothing
		// of the others.
		if len(missing) == 0 || len(missing) >= len(g) {
			continue
		}
		var seq int64
		for _, v := range g {
			seq = v
		}
		if lo, hi := extremes(g); lo != hi {
			continue
		}
		op := ""
		if o := t.timeoutOp[strconv.FormatInt(seq, 10)]; o != "" {
			op = " (" + o + ")"
		}
		return missing, fmt.Sprintf("of the %d ranks (NCCL's nranks), every other one timed out in collective SeqNum %d%s and these printed no timeout: they never joined it",
				t.worldSize, seq, op),
			fmt.Sprintf("在 %d 个 rank（NCCL 的 nranks）中，其余 rank 都在集合通信 SeqNum %d%s 超时，而这些 rank 没有打印超时：它们从未加入该通信", t.worldSize, seq, op)
	}
	return nil, "", ""
}

func extremes(g map[int]int64) (lo, hi int64) {
	first := true
	for _, v := range g {
		if first || v < lo {
			lo = v
		}
		if first || v > hi {
			hi = v
		}
		first = false
	}
	return lo, hi
}

func ranksWith(g map[int]int64, v int64) []int {
	var rs []int
	for r, x := range g {
		if x == v {
			rs = append(rs, r)
		}
	}
	slices.Sort(rs)
	return rs
}

func pgSuffix(pg string) string {
	if pg == "" || pg == "?" {
		return ""
	}
	return " in process group " + pg
}

func pgSuffixZh(pg string) string {
	if pg == "" || pg == "?" {
		return ""
	}
	return "（进程组 " + pg + "）"
}

// earlier orders two first sightings: by timestamp across files when both
// have one, else by position.
func earlier(a, b rankHit) bool {
	if a.at.file != b.at.file && a.when.comparable(b.when) {
		return a.when.ns < b.when.ns
	}
	return a.at.less(b.at)
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ", ")
}
