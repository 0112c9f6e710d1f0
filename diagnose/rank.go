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
}

// ncclRank is a process's rank in one communicator of nranks. A process
// inits the world communicator and then sub-communicators (tensor,
// pipeline, data parallel) where it has other ranks: the largest
// communicator is the world, whose rank is the global one.
type ncclRank struct{ rank, nranks int }

func newRankTracker() *rankTracker {
	return &rankTracker{ncclPid: map[string]ncclRank{}, pidRank: map[string]ncclRank{}, fileRank: -1,
		globalRank: -1, torchrunRoot: -1}
}

// newFile resets what belongs to one input.
func (t *rankTracker) newFile(name string) {
	t.fileRank, t.globalRank = -1, -1
	if r, ok := fileRankOf(name); ok {
		t.fileRank = r
	}
}

// rankLiterals are the strings line looks for: a line without any of them
// changes nothing, unless pending.
var rankLiterals = []string{" nranks ", "GLOBAL_RANK: ", "local_rank", rootCauseHeader}

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
	if t.inRootTable > 0 {
		t.inRootTable-- // the rank is in the table's first lines or not at all
	}
	if bytes.Contains(text, []byte(rootCauseHeader)) && t.torchrunRoot < 0 {
		t.inRootTable = 8
	}
}

// rankOf returns the rank of a line: its prefix, else the rank of the
// NCCL process printing it, else the file's rank; -1 when unknown.
func (t *rankTracker) rankOf(text []byte) int {
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
// which ranks only waited for it (their lines are only of diagnoses caused
// by another, such as collective timeouts and teardown).
type RankSummary struct {
	Seen        []int  `json:"seen"`
	Failed      []int  `json:"failed"`
	FirstFailed *int   `json:"first_failed,omitempty"`
	OnlyWaited  []int  `json:"only_waited"`
	Reason      string `json:"reason"`
	ReasonZh    string `json:"reason_zh"`
	Truncated   bool   `json:"truncated,omitempty"` // a diagnosis was seen on more than 4096 ranks; the rest are not listed
}

// rankSummary is nil when no diagnosed line named a rank and torchrun
// named none.
func (c *Collector) rankSummary(ds []*Diagnosis) *RankSummary {
	seen, waited := map[int]bool{}, map[int]bool{}
	failed := map[int]rankHit{}
	truncated := false
	for _, d := range ds {
		g := c.groups[d.entryIdx]
		truncated = truncated || len(g.ranks) >= maxRanks
		for r, h := range g.ranks {
			seen[r] = true
			switch {
			case d.entry.IsWarning():
			case d.Root:
				if old, ok := failed[r]; !ok || earlier(h, old) {
					failed[r] = h
				}
			default:
				waited[r] = true
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
	// Only waited: printed what follows a failure (timeouts, teardown) and
	// no root error, and is not the rank torchrun names.
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
		s.Reason = fmt.Sprintf("only rank %d printed the root error", f)
		s.ReasonZh = fmt.Sprintf("只有 rank %d 打印了根因错误", f)
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
	default:
		s.Reason = "no rank printed a root error; the ranks seen only printed what follows one"
		s.ReasonZh = "没有 rank 打印根因错误；出现的 rank 只打印了随之而来的错误"
	}
	if len(s.OnlyWaited) > 0 {
		s.Reason += fmt.Sprintf("; rank(s) %s only timed out or were torn down waiting for it", joinInts(s.OnlyWaited))
		s.ReasonZh += fmt.Sprintf("；rank %s 只是在等待它时超时或被终止", joinInts(s.OnlyWaited))
	}
	return s
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
