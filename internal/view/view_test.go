package view

import (
	"regexp"
	"slices"
	"testing"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/outcome"
)

// Both languages have the same keys with the same format verbs, and the
// Chinese table says something of its own.
func TestLabels(t *testing.T) {
	verbs := regexp.MustCompile(`%(?:\[\d+\])?[-+# 0]*\d*(?:\.\d+)?[a-zA-Z%]`)
	kinds := func(s string) []string {
		var out []string
		for _, m := range verbs.FindAllString(s, -1) {
			out = append(out, m[len(m)-1:])
		}
		slices.Sort(out)
		return out
	}
	same := map[string]bool{"times": true, "dot": true, "sp": true} // marks, not words
	for _, k := range Keys("en") {
		en := T("en", k)
		if !Has("zh", k) {
			t.Errorf("label %q has no Chinese", k)
			continue
		}
		zh := T("zh", k)
		if zh == en && !same[k] {
			t.Errorf("label %q is the same in Chinese: %q", k, en)
		}
		if a, b := kinds(en), kinds(zh); !slices.Equal(a, b) {
			t.Errorf("label %q: English verbs %v, Chinese %v", k, a, b)
		}
	}
	for _, k := range Keys("zh") {
		if !Has("en", k) {
			t.Errorf("label %q has no English", k)
		}
	}
}

func TestGroup(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {-1000, "-1,000"}, {-999, "-999"}, {-123456, "-123,456"}, {1234567, "1,234,567"}} {
		if got := Group(c.n); got != c.want {
			t.Errorf("Group(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{{"abc", 3, "abc"}, {"abcd", 3, "abc…"}, {"显存不足", 4, "显…"}, {"显存不足", 6, "显存…"}, {"a显", 2, "a…"}} {
		if got := Clip(c.s, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestCondition(t *testing.T) {
	for _, c := range []struct {
		a        diagnose.Applicability
		l, state string
	}{
		{diagnose.Applicability{Applies: true, ConditionStatus: "holds", Reason: "env.torch=2.4.1"}, "en", "holds (env.torch=2.4.1)"},
		{diagnose.Applicability{ConditionStatus: "fails", Reason: "facts.requested=4 GiB"}, "en", "does not hold here (facts.requested=4 GiB)"},
		{diagnose.Applicability{Applies: true, ConditionStatus: "unknown", Reason: "not known: env.torch"}, "en", "not known: env.torch"},
		{diagnose.Applicability{Applies: true, ConditionStatus: "unknown", Reason: "not known: env.torch"}, "zh", "未知：env.torch"},
	} {
		cond, state := Condition("env.torch >= '2.9'", c.a, c.l)
		if cond != "env.torch >= '2.9'" || state != c.state {
			t.Errorf("%+v %s: got %q %q, want %q", c.a, c.l, cond, state, c.state)
		}
	}
	if c, s := Condition("", diagnose.Applicability{Applies: true}, "en"); c != "" || s != "" {
		t.Errorf("no condition: %q %q", c, s)
	}
}

// Build resolves every figure once, in the report's language.
func TestBuild(t *testing.T) {
	first := 2
	rep := &diagnose.Report{
		Stats: diagnose.Stats{Lines: 1234, Bytes: 56789, Entries: 282},
		Ranks: &diagnose.RankSummary{FirstFailed: &first, Reason: "only rank 2 printed the root error", ReasonZh: "只有 rank 2 打印了根本错误"},
		Diagnoses: []*diagnose.Diagnosis{{
			ID: "pytorch/cuda-out-of-memory", Root: true, Count: 3, FirstLine: 21, LastLine: 40, Ranks: []int{2},
			Signature: "sig", SignatureZh: "签名", RootCause: "rc", RootCauseZh: "根因",
			Facts:    map[string]facts.Fact{"requested": {Text: "4.00 GiB"}, "gpu": {Text: "2"}},
			Operator: &kb.Operator{Severity: "critical", Fault: "hardware", Drain: "yes", Action: "RESET_GPU", Next: "reset", NextZh: "重置"},
			DeadEnds: []diagnose.DeadEnd{{Index: 3, Action: "a", WhyFails: "w", FailRate: 0.9, RateBasis: kb.BasisEstimate, Zh: "甲",
				Applicability: diagnose.Applicability{Applies: true},
				Observed:      &outcome.Rate{Blended: 0.55, Reports: 3, Worked: 1, Failed: 2, Curated: 0.9, PriorWeight: 10}}},
			Workarounds: []diagnose.Workaround{{Index: 0, Action: "b", How: "h", SuccessRate: 0.6, Applicability: diagnose.Applicability{Applies: true}}},
		}},
	}
	en := Build(rep, "en")
	if en.Read != "read 1,234 lines, 56,789 bytes; 282 entries checked" || en.Ranks != "rank 2 failed first (only rank 2 printed the root error)" {
		t.Errorf("en head: %q / %q", en.Read, en.Ranks)
	}
	d := en.Diagnoses[0]
	if d.Kind != "root" || d.Anchor != "d1" || d.Where("en", "  ") != "line 21–40  ×3  ranks 2" {
		t.Errorf("en diagnosis: %q %q %q", d.Kind, d.Anchor, d.Where("en", "  "))
	}
	if got := d.Facts; len(got) != 2 || got[0] != (Fact{"gpu", "2"}) || got[1] != (Fact{"requested", "4.00 GiB"}) {
		t.Errorf("facts %v", got)
	}
	if d.Operator != "critical: GPU or node unusable until acted on · hardware fault · drain the node · NVIDIA action RESET_GPU" || d.OpNext != "reset" {
		t.Errorf("operator %q %q", d.Operator, d.OpNext)
	}
	x := d.DeadEnds[0]
	if x.N != 1 || x.Index != 3 || x.Rate != "fails ≈55%, estimate + 3 reports" ||
		x.ObservedLong != "55% with 3 reports: 1 worked, 2 failed (the curated 90% counts as 10 reports)" {
		t.Errorf("dead end %+v", x)
	}
	zh := Build(rep, "zh")
	d = zh.Diagnoses[0]
	if d.Signature != "签名" || d.RootCause != "根因" || d.OpNext != "重置" || d.DeadEnds[0].Text != "甲" || d.DeadEnds[0].Why != "" ||
		d.Where("zh", " · ") != "第 21–40 行 · ×3 · rank 2" || d.Work[0].Text != "b" {
		t.Errorf("zh diagnosis %+v", d)
	}
	if zh.Ranks != "rank 2 最先失败（只有 rank 2 打印了根本错误）" {
		t.Errorf("zh ranks %q", zh.Ranks)
	}
}

// The "read" line agrees in number with the count of lines.
func TestReadLine(t *testing.T) {
	for _, c := range []struct {
		lines int
		lang  string
		want  string
	}{
		{0, "en", "read 0 lines, 0 bytes; 282 entries checked"},
		{1, "en", "read 1 line, 40 bytes; 282 entries checked"},
		{2, "en", "read 2 lines, 40 bytes; 282 entries checked"},
		{1, "zh", "读取 1 行，40 字节；比对 282 个条目"},
	} {
		bytes := int64(40)
		if c.lines == 0 {
			bytes = 0
		}
		rep := &diagnose.Report{Stats: diagnose.Stats{Lines: c.lines, Bytes: bytes, Entries: 282}}
		if got := Build(rep, c.lang).Read; got != c.want {
			t.Errorf("%d lines, %s: %q, want %q", c.lines, c.lang, got, c.want)
		}
	}
}

// An error seen in two unrelated jobs is described under the job it was
// first seen in with that job's figures only; the other job says where it
// was seen there.
func TestOwnJob(t *testing.T) {
	rep := &diagnose.Report{
		Stats:  diagnose.Stats{Lines: 7, Bytes: 198, Entries: 296},
		Groups: [][]string{{"a/job111.log"}, {"b/job222.log"}},
		Diagnoses: []*diagnose.Diagnosis{{
			ID: "cuda/out-of-memory", Root: true, Count: 4, File: "a/job111.log", FirstLine: 2,
			LastFile: "b/job222.log", LastLine: 3,
			Files: []diagnose.FileHits{{File: "a/job111.log", Count: 3, FirstLine: 2}, {File: "b/job222.log", Count: 1, FirstLine: 3}},
			Evidence: []diagnose.Evidence{{File: "a/job111.log", Line: 2, Text: "x"}, {File: "a/job111.log", Line: 3, Text: "x"},
				{File: "b/job222.log", Line: 3, Text: "x"}},
		}},
	}
	d := Build(rep, "en").Diagnoses[0]
	if d.Group != 0 || !slices.Equal(d.InGroups, []int{0, 1}) || d.Count != 3 || d.Where("en", "  ") != "a/job111.log: line 2  ×3" {
		t.Errorf("own job: group %d in %v, count %d, where %q", d.Group, d.InGroups, d.Count, d.Where("en", "  "))
	}
	if len(d.Evidence) != 2 || d.Evidence[1].File != "a/job111.log" || d.SeenIn != nil {
		t.Errorf("evidence %+v, seen in %v", d.Evidence, d.SeenIn)
	}
	if got := d.Elsewhere[1]; !slices.Equal(got, []string{"b/job222.log:3 ×1"}) || len(d.Elsewhere) != 1 {
		t.Errorf("elsewhere %v", d.Elsewhere)
	}
	// One job: nothing is narrowed.
	rep.Groups = nil
	if d := Build(rep, "en").Diagnoses[0]; d.Count != 4 || len(d.Evidence) != 3 || d.Elsewhere != nil {
		t.Errorf("one job: count %d, evidence %d, elsewhere %v", d.Count, len(d.Evidence), d.Elsewhere)
	}
}
