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
	for _, name := range []string{"valid", "zh-length", "too-few-examples", "no-sources"} {
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
	if s.Entries != 4 || s.ByDomain["cuda"] != 4 || s.ByFamily[FamilyCUDARuntime] != 4 {
		t.Errorf("counts: %+v", s)
	}
	check := func(name string, got Share, count int) {
		t.Helper()
		if got.Count != count || got.Share != float64(count)/4 {
			t.Errorf("%s: %+v, want %d of 4", name, got, count)
		}
	}
	check("complete_zh", s.CompleteZh, 3)
	check("with_examples", s.WithExamples, 3)
	check("sources", s.SourcedItems, 3)
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
