package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/kb"
)

// report is a small report with one root cause and one error that follows
// from it, as the engine would give for a two-rank log.
func report() *diagnose.Report {
	return &diagnose.Report{
		Stats: diagnose.Stats{Lines: 1200, Bytes: 48213, Entries: 282},
		Diagnoses: []*diagnose.Diagnosis{{
			ID: "cuda/illegal-memory-access", Root: true, Count: 2, FirstLine: 40, LastLine: 41, Ranks: []int{1},
			Title: "Illegal memory access in a CUDA kernel", TitleZh: "CUDA kernel 非法内存访问",
			Signature: "CUDA error: an illegal memory access was encountered", SignatureZh: "CUDA 错误：非法内存访问",
			RootCause: "A kernel read an unmapped address.", RootCauseZh: "某个 kernel 读取了未映射的地址。",
			Evidence: []diagnose.Evidence{{Line: 40, Text: "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered"}},
			Facts:    map[string]facts.Fact{"rank": {Text: "1"}},
			DeadEnds: []diagnose.DeadEnd{{Index: 1, Action: "Retry the step", WhyFails: "The context is lost.", FailRate: 0.95, RateBasis: kb.BasisEstimate, Zh: "重试这一步：上下文已失效。",
				Applicability: diagnose.Applicability{Applies: true}}},
			Workarounds: []diagnose.Workaround{{Index: 0, Action: "Run with CUDA_LAUNCH_BLOCKING=1", How: "CUDA_LAUNCH_BLOCKING=1 python train.py", SuccessRate: 0.7, RateBasis: kb.BasisEstimate,
				Condition: "env.torch >= '2.0'", Applicability: diagnose.Applicability{Applies: true, ConditionStatus: "unknown", Reason: "not known: env.torch"}}},
			VerificationTier: "docs_verified", Confidence: 0.9,
		}, {
			ID: "nccl/watchdog-timeout", CausedBy: []string{"cuda/illegal-memory-access"}, Count: 1, FirstLine: 90, LastLine: 90, Ranks: []int{0},
			Signature: "Watchdog caught collective operation timeout",
			Evidence:  []diagnose.Evidence{{Line: 90, Text: "[rank0]: Watchdog caught collective operation timeout"}},
		}},
	}
}

func TestText(t *testing.T) {
	for _, c := range []struct {
		lang string
		want []string // lines, in this order
	}{
		{"en", []string{
			"2 known error(s) found",
			"read 1,200 lines, 48,213 bytes; 282 entries checked",
			"● ROOT CAUSE  cuda/illegal-memory-access  line 40–41  ×2  ranks 1",
			"  Illegal memory access in a CUDA kernel",
			"    40: [rank1]: RuntimeError: CUDA error: an illegal memory access was encountered",
			"    read from it: rank=1",
			"    ✗ 1. Retry the step (fails ~95%, estimate) [item 2]",
			"         why: The context is lost.",
			"    1. Run with CUDA_LAUNCH_BLOCKING=1 (works ~70%, estimate)",
			"       │ CUDA_LAUNCH_BLOCKING=1 python train.py",
			"       when: env.torch >= '2.0' — not known: env.torch",
			"○ FOLLOWS FROM cuda/illegal-memory-access  nccl/watchdog-timeout  line 90  ranks 0",
			"  run `gpudx kb show nccl/watchdog-timeout` for the full entry",
		}},
		{"zh", []string{
			"发现 2 个已知错误",
			"● 根本原因  cuda/illegal-memory-access  第 40–41 行  ×2  rank 1",
			"  CUDA kernel 非法内存访问",
			"    ✗ 1. 重试这一步：上下文已失效。 (失败率 约 95%，估计) [条目第 2 项]",
			"       条件: env.torch >= '2.0' — 未知：env.torch",
			"○ 由 cuda/illegal-memory-access 引起  nccl/watchdog-timeout  第 90 行  rank 0",
		}},
	} {
		var b bytes.Buffer
		if err := Text(&b, report(), Options{Lang: c.lang}); err != nil {
			t.Fatal(err)
		}
		inOrder(t, c.lang, b.String(), c.want)
		if c.lang == "zh" && strings.Contains(b.String(), "why:") {
			t.Errorf("zh: the Chinese dead end says why itself, yet a 'why:' line is printed:\n%s", b.String())
		}
	}
}

func TestMarkdown(t *testing.T) {
	for _, c := range []struct {
		lang string
		want []string
	}{
		{"en", []string{
			"## gpudx diagnosis",
			"### ROOT CAUSE: `cuda/illegal-memory-access`",
			"**Illegal memory access in a CUDA kernel** — line 40–41  ×2  ranks 1",
			"- ✗ **1.** Retry the step — The context is lost. (fails ~95%, estimate) [item 2]",
			"- **1.** Run with CUDA_LAUNCH_BLOCKING=1 (works ~70%, estimate)",
			"### FOLLOWS FROM `cuda/illegal-memory-access`: `nccl/watchdog-timeout`",
		}},
		{"zh", []string{
			"## gpudx 诊断",
			"### 根本原因: `cuda/illegal-memory-access`",
			"- ✗ **1.** 重试这一步：上下文已失效。 (失败率 约 95%，估计) [条目第 2 项]",
		}},
	} {
		var b bytes.Buffer
		if err := Markdown(&b, report(), Options{Lang: c.lang}); err != nil {
			t.Fatal(err)
		}
		inOrder(t, c.lang, b.String(), c.want)
	}
}

// Colour only where asked for, and the empty report says so.
func TestTextColourAndNone(t *testing.T) {
	var b bytes.Buffer
	Text(&b, report(), Options{})
	if strings.Contains(b.String(), "\x1b[") {
		t.Error("escape codes without Color")
	}
	b.Reset()
	Text(&b, report(), Options{Color: true})
	if !strings.Contains(b.String(), "\x1b[1;31m● ROOT CAUSE\x1b[0m") {
		t.Error("no red ROOT CAUSE with Color")
	}
	b.Reset()
	Text(&b, &diagnose.Report{Stats: diagnose.Stats{Lines: 3, Bytes: 12, Entries: 282}}, Options{})
	if got := b.String(); got != "No known GPU error found.\nread 3 lines, 12 bytes; 282 entries checked\n" {
		t.Errorf("empty report: %q", got)
	}
}

// inOrder checks that each wanted line is a whole line of out, in order.
func inOrder(t *testing.T, name, out string, want []string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	i := 0
	for _, w := range want {
		for i < len(lines) && lines[i] != w {
			i++
		}
		if i == len(lines) {
			t.Errorf("%s: line %q missing or out of order in:\n%s", name, w, out)
			return
		}
	}
}

func TestWrap(t *testing.T) {
	for _, c := range []struct {
		s, first, rest string
		width          int
		want           string
	}{
		{"one two three four", "", "", 9, "one two\nthree\nfour"},
		{"one two", "  - ", "    ", 0, "  - one two"},
		{"held 4.66 GiB reserved", "", "", 10, "held\n4.66 GiB\nreserved"},
		{"averyveryverylongword x", "> ", "  ", 8, "> averyveryverylongword\n  x"},
		{"显存不足，请减小批量。", "", "", 8, "显存不\n足，请减\n小批量。"},
		{"CUDA 显存不足", "", "", 7, "CUDA 显\n存不足"},
	} {
		if got := wrap(c.s, c.width, c.first, c.rest); got != c.want {
			t.Errorf("wrap(%q, %d) = %q, want %q", c.s, c.width, got, c.want)
		}
	}
	for _, c := range []struct {
		s     string
		width int
		want  string
	}{{"abcdef", 4, "abc…"}, {"abc", 3, "abc"}, {"显存不足", 5, "显存…"}, {"abc", 0, "abc"}} {
		if got := cutTo(c.s, c.width); got != c.want {
			t.Errorf("cutTo(%q, %d) = %q, want %q", c.s, c.width, got, c.want)
		}
	}
}

// Items whose condition does not hold here are counted, not listed, unless
// All asks for them.
func TestTextHidesItemsThatDoNotApply(t *testing.T) {
	r := report()
	r.Diagnoses[0].Workarounds = append(r.Diagnoses[0].Workarounds, diagnose.Workaround{Index: 1, Action: "Free the other process's memory",
		SuccessRate: 0.7, RateBasis: kb.BasisEstimate, Condition: "facts.other_processes > 0",
		Applicability: diagnose.Applicability{ConditionStatus: "fails", Reason: "facts.other_processes = 0 B"}})
	var b bytes.Buffer
	Text(&b, r, Options{})
	if strings.Contains(b.String(), "Free the other process") || !strings.Contains(b.String(), "    1 more whose condition does not hold here (--all shows them)\n") {
		t.Errorf("hidden item listed, or not counted:\n%s", b.String())
	}
	b.Reset()
	Text(&b, r, Options{All: true})
	if !strings.Contains(b.String(), "    2. Free the other process's memory (works ~70%, estimate) [does not apply here]\n") || strings.Contains(b.String(), "--all shows") {
		t.Errorf("--all: item missing or still counted:\n%s", b.String())
	}
}

// A diagnostic step is shown under "To find out", without a rate, and
// numbered apart from the fixes.
func TestTextChecks(t *testing.T) {
	r := report()
	r.Diagnoses[0].Workarounds = append([]diagnose.Workaround{{Index: 2, Action: "Run compute-sanitizer to find the faulting kernel",
		How: "compute-sanitizer python train.py", Kind: kb.KindCheck, Applicability: diagnose.Applicability{Applies: true}}},
		r.Diagnoses[0].Workarounds...)
	var b bytes.Buffer
	Text(&b, r, Options{})
	inOrder(t, "checks", b.String(), []string{
		"  To find out",
		"    1. Run compute-sanitizer to find the faulting kernel [item 3]",
		"       │ compute-sanitizer python train.py",
		"  Do now",
		"    1. Run with CUDA_LAUNCH_BLOCKING=1 (works ~70%, estimate)",
	})
}

// A failure no entry matches is shown as such, with the nearest entries.
func TestUnrecognized(t *testing.T) {
	r := &diagnose.Report{Stats: diagnose.Stats{Lines: 5, Bytes: 185, Entries: 282},
		Unrecognized: []diagnose.Unrecognized{{Kind: "exception", Line: 5, File: "train.log",
			Text:    "RuntimeError: CUDA driver error: CUDA_ERROR_SOMETHING_NEW",
			Nearest: []diagnose.Nearest{{ID: "cuda/unknown-error", Score: 40}}, Sure: "weak"}}}
	var b bytes.Buffer
	Text(&b, r, Options{Width: 80})
	inOrder(t, "text", b.String(), []string{
		"No known GPU error found.",
		"? NOT IN THE KNOWLEDGE BASE  train.log: line 5",
		"  no entry matched; this line looks like the failure",
		"    RuntimeError: CUDA driver error: CUDA_ERROR_SOMETHING_NEW",
		"  nearest entries: cuda/unknown-error (weak: a few words match)",
	})
	b.Reset()
	Markdown(&b, r, Options{Lang: "zh"})
	inOrder(t, "markdown", b.String(), []string{
		"### 知识库中没有 — train.log：第 5 行",
		"最接近的条目: `cuda/unknown-error` (较弱：只有少数词语一致)",
	})
}

// Inputs of unrelated jobs: each job's errors under its own heading, and a
// job whose error was first seen in another says so instead of "none".
func TestTextJobs(t *testing.T) {
	r := &diagnose.Report{Stats: diagnose.Stats{Lines: 3, Bytes: 200, Entries: 282},
		Groups: [][]string{{"a/illegal.log"}, {"b/cublas.log"}, {"c/cublas.log"}, {"d/quiet.log"}},
		Diagnoses: []*diagnose.Diagnosis{
			{ID: "cuda/illegal-memory-access", Title: "Illegal memory access in a CUDA kernel", Root: true, File: "a/illegal.log", FirstLine: 1, LastLine: 1, Count: 1},
			{ID: "cuda/cublas-execution-failed", Title: "CUBLAS_STATUS_EXECUTION_FAILED in a cuBLAS routine", Root: true, File: "b/cublas.log", FirstLine: 1, LastFile: "c/cublas.log", LastLine: 1, Count: 2,
				Files: []diagnose.FileHits{{File: "b/cublas.log", Count: 1, FirstLine: 1}, {File: "c/cublas.log", Count: 1, FirstLine: 1}}},
		}}
	var b bytes.Buffer
	Text(&b, r, Options{Width: 80})
	inOrder(t, "jobs", b.String(), []string{
		"4 unrelated jobs (their errors are not linked)",
		"── Job 1: a/illegal.log",
		"● ROOT CAUSE  cuda/illegal-memory-access  a/illegal.log: line 1",
		"── Job 2: b/cublas.log",
		"● ROOT CAUSE  cuda/cublas-execution-failed  b/cublas.log: line 1",
		"── Job 3: c/cublas.log",
		"   also seen here: cuda/cublas-execution-failed c/cublas.log:1 ×1 (shown under",
		"── Job 4: d/quiet.log",
		"   no known error",
	})
}

// A heading too wide for the terminal is split, never left to overflow:
// where goes under the id, and a long "follows from" list wraps.
func TestTextHeadFitsWidth(t *testing.T) {
	r := &diagnose.Report{Stats: diagnose.Stats{Lines: 30, Bytes: 900, Entries: 305},
		Diagnoses: []*diagnose.Diagnosis{
			{ID: "pytorch/cuda-out-of-memory", Title: "CUDA out of memory", Root: true, FirstLine: 21, LastLine: 21, Count: 1},
			{ID: "nccl/elastic-child-failed", Title: "torchrun: a worker process failed",
				CausedBy:  []string{"nccl/async-error-handling-teardown", "nccl/watchdog-timeout", "pytorch/cuda-out-of-memory"},
				FirstLine: 29, LastLine: 29, Count: 1},
			{ID: "nccl/watchdog-timeout", Title: "NCCL collective timed out", CausedBy: []string{"pytorch/cuda-out-of-memory"},
				FirstLine: 22, LastLine: 24, Count: 3, Ranks: []int{0, 1, 3}},
		}}
	var b bytes.Buffer
	Text(&b, r, Options{Width: 80})
	for _, line := range strings.Split(b.String(), "\n") {
		if w := strWidth(line); w > 80 {
			t.Errorf("%d columns: %q", w, line)
		}
	}
	inOrder(t, "heads", b.String(), []string{
		"○ FOLLOWS FROM nccl/async-error-handling-teardown, nccl/watchdog-timeout,",
		"  pytorch/cuda-out-of-memory",
		"  nccl/elastic-child-failed  line 29",
		"○ FOLLOWS FROM pytorch/cuda-out-of-memory  nccl/watchdog-timeout",
		"  line 22–24  ×3  ranks 0, 1, 3",
	})
}
