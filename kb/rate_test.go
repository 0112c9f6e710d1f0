package kb

import (
	"strings"
	"testing"
)

func TestRateLabel(t *testing.T) {
	for _, tt := range []struct {
		r      Rate
		en, zh string
	}{
		{Rate{0.6, BasisEstimate, 0}, "~60%, estimate", "约 60%，估计"},
		{Rate{0.6, "", 0}, "~60%, estimate", "约 60%，估计"},
		{Rate{0.645, BasisEstimate, 3}, "≈65%, estimate + 3 reports", "约 65%，估计 + 3 份反馈"},
		{Rate{0.6, BasisEstimate, 1}, "≈60%, estimate + 1 report", "约 60%，估计 + 1 份反馈"},
		{Rate{0.6, BasisReports, 14}, "≈60%, 14 reports", "约 60%，14 份反馈"},
		{Rate{0.85, BasisReproduced, 0}, "85%, reproduced", "85%，已在真实硬件上复现"},
		{Rate{0.8, BasisReproduced, 2}, "≈80%, reproduced + 2 reports", "约 80%，已在真实硬件上复现 + 2 份反馈"},
	} {
		if got := tt.r.Label("en"); got != tt.en {
			t.Errorf("%+v en: %q, want %q", tt.r, got, tt.en)
		}
		if got := tt.r.Label("zh"); got != tt.zh {
			t.Errorf("%+v zh: %q, want %q", tt.r, got, tt.zh)
		}
	}
}

func TestRateWithReports(t *testing.T) {
	r := Rate{0.6, BasisReports, 14}
	if got := r.WithReports(0.5, 0); got != r {
		t.Errorf("no reports: %+v", got)
	}
	if got := r.WithReports(0.55, 3); got != (Rate{0.55, BasisReports, 17}) {
		t.Errorf("3 reports: %+v", got)
	}
}

func TestItemRates(t *testing.T) {
	w := Workaround{SuccessRate: 0.7, RateBasis: BasisReproduced}
	c := Workaround{Kind: KindCheck}
	d := DeadEnd{FailRate: 0.9}
	if w.IsCheck() || !c.IsCheck() || w.Rate() != (Rate{0.7, BasisReproduced, 0}) || c.Rate() != (Rate{}) || d.Rate() != (Rate{0.9, BasisEstimate, 0}) {
		t.Errorf("fix %+v, check %+v, dead end %+v", w.Rate(), c.Rate(), d.Rate())
	}
}

// The Chinese text may sit with each item; it then reads as the parallel
// lists do.
func TestParseInlineZh(t *testing.T) {
	f := readFixture(t, "inline-zh")
	e, err := Parse(f.Path, f.Data)
	if err != nil {
		t.Fatal(err)
	}
	if e.DeadEndZh(0) != "调用 torch.cuda.empty_cache() 后继续：上下文已损坏。" || e.WorkaroundZh(0) != "用 compute-sanitizer 运行" || !e.CompleteZh() {
		t.Errorf("dead end %q, workaround %q", e.DeadEndZh(0), e.WorkaroundZh(0))
	}
	if e.Subcategory != nil || e.ErrorCode != "" || e.OfficialDocSection != nil {
		t.Errorf("omitted nullable fields: %v %q %v", e.Subcategory, e.ErrorCode, e.OfficialDocSection)
	}
}

// A new entry's skeleton parses and fails lint on every field left to
// write, and on nothing else.
func TestSkeleton(t *testing.T) {
	data, err := Skeleton("cuda/new-thing", "2026-11-27")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("knowledge/cuda/new-thing.json", data); err != nil {
		t.Fatal(err)
	}
	got := problemStrings((&Linter{}).Lint([]File{{Path: "knowledge/cuda/new-thing.json", Data: data}}))
	want := []string{
		`knowledge/cuda/new-thing.json: category: "" is not one of resource_error, version_mismatch, install_error, configuration_error, programming_error, hardware_fault, communication_error, numerical_error, internal_error`,
		`knowledge/cuda/new-thing.json: root_cause_type: "" is not one of generic, specific, environment, hardware`,
		`knowledge/cuda/new-thing.json: resolvable: "" is not one of true, partial, false`,
		`knowledge/cuda/new-thing.json: first_seen: "" is not a YYYY-MM-DD date`,
		`knowledge/cuda/new-thing.json: title: empty`,
		`knowledge/cuda/new-thing.json: title_zh: empty`,
		`knowledge/cuda/new-thing.json: signature: empty`,
		`knowledge/cuda/new-thing.json: signature_zh: empty`,
		`knowledge/cuda/new-thing.json: root_cause: empty`,
		`knowledge/cuda/new-thing.json: root_cause_zh: empty`,
		`knowledge/cuda/new-thing.json: dead_ends[0].action: empty: say what people try`,
		`knowledge/cuda/new-thing.json: dead_ends[0].why_fails: empty`,
		`knowledge/cuda/new-thing.json: dead_ends[0].sources: none: every dead end and workaround needs a source`,
		`knowledge/cuda/new-thing.json: workarounds[0].action: empty: say what to do`,
		`knowledge/cuda/new-thing.json: workarounds[0].how: empty: give a command, code line or setting`,
		`knowledge/cuda/new-thing.json: workarounds[0].sources: none: every dead end and workaround needs a source`,
		`knowledge/cuda/new-thing.json: workarounds[1].action: empty: say what to do`,
		`knowledge/cuda/new-thing.json: workarounds[1].how: empty: give a command, code line or setting`,
		`knowledge/cuda/new-thing.json: workarounds[1].sources: none: every dead end and workaround needs a source`,
		`knowledge/cuda/new-thing.json: dead_ends[0].zh: empty: the Chinese text of the dead end (inline zh, or its place in dead_ends_zh)`,
		`knowledge/cuda/new-thing.json: workarounds[0].zh: empty: the Chinese text of the workaround (inline zh, or its place in workarounds_zh)`,
		`knowledge/cuda/new-thing.json: workarounds[1].zh: empty: the Chinese text of the workaround (inline zh, or its place in workarounds_zh)`,
		`knowledge/cuda/new-thing.json: regex: empty`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	for _, bad := range []string{"cuda", "CUDA/x", "gpu/thing", "cuda/a b"} {
		if _, err := Skeleton(bad, "2026-11-27"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
