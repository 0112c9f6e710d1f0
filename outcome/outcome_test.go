package outcome

import (
	"math"
	"strings"
	"testing"
)

func TestBlend(t *testing.T) {
	for _, tt := range []struct {
		name    string
		kind    Kind
		curated float64
		t       Tally
		want    float64
	}{
		// The figure PriorWeight's comment promises: (8 + 2) / 20.
		{"workaround, half the reports", Workaround, 0.8, Tally{Worked: 2, Failed: 8}, 0.5},
		{"no reports: the curated rate", Workaround, 0.73, Tally{}, 0.73},
		// (6 + 2) / 12: two reports, both worked.
		{"workaround, all worked", Workaround, 0.6, Tally{Worked: 2}, 8.0 / 12},
		// A dead end's rate is a fail rate: failures count for it, (9 + 4) / 15.
		{"dead end, mostly failed", DeadEnd, 0.9, Tally{Worked: 1, Failed: 4}, 13.0 / 15},
		// (9 + 0) / 20: ten people found the "dead end" worked.
		{"dead end that works", DeadEnd, 0.9, Tally{Worked: 10}, 0.45},
		{"zero curated", Workaround, 0, Tally{Worked: 5, Failed: 5}, 5.0 / 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := Blend(tt.kind, tt.curated, tt.t)
			if math.Abs(r.Blended-tt.want) > 1e-12 {
				t.Errorf("blended %v, want %v", r.Blended, tt.want)
			}
			if r.Curated != tt.curated || r.Reports != tt.t.N() || r.Worked != tt.t.Worked || r.Failed != tt.t.Failed || r.PriorWeight != 10 {
				t.Errorf("rate %+v", r)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := Report{EntryID: "nccl/watchdog-timeout", Kind: Workaround, Index: 3}
	for _, tt := range []struct {
		name string
		edit func(*Report)
		want string // "" for valid
	}{
		{"valid", func(*Report) {}, ""},
		{"dead end", func(r *Report) { r.Kind = DeadEnd }, ""},
		{"empty entry", func(r *Report) { r.EntryID = " " }, "entry_id is empty"},
		{"bad kind", func(r *Report) { r.Kind = "fix" }, `kind is "fix"; want "workaround" or "dead_end"`},
		{"negative index", func(r *Report) { r.Index = -1 }, "index -1 is out of range"},
		{"huge index", func(r *Report) { r.Index = MaxIndex + 1 }, "index 1001 is out of range"},
		{"long request id", func(r *Report) { r.RequestID = strings.Repeat("x", MaxRequestID+1) }, "request_id is longer than 128 bytes"},
		{"long note", func(r *Report) { r.Note = strings.Repeat("x", MaxNote+1) }, "note is longer than 2000 bytes"},
		{"long entry", func(r *Report) { r.EntryID = strings.Repeat("x", MaxEntryID+1) }, "entry_id is longer than 256 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := ok
			tt.edit(&r)
			err := r.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && err.Error() != tt.want) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}
