package diagnose

import (
	"slices"
	"strings"
	"testing"
)

// Unrelated files are not linked; files of one job (a Slurm job id, rank
// files of one directory, one host) are; --together links them all.
func TestInputsAreGroupedByJob(t *testing.T) {
	s := ourScanner(t)
	illegal := "2026-11-20 09:12:01,004 ERROR train.py:131 RuntimeError: CUDA error: an illegal memory access was encountered\n"
	cublas := "2026-11-21 16:40:12,771 ERROR bench.py:58 RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`\n"
	together := func(names []string, logs ...string) *Report {
		c := NewCollector(s.Entries())
		c.SetTogether(true)
		for i, l := range logs {
			c.File(names[i])
			st, err := Plan(s).Visit(stringsReader(l), c)
			if err != nil {
				t.Fatal(err)
			}
			c.AddStats(st)
		}
		return c.Report()
	}
	names := []string{"runs/illegal.log", "runs/cublas.log"}
	// Together, the knowledge base links the two.
	if r := together(names, illegal, cublas); len(rootIDs(r)) != 1 || r.Groups != nil {
		t.Fatalf("together: roots %v groups %v", rootIDs(r), r.Groups)
	}
	r := readLogs(t, s, names, illegal, cublas)
	if roots := rootIDs(r); len(roots) != 2 {
		t.Errorf("unrelated files: roots %v", roots)
	}
	if want := [][]string{{"runs/illegal.log"}, {"runs/cublas.log"}}; !slices.EqualFunc(r.Groups, want, slices.Equal) {
		t.Errorf("groups %q", r.Groups)
	}
	// One Slurm job: its output file and a file that prints its id.
	job := "SLURM_JOB_ID=4410812\n" + cublas
	r = readLogs(t, s, []string{"slurm-4410812.out", "node07/bench.log"}, illegal, job)
	if roots := rootIDs(r); len(roots) != 1 || r.Groups != nil {
		t.Errorf("one slurm job: roots %v groups %q", roots, r.Groups)
	}
	// Rank files of one directory.
	r = readLogs(t, s, []string{"logs/rank0.log", "logs/rank1.log"}, illegal, cublas)
	if roots := rootIDs(r); len(roots) != 1 || r.Groups != nil {
		t.Errorf("rank files: roots %v groups %q", roots, r.Groups)
	}
	// One host, named by NCCL's prefixes.
	h := "gpu-node-07:2290:2290 [0] NCCL INFO comm 0x55d5c1a0e2b0 rank 0 nranks 8 cudaDev 0 busId 18000 commId 0x1 - Init COMPLETE\n"
	r = readLogs(t, s, names, h+illegal, h+cublas)
	if roots := rootIDs(r); len(roots) != 1 || r.Groups != nil {
		t.Errorf("one host: roots %v groups %q", roots, r.Groups)
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
