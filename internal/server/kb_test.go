package server

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/internal/service"
)

func TestEntries(t *testing.T) {
	s, _ := newServer(t, nil, Options{})
	all := s.svc.Base().Len()
	count := func(domain, category string) int {
		n := 0
		for _, e := range s.svc.Base().Entries() {
			if (domain == "" || e.Domain == domain) && (category == "" || e.Category == category) {
				n++
			}
		}
		return n
	}
	for _, tt := range []struct {
		query   string
		total   int
		firstID string
	}{
		{"", all, "build/cmake-could-not-find-cudatoolkit"},
		{"?domain=nccl", count("nccl", ""), "nccl/address-in-use"},
		{"?domain=NCCL", count("nccl", ""), "nccl/address-in-use"},
		{"?category=resource_error", count("", "resource_error"), ""},
		{"?domain=cuda&category=resource_error", count("cuda", "resource_error"), ""},
		{"?q=GPU+has+fallen+off+the+bus", -1, "driver/xid-79-fallen-off-bus"},
		{"?domain=nope", 0, ""},
	} {
		w := do(t, s, req{method: "GET", target: "/api/v1/entries" + tt.query})
		var got struct {
			Total   int `json:"total"`
			Entries []struct {
				ID, Signature, Domain, Category string
				ErrorCode                       string `json:"error_code"`
				Tier                            string `json:"verification_tier"`
			} `json:"entries"`
		}
		decode(t, w, &got)
		if w.Code != 200 || (tt.total >= 0 && got.Total != tt.total) || got.Total != len(got.Entries) {
			t.Errorf("%s: %d, total %d with %d entries, want %d", tt.query, w.Code, got.Total, len(got.Entries), tt.total)
			continue
		}
		if tt.firstID != "" && (len(got.Entries) == 0 || got.Entries[0].ID != tt.firstID) {
			t.Errorf("%s: first entry %+v, want %s", tt.query, got.Entries[:min(1, len(got.Entries))], tt.firstID)
		}
		for _, e := range got.Entries {
			k := s.svc.Entry(e.ID)
			if k == nil || e.Signature != k.Signature || e.Domain != k.Domain || e.Category != k.Category || e.ErrorCode != k.ErrorCode || e.Tier != k.VerificationTier {
				t.Errorf("%s: summary %+v does not match the entry", tt.query, e)
			}
		}
	}
	if n := count("nccl", ""); n < 5 || n >= all {
		t.Errorf("nccl entries: %d of %d", n, all)
	}
}

// One entry: every field of its knowledge file as stored, plus the
// blended rates (the curated ones, with no reports yet).
func TestEntry(t *testing.T) {
	s, _ := newServer(t, sqliteStore(t), Options{})
	w := do(t, s, req{method: "GET", target: "/api/v1/entries/cuda/illegal-memory-access"})
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var got map[string]any
	decode(t, w, &got)
	var file map[string]any
	if err := json.Unmarshal(readFile(t, "../../knowledge/cuda/illegal-memory-access.json"), &file); err != nil {
		t.Fatal(err)
	}
	for k, v := range file {
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("field %s: %v, the knowledge file has %v", k, got[k], v)
		}
	}
	var rates struct {
		Rates service.Rates `json:"rates"`
	}
	decode(t, w, &rates)
	e := s.svc.Entry("cuda/illegal-memory-access")
	if len(rates.Rates.Workarounds) != len(e.Workarounds) || len(rates.Rates.DeadEnds) != len(e.DeadEnds) || len(e.Workarounds) == 0 {
		t.Fatalf("rates %+v", rates.Rates)
	}
	for i, r := range rates.Rates.Workarounds {
		if r.Curated != e.Workarounds[i].SuccessRate || r.Blended != r.Curated || r.Reports != 0 || r.PriorWeight != 10 {
			t.Errorf("workaround %d: %+v", i, r)
		}
	}
	for i, r := range rates.Rates.DeadEnds {
		if r.Curated != e.DeadEnds[i].FailRate || r.Blended != r.Curated {
			t.Errorf("dead end %d: %+v", i, r)
		}
	}
}

// Unknown ids are 404 with suggestions; ids that are not ids (traversal,
// odd characters) are 400 or never reach the route.
func TestEntryHostile(t *testing.T) {
	s, _ := newServer(t, nil, Options{})
	for _, tt := range []struct {
		target string
		status int
		msg    string
	}{
		{"/api/v1/entries/cuda/illegal-memory-acces", 404, `no entry "cuda/illegal-memory-acces"; did you mean cuda/illegal-memory-access`},
		{"/api/v1/entries/nope/nope", 404, `no entry "nope/nope"`},
		{"/api/v1/entries/cuda/..%2f..%2fetc%2fpasswd", 400, `"cuda/../../etc/passwd" is not an entry id`},
		{"/api/v1/entries/cuda/a..b", 400, "is not an entry id"},
		{"/api/v1/entries/%2e%2e/passwd", 400, `"../passwd" is not an entry id`},
		{"/api/v1/entries/cuda/x%00y", 400, "is not an entry id"},
		{"/api/v1/entries/cuda/" + strings.Repeat("a", 129), 400, "is not an entry id"},
		{"/api/v1/entries/cuda", 404, "no such endpoint: GET /api/v1/entries/cuda"},
		{"/api/v1/entries/cuda/illegal-memory-access/extra", 404, "no such endpoint"},
	} {
		w := do(t, s, req{method: "GET", target: tt.target})
		if msg := apiError(t, w, tt.status); !strings.Contains(msg, tt.msg) {
			t.Errorf("%s: %q, want %q in it", tt.target, msg, tt.msg)
		}
	}
	// A path with dot segments is cleaned by the router and redirected:
	// it never names a file, and never reaches the entry handler.
	w := do(t, s, req{method: "GET", target: "/api/v1/entries/../../../etc/passwd"})
	if w.Code != http.StatusTemporaryRedirect || w.Header().Get("Location") != "/etc/passwd" {
		t.Errorf("dot segments: %d %q", w.Code, w.Header().Get("Location"))
	}
	w = do(t, s, req{method: "GET", target: "/api/v1/entries/../../x"})
	if w.Code != http.StatusTemporaryRedirect || w.Header().Get("Location") != "/api/x" {
		t.Errorf("dot segments: %d %q", w.Code, w.Header().Get("Location"))
	}
	if msg := apiError(t, do(t, s, req{method: "GET", target: "/api/x"}), 404); msg != "no such endpoint: GET /api/x (the API is described at /api/v1/openapi.json)" {
		t.Errorf("after the redirect: %q", msg)
	}
}

func TestDomains(t *testing.T) {
	s, _ := newServer(t, nil, Options{})
	w := do(t, s, req{method: "GET", target: "/api/v1/domains"})
	var got struct {
		Domains []service.Domain `json:"domains"`
	}
	decode(t, w, &got)
	want := s.svc.Domains()
	if !reflect.DeepEqual(got.Domains, want) {
		t.Errorf("domains %+v, want %+v", got.Domains, want)
	}
	n := 0
	for _, d := range got.Domains {
		n += d.Entries
	}
	if n != s.svc.Base().Len() || len(got.Domains) < 5 {
		t.Errorf("%d domains with %d entries; the base has %d", len(got.Domains), n, s.svc.Base().Len())
	}
}

func TestSearch(t *testing.T) {
	s, _ := newServer(t, nil, Options{})
	type result struct {
		Query   string `json:"query"`
		Results []struct {
			ID    string `json:"id"`
			Score *int   `json:"score"`
		} `json:"results"`
	}
	for _, tt := range []struct {
		q     string
		limit string
		first string
		n     int
	}{
		{"CUBLAS_STATUS_ALLOC_FAILED", "", "cuda/cublas-alloc-failed", -1},
		{"an illegal memory access was encountered", "1", "cuda/illegal-memory-access", 1},
		{"nccl timeout", "3", "", 3},
		{"qqqqzzzz", "", "", 0},
	} {
		target := "/api/v1/search?q=" + strings.ReplaceAll(tt.q, " ", "+")
		if tt.limit != "" {
			target += "&limit=" + tt.limit
		}
		w := do(t, s, req{method: "GET", target: target})
		var got result
		decode(t, w, &got)
		want := s.svc.Search(tt.q, 10)
		if tt.limit != "" {
			want = want[:min(len(want), int(tt.limit[0]-'0'))]
		}
		if w.Code != 200 || got.Query != tt.q || len(got.Results) != len(want) || (tt.n >= 0 && len(got.Results) != tt.n) {
			t.Errorf("%s: %d %+v, want %d results", tt.q, w.Code, got, len(want))
			continue
		}
		for i, r := range got.Results {
			if r.ID != want[i].Entry.ID || r.Score == nil || *r.Score != want[i].Score {
				t.Errorf("%s: result %d %+v, want %s %d", tt.q, i, r, want[i].Entry.ID, want[i].Score)
			}
		}
		if tt.first != "" && got.Results[0].ID != tt.first {
			t.Errorf("%s: first %s, want %s", tt.q, got.Results[0].ID, tt.first)
		}
	}
	for _, target := range []string{"/api/v1/search", "/api/v1/search?q=", "/api/v1/search?q=+++"} {
		if msg := apiError(t, do(t, s, req{method: "GET", target: target}), 400); !strings.HasPrefix(msg, "q is empty") {
			t.Errorf("%s: %q", target, msg)
		}
	}
	for _, l := range []string{"0", "-1", "abc", "1001"} {
		msg := apiError(t, do(t, s, req{method: "GET", target: "/api/v1/search?q=nccl&limit=" + l}), 400)
		if msg != `limit: want a number from 1 to 1000, got "`+l+`"` {
			t.Errorf("limit %s: %q", l, msg)
		}
	}
}
