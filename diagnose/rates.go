package diagnose

import "github.com/gpudx/gpudx/kb"

// Rate is the dead end's fail rate as shown, with its basis: blended with
// the reported outcomes where there are some.
func (x DeadEnd) Rate() kb.Rate {
	r := kb.Rate{Value: x.FailRate, Basis: x.RateBasis, Reports: x.RateReports}
	if x.Observed != nil {
		r = r.WithReports(x.Observed.Blended, x.Observed.Reports)
	}
	return r
}

// RateLabel is Rate().Label(lang): "~80%, estimate".
func (x DeadEnd) RateLabel(lang string) string { return x.Rate().Label(lang) }

// IsCheck reports whether the workaround is a diagnostic step (shown as
// "to find out", with no rate) rather than a fix.
func (w Workaround) IsCheck() bool { return w.Kind == kb.KindCheck }

// Rate is the workaround's success rate as shown, with its basis: blended
// with the reported outcomes where there are some. Zero for a check.
func (w Workaround) Rate() kb.Rate {
	if w.IsCheck() {
		return kb.Rate{}
	}
	r := kb.Rate{Value: w.SuccessRate, Basis: w.RateBasis, Reports: w.RateReports}
	if w.Observed != nil {
		r = r.WithReports(w.Observed.Blended, w.Observed.Reports)
	}
	return r
}

// RateLabel is Rate().Label(lang), or for a check kb.CheckLabel(lang)
// ("to find out").
func (w Workaround) RateLabel(lang string) string {
	if w.IsCheck() {
		return kb.CheckLabel(lang)
	}
	return w.Rate().Label(lang)
}
