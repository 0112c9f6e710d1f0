package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/internal/service"
	"github.com/gpudx/gpudx/outcome"
)

type answer struct {
	EntryID   string       `json:"entry_id"`
	Kind      string       `json:"kind"`
	Index     int          `json:"index"`
	Worked    bool         `json:"worked"`
	RequestID string       `json:"request_id"`
	Duplicate bool         `json:"duplicate"`
	Rate      outcome.Rate `json:"rate"`
}

// Reports are stored in a real SQLite store; a repeated request id is
// acknowledged and not counted; every answer carries the new blended
// rate, (curated·10 + favourable) / (10 + reports).
func TestOutcomes(t *testing.T) {
	s, _ := newServer(t, sqliteStore(t), Options{})
	const id = "cuda/illegal-memory-access"
	e := s.svc.Entry(id)
	w0, d1 := e.Workarounds[0].SuccessRate, e.DeadEnds[1].FailRate
	post := func(body string, hdr map[string]string) (int, answer) {
		t.Helper()
		if hdr == nil {
			hdr = map[string]string{}
		}
		hdr["Content-Type"] = "application/json"
		w := do(t, s, req{method: "POST", target: "/api/v1/outcomes", body: []byte(body), header: hdr})
		var a answer
		if w.Code < 300 {
			decode(t, w, &a)
		}
		return w.Code, a
	}
	near := func(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }
	steps := []struct {
		body   string
		hdr    map[string]string
		status int
		dup    bool
		rate   outcome.Rate
	}{
		{`{"entry_id": "` + id + `", "kind": "workaround", "index": 0, "worked": true, "request_id": "r1"}`, nil, 201, false,
			outcome.Rate{Curated: w0, Blended: (w0*10 + 1) / 11, Reports: 1, Worked: 1, PriorWeight: 10}},
		{`{"entry_id": "` + id + `", "kind": "workaround", "index": 0, "worked": true, "request_id": "r1"}`, nil, 200, true,
			outcome.Rate{Curated: w0, Blended: (w0*10 + 1) / 11, Reports: 1, Worked: 1, PriorWeight: 10}},
		{`{"entry_id": "` + id + `", "kind": "workaround", "index": 0, "worked": false}`, map[string]string{"Idempotency-Key": "k2"}, 201, false,
			outcome.Rate{Curated: w0, Blended: (w0*10 + 1) / 12, Reports: 2, Worked: 1, Failed: 1, PriorWeight: 10}},
		{`{"entry_id": "` + id + `", "kind": "workaround", "index": 0, "worked": false}`, map[string]string{"Idempotency-Key": "k2"}, 200, true,
			outcome.Rate{Curated: w0, Blended: (w0*10 + 1) / 12, Reports: 2, Worked: 1, Failed: 1, PriorWeight: 10}},
		{`{"entry_id": "` + id + `", "kind": "dead_end", "index": 1, "worked": false, "note": "still crashed"}`, nil, 201, false,
			outcome.Rate{Curated: d1, Blended: (d1*10 + 1) / 11, Reports: 1, Failed: 1, PriorWeight: 10}},
	}
	for i, st := range steps {
		code, a := post(st.body, st.hdr)
		if code != st.status || a.Duplicate != st.dup || a.EntryID != id {
			t.Fatalf("step %d: %d %+v", i, code, a)
		}
		if a.Rate.Curated != st.rate.Curated || !near(a.Rate.Blended, st.rate.Blended) || a.Rate.Reports != st.rate.Reports ||
			a.Rate.Worked != st.rate.Worked || a.Rate.Failed != st.rate.Failed || a.Rate.PriorWeight != 10 {
			t.Errorf("step %d: rate %+v, want %+v", i, a.Rate, st.rate)
		}
	}
	// The entry route shows the same blended rates.
	var got struct {
		Rates service.Rates `json:"rates"`
	}
	decode(t, do(t, s, req{method: "GET", target: "/api/v1/entries/" + id}), &got)
	if r := got.Rates.Workarounds[0]; r.Reports != 2 || !near(r.Blended, (w0*10+1)/12) {
		t.Errorf("entry workaround 0: %+v", r)
	}
	if r := got.Rates.DeadEnds[1]; r.Reports != 1 || r.Failed != 1 {
		t.Errorf("entry dead end 1: %+v", r)
	}
	// So does a diagnosis of a log with this error.
	w := do(t, s, req{method: "POST", target: "/api/v1/diagnose", body: []byte("RuntimeError: CUDA error: an illegal memory access was encountered\n")})
	type item struct {
		Index    int           `json:"index"`
		Kind     string        `json:"kind"`
		Observed *outcome.Rate `json:"observed"`
	}
	var rep struct {
		Diagnoses []struct {
			ID          string `json:"id"`
			DeadEnds    []item `json:"dead_ends"`
			Workarounds []item `json:"workarounds"`
		} `json:"diagnoses"`
	}
	decode(t, w, &rep)
	found, check := false, false
	for _, d := range rep.Diagnoses {
		if d.ID != id {
			continue
		}
		for _, x := range d.DeadEnds {
			if x.Index == 1 {
				found = x.Observed != nil && x.Observed.Reports == 1 && x.Observed.Failed == 1
			}
		}
		// Workaround 0 is a check: it has no rate to blend the reports
		// about it with (they are counted all the same, above).
		for _, x := range d.Workarounds {
			if x.Index == 0 {
				check = x.Kind == "check" && x.Observed == nil
			}
		}
	}
	if !found || !check {
		t.Errorf("the diagnosis does not carry the reports (dead end 1: %v, workaround 0 a check without a blend: %v): %s", found, check, w.Body)
	}
}

func TestOutcomesBad(t *testing.T) {
	s, _ := newServer(t, sqliteStore(t), Options{})
	const good = `{"entry_id": "cuda/illegal-memory-access", "kind": "workaround", "index": 0, "worked": true, "request_id": "c1"}`
	jsonCT := map[string]string{"Content-Type": "application/json"}
	if w := do(t, s, req{method: "POST", target: "/api/v1/outcomes", body: []byte(good), header: jsonCT}); w.Code != 201 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	for _, tt := range []struct {
		name   string
		body   string
		header map[string]string
		status int
		msg    string
	}{
		{"reused request id", strings.Replace(good, `"worked": true`, `"worked": false`, 1), nil, 409,
			`request id already used for a different report`},
		{"unknown entry", `{"entry_id": "cuda/nope", "kind": "workaround", "index": 0, "worked": true}`, nil, 404, "no such entry"},
		{"index out of range", `{"entry_id": "cuda/illegal-memory-access", "kind": "dead_end", "index": 99, "worked": true}`, nil, 400, "index 99 is out of range (indexes count from 0)"},
		{"bad kind", `{"entry_id": "cuda/illegal-memory-access", "kind": "fix", "index": 0, "worked": true}`, nil, 400, `kind is "fix"; want "workaround" or "dead_end"`},
		{"negative index", `{"entry_id": "cuda/illegal-memory-access", "kind": "workaround", "index": -1, "worked": true}`, nil, 400, "index -1 is out of range"},
		{"no entry id", `{"kind": "workaround", "index": 0, "worked": true}`, nil, 400, "entry_id is empty"},
		{"unknown field", `{"entry_id": "cuda/illegal-memory-access", "kind": "workaround", "index": 0, "worked": true, "sucess": 1}`, nil, 400, `json: unknown field "sucess"`},
		{"bad JSON", `{"entry_id": `, nil, 400, "invalid JSON body: unexpected EOF"},
		{"key and id differ", good, map[string]string{"Idempotency-Key": "other"}, 400, "the Idempotency-Key header and request_id differ"},
		{"long note", `{"entry_id": "cuda/illegal-memory-access", "kind": "workaround", "index": 0, "worked": true, "note": "` + strings.Repeat("n", 2001) + `"}`, nil, 400, "note is longer than 2000 bytes"},
		{"not JSON", good, map[string]string{"Content-Type": "text/plain"}, 415, `Content-Type "text/plain": send the body as application/json`},
		{"too large", `{"note": "` + strings.Repeat("n", 64<<10) + `"}`, nil, 413, "the outcome report is larger than this server's limit of 64.00 KiB (65536 bytes)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{}
			for k, v := range jsonCT {
				h[k] = v
			}
			for k, v := range tt.header {
				h[k] = v
			}
			w := do(t, s, req{method: "POST", target: "/api/v1/outcomes", body: []byte(tt.body), header: h})
			if msg := apiError(t, w, tt.status); !strings.Contains(msg, tt.msg) {
				t.Errorf("%q, want %q in it", msg, tt.msg)
			}
		})
	}
	// Nothing above was counted: one report, the first.
	var got struct {
		Rates service.Rates `json:"rates"`
	}
	decode(t, do(t, s, req{method: "GET", target: "/api/v1/entries/cuda/illegal-memory-access"}), &got)
	if r := got.Rates.Workarounds[0]; r.Reports != 1 || r.Worked != 1 {
		t.Errorf("after the refused reports: %+v", r)
	}
}

// Without a store, reports are refused with 503 (after the request is
// checked: a bad one is still 400).
func TestOutcomesNoStore(t *testing.T) {
	s, _ := newServer(t, nil, Options{})
	body, _ := json.Marshal(outcome.Report{EntryID: "cuda/illegal-memory-access", Kind: outcome.Workaround, Index: 0, Worked: true})
	js := map[string]string{"Content-Type": "application/json"}
	msg := apiError(t, do(t, s, req{method: "POST", target: "/api/v1/outcomes", body: body, header: js}), 503)
	if msg != "outcome reporting is off: no database (start gpudx serve with --db, or without --no-db)" {
		t.Errorf("%q", msg)
	}
	bad := bytes.Replace(body, []byte(`"workaround"`), []byte(`"x"`), 1)
	apiError(t, do(t, s, req{method: "POST", target: "/api/v1/outcomes", body: bad, header: js}), 400)
}
