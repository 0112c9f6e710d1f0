package diagnose

import (
	"bytes"
	"path/filepath"
	"regexp"
	"slices"
)

// Inputs of one report are grouped by what they say about the job they
// come from, so that errors of unrelated files are not linked ("b.log
// follows from a.log" when a.log and b.log are two different runs). Two
// inputs are of one job when:
//   - they name the same Slurm job id (SLURM_JOB_ID=, StepId=, "*** JOB N",
//     or a slurm-N.out file name);
//   - they name the same host (a kernel log's syslog prefix, NCCL's
//     host:pid:tid prefix);
//   - their names carry a rank (rank3.log) and they are in one directory.
//
// A node's log (kernel lines, or lines of a driver entry such as
// nvidia-smi's "GPU is lost") is of every job: it is read beside the job
// output of its node; the hardware rule still needs the hosts to agree
// where both name one. An input that says none of this
// is a group of its own. Diagnoses of different groups are never linked by
// the transition graph or the hardware rule; the report lists the groups
// (Report.Groups) when there is more than one. Collector.SetTogether puts
// every input in one group.

var (
	reSlurmJob  = regexp.MustCompile(`\bSLURM_JOB_?ID=(\d{1,12})\b|\bStepId=(\d{1,12})\.|\*\*\* JOB (\d{1,12}) `)
	reSlurmFile = regexp.MustCompile(`^slurm-(\d{1,12})(?:_\d+)?\.(?:out|err|log)$`)
)

// groupLiterals are the strings the job-id lines hold (for the Gate).
var groupLiterals = []string{"SLURM_JOB", "StepId=", "*** JOB "}

// fileFacts is what one input says about its job.
type fileFacts struct {
	name   string
	jobs   []string
	kernel bool // it holds kernel (NVRM or syslog kernel:) lines
}

type grouper struct {
	files    []fileFacts
	together bool
}

func (g *grouper) newFile(name string) {
	f := fileFacts{name: name}
	if m := reSlurmFile.FindStringSubmatch(filepath.Base(filepath.ToSlash(name))); m != nil {
		f.jobs = append(f.jobs, m[1])
	}
	if len(g.files) < maxFiles {
		g.files = append(g.files, f)
	}
}

func (g *grouper) cur() *fileFacts {
	if len(g.files) == 0 {
		g.files = append(g.files, fileFacts{})
	}
	return &g.files[len(g.files)-1]
}

// line reads job ids and kernel lines.
func (g *grouper) line(text []byte) {
	if bytes.Contains(text, []byte("NVRM: ")) || bytes.Contains(text[:min(len(text), rankHead)], []byte(" kernel: ")) {
		g.cur().kernel = true
	}
	if bytes.Contains(text, []byte("SLURM_JOB")) || bytes.Contains(text, []byte("StepId=")) || bytes.Contains(text, []byte("*** JOB ")) {
		if m := reSlurmJob.FindSubmatch(text); m != nil {
			id := string(bytes.Join(m[1:], nil))
			if f := g.cur(); !slices.Contains(f.jobs, id) && len(f.jobs) < 8 {
				f.jobs = append(f.jobs, id)
			}
		}
	}
}

// groups returns each input's group (by index) and the groups' input
// names; nil when every input is in one group. host is the host an input
// names ("" none).
func (g *grouper) groups(host func(int) string) ([]int, [][]string) {
	n := len(g.files)
	if n < 2 || g.together {
		return nil, nil
	}
	parent := make([]int, n)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(a, b int) { parent[find(a)] = find(b) }
	byKey := map[string]int{}
	join := func(i int, key string) {
		if j, ok := byKey[key]; ok {
			union(i, j)
		} else {
			byKey[key] = i
		}
	}
	anyKernel := false
	for i, f := range g.files {
		anyKernel = anyKernel || f.kernel
		for _, j := range f.jobs {
			join(i, "job:"+j)
		}
		if h := host(i); h != "" {
			join(i, "host:"+h)
		}
		if _, ok := fileRankOf(f.name); ok {
			join(i, "rankdir:"+filepath.Dir(filepath.ToSlash(f.name)))
		}
	}
	group := make([]int, n)
	ids := map[int]int{}
	var names [][]string
	for i, f := range g.files {
		if f.kernel {
			group[i] = -1 // of every group
			continue
		}
		r := find(i)
		id, ok := ids[r]
		if !ok {
			id = len(names)
			ids[r] = id
			names = append(names, nil)
		}
		group[i] = id
		names[id] = append(names[id], f.name)
	}
	if len(names) < 2 {
		return nil, nil
	}
	// Node logs are listed with every group.
	if anyKernel {
		for i, f := range g.files {
			if group[i] == -1 {
				for k := range names {
					names[k] = append(names[k], f.name)
				}
			}
		}
	}
	return group, names
}

// markNode marks the inputs named as node logs (they held a driver
// entry's lines).
func (g *grouper) markNode(names []string) {
	for i := range g.files {
		if slices.Contains(names, g.files[i].name) {
			g.files[i].kernel = true
		}
	}
}

// related reports whether inputs a and b may be linked: the same group,
// or one of them a node log.
func related(group []int, a, b int) bool {
	if group == nil || a == b || a >= len(group) || b >= len(group) {
		return true
	}
	return group[a] == -1 || group[b] == -1 || group[a] == group[b]
}
