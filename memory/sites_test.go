package memory

import (
	"reflect"
	"testing"

	"github.com/gpudx/gpudx/snapshot"
)

func TestSiteOf(t *testing.T) {
	cxxUnwind := fr("torch::unwind::unwind()", "??", 0)
	gather := fr("torch::CapturedTraceback::gather(bool, bool, bool)", "??", 0)
	cAlloc := fr("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, unsigned long, CUstream_st*)", "c10/cuda/CUDACachingAllocator.cpp", 1200)
	boxing := fr("c10::impl::BoxedKernelWrapper", "aten/src/ATen/core/boxing/impl/make_boxed_from_unboxed_functor.h", 41)
	pyEval := fr("_PyEval_EvalFrameDefault", "??", 0)
	torchPy := fr("forward", "/usr/lib/python3.11/site-packages/torch/nn/modules/linear.py", 116)
	user := fr("forward", "/home/me/model.py", 42)
	for _, c := range []struct {
		name   string
		frames []snapshot.Frame
		site   string
		kept   []Frame
	}{
		{"no frames", nil, NoStack, []Frame{}},
		{"only hidden frames", []snapshot.Frame{cxxUnwind, gather, pyEval}, NoStack, []Frame{}},
		{"C++ frames then torch then user",
			[]snapshot.Frame{cxxUnwind, gather, cAlloc, boxing, torchPy, pyEval, user},
			"forward (/home/me/model.py:42)",
			[]Frame{
				{cAlloc.Name, cAlloc.Filename, 1200},
				{"forward", "/usr/lib/python3.11/site-packages/torch/nn/modules/linear.py", 116},
				{"forward", "/home/me/model.py", 42},
			}},
		{"only internal frames: the first kept one",
			[]snapshot.Frame{cxxUnwind, cAlloc, torchPy},
			"c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, unsigned long, CUstream_st*) (c10/cuda/CUDACachingAllocator.cpp:1200)",
			[]Frame{{cAlloc.Name, cAlloc.Filename, 1200}, {"forward", torchPy.Filename, 116}}},
		{"Windows torch path is internal",
			[]snapshot.Frame{
				fr("_conv_forward", `C:\Users\me\miniconda3\Lib\site-packages\torch\nn\modules\conv.py`, 549),
				fr("train_step", `C:\Users\me\proj\train.py`, 88),
			},
			`train_step (C:\Users\me\proj\train.py:88)`,
			[]Frame{
				{"_conv_forward", `C:\Users\me\miniconda3\Lib\site-packages\torch\nn\modules\conv.py`, 549},
				{"train_step", `C:\Users\me\proj\train.py`, 88},
			}},
		{"relative torch/ path, frozen module and .cu are internal",
			[]snapshot.Frame{
				fr("kernel", "csrc/fused.cu", 10),
				fr("f", "torch/_tensor.py", 5),
				fr("_call_with_frames_removed", "<frozen importlib._bootstrap>", 241),
				fr("<module>", "bench.py", 3),
			},
			"<module> (bench.py:3)",
			[]Frame{{"kernel", "csrc/fused.cu", 10}, {"f", "torch/_tensor.py", 5},
				{"_call_with_frames_removed", "<frozen importlib._bootstrap>", 241}, {"<module>", "bench.py", 3}}},
		{"line 0 has no line in the site",
			[]snapshot.Frame{fr("step", "/srv/job.py", 0)},
			"step (/srv/job.py)",
			[]Frame{{"step", "/srv/job.py", 0}}},
		{"empty filename is internal",
			[]snapshot.Frame{fr("mystery", "", 3), fr("run", "run.py", 9)},
			"run (run.py:9)",
			[]Frame{{"mystery", "", 3}, {"run", "run.py", 9}}},
		{"hidden by filename",
			[]snapshot.Frame{fr("x", "Python/ceval.c", 1), fr("y", "/x/Register/y.cpp", 1), fr("z", "Objects/call.c", 2), fr("main", "m.py", 4)},
			"main (m.py:4)",
			[]Frame{{"main", "m.py", 4}}},
		{"hidden by name: a user function named *_start",
			[]snapshot.Frame{fr("on_train_start", "/home/me/cb.py", 7), fr("fit", "/home/me/fit.py", 9)},
			"fit (/home/me/fit.py:9)",
			[]Frame{{"fit", "/home/me/fit.py", 9}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			site, kept := SiteOf(c.frames)
			if site != c.site {
				t.Errorf("site %q, want %q", site, c.site)
			}
			if kept == nil || !reflect.DeepEqual(kept, c.kept) {
				t.Errorf("kept %#v, want %#v", kept, c.kept)
			}
		})
	}
}

// TestTopSites: active blocks of all devices grouped by site; the shown
// stack is the largest block's (first met on a tie); sorted by bytes, then
// site; cut to Top.
func TestTopSites(t *testing.T) {
	s := &snapshot.Snapshot{
		Stacks: [][]snapshot.Frame{
			nil,
			{fr("torch_op", "/site-packages/torch/functional.py", 3), fr("fwd", "/a/model.py", 10)}, // 1: fwd
			{fr("fwd", "/a/model.py", 10)}, // 2: fwd, other stack
			{fr("load", "/a/data.py", 5)},  // 3
			{fr("b", "/a/b.py", 1)},        // 4
			{fr("a", "/a/a.py", 1)},        // 5
		},
		Segments: []snapshot.Segment{
			seg(1, 0, []snapshot.Block{alloc(2*mib, 1, 2), free(mib)}),
			seg(0, 0, []snapshot.Block{
				alloc(mib, 1, 3),
				alloc(2*mib, 1, 1), // ties with device 1's 2 MiB block, met later
				free(4 * mib),
				pending(512, 1, 3),
				alloc(3*mib, 1, 4),
				alloc(3*mib, 1, 5),
				alloc(512, 1, 0),
			}),
		},
	}
	got := Analyze(s, Options{Top: 4}).TopSites
	want := []Site{
		{Site: "fwd (/a/model.py:10)", Bytes: 4 * mib, Count: 2, Frames: []Frame{{"fwd", "/a/model.py", 10}}},
		{Site: "a (/a/a.py:1)", Bytes: 3 * mib, Count: 1, Frames: []Frame{{"a", "/a/a.py", 1}}},
		{Site: "b (/a/b.py:1)", Bytes: 3 * mib, Count: 1, Frames: []Frame{{"b", "/a/b.py", 1}}},
		{Site: "load (/a/data.py:5)", Bytes: mib + 512, Count: 2, Frames: []Frame{{"load", "/a/data.py", 5}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("top sites:\n got %s\nwant %s", js(t, got), js(t, want))
	}
	all := Analyze(s, Options{}).TopSites
	if len(all) != 5 || all[4].Site != NoStack || all[4].Bytes != 512 || len(all[4].Frames) != 0 || all[4].Frames == nil {
		t.Errorf("default top: %s", js(t, all))
	}
}
