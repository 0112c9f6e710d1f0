package kb

import (
	"fmt"
	"time"
)

// Basis says what a success or fail rate rests on. Curated rates are
// round editorial estimates unless counted or reproduced; the basis is
// shown with every rate so that nobody reads an estimate as a measurement.
type Basis string

// Bases a rate may have.
const (
	// BasisEstimate: an editorial estimate from the reports read.
	BasisEstimate Basis = "estimate"
	// BasisReports: counted from outcome reports (RateReports of them).
	BasisReports Basis = "reports"
	// BasisReproduced: measured by reproducing the error on real hardware
	// and trying the action.
	BasisReproduced Basis = "reproduced"
)

// RateBases lists the bases an entry's rate_basis may name.
var RateBases = []string{string(BasisEstimate), string(BasisReports), string(BasisReproduced)}

// Kinds a workaround may have.
const (
	// KindFix is a workaround that resolves or avoids the error; it has a
	// success rate. An absent kind means a fix.
	KindFix = "fix"
	// KindCheck is a diagnostic step (compare versions, run Compute
	// Sanitizer, read the log): it finds out what is wrong, fixes nothing
	// by itself, and so has no success rate. Shown as "to find out".
	KindCheck = "check"
)

// WorkaroundKinds lists the values a workaround's kind may take.
var WorkaroundKinds = []string{KindFix, KindCheck}

// Rate is a rate as shown: a value in [0,1], what it rests on, and how
// many outcome reports are counted in it (those counted in the entry when
// the basis is reports, plus any reported outcomes blended in).
type Rate struct {
	Value   float64 `json:"value"`
	Basis   Basis   `json:"basis"`
	Reports int     `json:"reports,omitempty"`
}

// WithReports is the rate after n outcome reports were blended into it,
// giving value; the basis stays, the reports add up.
func (r Rate) WithReports(value float64, n int) Rate {
	if n <= 0 {
		return r
	}
	return Rate{Value: value, Basis: r.Basis, Reports: r.Reports + n}
}

// Label formats the rate with its basis in lang ("en" or "zh"):
// "~60%, estimate", "≈65%, estimate + 3 reports", "≈60%, 14 reports",
// "60%, reproduced". Every face that shows a rate shows it through Label.
// An empty basis reads as an estimate (deadends.dev canons carry none).
func (r Rate) Label(lang string) string {
	pct := fmt.Sprintf("%d%%", int(r.Value*100+0.5)) // rounded as the renderers always have
	zh := lang == "zh"
	reports := func(n int) string {
		if zh {
			return fmt.Sprintf("%d 份反馈", n)
		}
		if n == 1 {
			return "1 report"
		}
		return fmt.Sprintf("%d reports", n)
	}
	sep, approx := ", ", "≈"
	if zh {
		sep, approx = "，", "约 "
	}
	switch r.Basis {
	case BasisReports:
		return approx + pct + sep + reports(r.Reports)
	case BasisReproduced:
		what := "reproduced"
		if zh {
			what = "已在真实硬件上复现"
		}
		if r.Reports > 0 {
			return approx + pct + sep + what + " + " + reports(r.Reports)
		}
		return pct + sep + what
	}
	what := "estimate"
	if zh {
		what = "估计"
	}
	if r.Reports > 0 {
		return approx + pct + sep + what + " + " + reports(r.Reports)
	}
	if zh {
		return "约 " + pct + sep + what
	}
	return "~" + pct + sep + what
}

// CheckLabel is what a check shows in place of a rate.
func CheckLabel(lang string) string {
	if lang == "zh" {
		return "用于查明"
	}
	return "to find out"
}

func orEstimate(b Basis) Basis {
	if b == "" {
		return BasisEstimate
	}
	return b
}

// Rate is the dead end's fail rate with its basis.
func (d DeadEnd) Rate() Rate {
	return Rate{Value: d.FailRate, Basis: orEstimate(d.RateBasis), Reports: d.RateReports}
}

// IsCheck reports whether the workaround is a diagnostic step rather than
// a fix.
func (w Workaround) IsCheck() bool { return w.Kind == KindCheck }

// Rate is the workaround's success rate with its basis (zero for a check,
// which has none).
func (w Workaround) Rate() Rate {
	if w.IsCheck() {
		return Rate{}
	}
	return Rate{Value: w.SuccessRate, Basis: orEstimate(w.RateBasis), Reports: w.RateReports}
}

// FixRate is the entry's fix_success_rate with its basis.
func (e *Entry) FixRate() Rate {
	return Rate{Value: e.FixSuccessRate, Basis: orEstimate(e.FixSuccessRateBasis)}
}

// Check records when and how an entry was last checked against primary
// material by a reader other than its author.
type Check struct {
	Date   string `json:"date"`   // YYYY-MM-DD
	By     string `json:"by"`     // who read it
	Method string `json:"method"` // one of CheckMethods
	Notes  string `json:"notes,omitempty"`
}

// Methods an entry's check may name.
const (
	// CheckSourcesReread: every claim re-read against its cited primary
	// sources (documentation, source code, release notes, issues).
	CheckSourcesReread = "sources-reread"
	// CheckReproduced: the message was produced on real hardware and the
	// workarounds tried.
	CheckReproduced = "reproduced"
)

// CheckMethods lists the values a check's method may take.
var CheckMethods = []string{CheckSourcesReread, CheckReproduced}

// IsChecked reports whether the entry records a check.
func (e *Entry) IsChecked() bool { return e.Checked != nil && e.Checked.Date != "" }

// today is the date checks may not be after; a variable for tests.
var today = func() time.Time { return time.Now().UTC() }
