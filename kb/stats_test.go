package kb

import (
	"testing"
)

func TestFamily(t *testing.T) {
	for _, tt := range []struct{ id, domain, want string }{
		{"cuda/illegal-memory-access", "cuda", FamilyCUDARuntime},
		{"cuda/cublas-invalid-value", "cuda", FamilyCUBLAS},
		{"cuda/cudnn-bad-param", "cuda", FamilyCUDNN},
		{"cuda/cufft-internal-error", "cuda", FamilyCUDAMath},
		{"cuda/cusolver-internal-error", "cuda", FamilyCUDAMath},
		{"cuda/cusparse-not-supported", "cuda", FamilyCUDAMath},
		{"cuda/curand-error", "cuda", FamilyCUDAMath},
		{"nccl/remote-error", "nccl", "nccl"},
		{"build/libcudnn-missing", "build", "build"},
	} {
		if got := (&Entry{ID: tt.id, Domain: tt.domain}).Family(); got != tt.want {
			t.Errorf("%s: family %q, want %q", tt.id, got, tt.want)
		}
	}
}

func TestComputeStats(t *testing.T) {
	var entries []*Entry
	for _, name := range []string{"valid", "zh-length", "too-few-examples", "no-sources", "checked", "good-check", "no-basis"} {
		f := readFixture(t, name)
		e, err := Parse(f.Path, f.Data)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	reg := &Registry{}
	reg.Add(File{Path: "r.json", Data: []byte(`[{"name":"NCCL_DEBUG","kind":"env","component":"NCCL","versions":"all","source":"https://x"},
		{"name":"torch.load","kind":"api","component":"PyTorch","versions":"all","source":"https://y"}]`)})
	s := ComputeStats(entries, reg)
	if s.Entries != 7 || s.ByDomain["cuda"] != 7 || s.ByFamily[FamilyCUDARuntime] != 7 {
		t.Errorf("counts: %+v", s)
	}
	check := func(name string, got Share, count int) {
		t.Helper()
		if got.Count != count || got.Share != float64(count)/7 {
			t.Errorf("%s: %+v, want %d of 7", name, got, count)
		}
	}
	check("complete_zh", s.CompleteZh, 6)
	check("with_examples", s.WithExamples, 6)
	check("sources", s.SourcedItems, 6)
	check("checked", s.Checked, 1)
	if s.CheckedByFamily[FamilyCUDARuntime] != 1 || len(s.CheckedByFamily) != 1 || s.ByCheckMethod[CheckSourcesReread] != 1 {
		t.Errorf("checked by family %v, by method %v", s.CheckedByFamily, s.ByCheckMethod)
	}
	// good-check has one check and one fix; no-basis has three rates
	// without a basis; the other five entries have two rates each plus
	// their fix_success_rate, all estimates.
	if s.Checks != 1 || s.RateBases["estimate"] != 5*3+3 || s.RateBases[""] != 3 || len(s.RateBases) != 2 {
		t.Errorf("checks %d, rate bases %v", s.Checks, s.RateBases)
	}
	if s.Registry == nil || s.Registry.Names != 2 || s.Registry.ByKind["env"] != 1 || s.Registry.ByKind["api"] != 1 {
		t.Errorf("registry: %+v", s.Registry)
	}
}

// Regexes without a required literal are counted: the scanner tries them on
// every line.
func TestStatsUnfiltered(t *testing.T) {
	es := []*Entry{{Regex: `CUDA error: out of memory`}, {Regex: `(?i)(an|al) .*(il|ac)`}, {Regex: `a.*b`}, {}}
	if got := ComputeStats(es, nil).Unfiltered; got != 2 {
		t.Errorf("Unfiltered = %d, want 2", got)
	}
}
