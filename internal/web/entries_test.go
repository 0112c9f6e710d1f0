package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/outcome"
)

// An entry's page: its dead ends and workarounds with curated rates (and,
// with a store, the blend with reports), the version table, related
// entries as links and the sources.
func TestEntryPage(t *testing.T) {
	h := New(newService(t, nil), Options{})
	r := get(t, h, "/entries/pytorch/cuda-out-of-memory")
	if r.status != http.StatusOK {
		t.Fatalf("status %d", r.status)
	}
	if got := text(one(t, r.doc, "h1")); got != "pytorch/cuda-out-of-memory" {
		t.Errorf("title %q", got)
	}
	items := func(sec string) []string {
		var out []string
		for _, li := range all(byID(t, r.doc, sec+"-h").Parent, "li.item") {
			out = append(out, attr(li, "value")+". "+text(one(t, li, "p.action")))
		}
		return out
	}
	wantDead := []string{
		"1. Call torch.cuda.empty_cache() in the except handler (or before the failing line) and retry the same batch fails ~85%, estimate",
		"2. Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True when 'reserved by PyTorch but unallocated' is small compared with the request fails ~80%, estimate",
		"3. Tune allocator options (expandable_segments, max_split_size_mb) when the request is larger than the whole GPU fails ~98%, estimate",
		"4. Switch to the new variable name PYTORCH_ALLOC_CONF=expandable_segments:True on PyTorch 2.9.x fails ~90%, estimate",
	}
	if got := items("dead"); !slices.Equal(got, wantDead) {
		t.Errorf("dead ends\n got %q\nwant %q", got, wantDead)
	}
	wantDo := []string{
		"1. Enable expandable segments when 'reserved by PyTorch but unallocated' is large works ~60%, estimate",
		"2. Free the GPU from other processes, or run on a GPU nobody else uses works ~70%, estimate",
		"3. Lower the peak memory of a step: smaller micro-batch with gradient accumulation, activation checkpointing, no autograd graph for evaluation works ~75%, estimate",
		"4. Stop keeping autograd history and dead tensors alive across iterations works ~35%, estimate",
	}
	if got := items("do"); !slices.Equal(got, wantDo) {
		t.Errorf("workarounds\n got %q\nwant %q", got, wantDo)
	}
	dead := all(byID(t, r.doc, "dead-h").Parent, "li.item")
	if got := text(one(t, dead[1], "p.cond")); got != "When: facts.reserved_unallocated < facts.requested" {
		t.Errorf("condition %q", got)
	}
	if got := attr(one(t, one(t, dead[3], "p.src"), "a"), "href"); got != "https://github.com/pytorch/pytorch/issues/183387" {
		t.Errorf("source %q", got)
	}
	if got := text(one(t, r.doc, "p.note")); got != "The rates are the curated ones: this server records no outcomes." {
		t.Errorf("rates note %q", got)
	}

	var versions []string
	for _, tr := range all(one(t, r.doc, "table.versions"), "tr")[1:] {
		var cells []string
		for _, c := range find(tr, func(n *htmlNode) bool { return n.Data == "th" || n.Data == "td" }) {
			cells = append(cells, text(c))
		}
		versions = append(versions, strings.Join(cells[:4], " | ")+" | "+cells[5])
	}
	wantVersions := []string{"PyTorch 2.1 | 2.1 | — | — | active", "PyTorch 2.2 | — | — | — | active", "PyTorch 2.4 | — | — | — | active"}
	if !slices.Equal(versions, wantVersions) {
		t.Errorf("versions\n got %q\nwant %q", versions, wantVersions)
	}

	related := byID(t, r.doc, "related-h").Parent
	var links []string
	for _, a := range all(related, "a") {
		links = append(links, attr(a, "href"))
	}
	wantLinks := []string{"/entries/nccl/watchdog-timeout", "/entries/cuda/out-of-memory", "/entries/pytorch/cuda-out-of-memory-legacy", "/entries/cuda/cublas-alloc-failed"}
	if !slices.Equal(links, wantLinks) {
		t.Errorf("related links\n got %q\nwant %q", links, wantLinks)
	}
	for _, href := range links {
		if r := get(t, h, href); r.status != http.StatusOK {
			t.Errorf("%s: status %d", href, r.status)
		}
	}
	if n := len(all(byID(t, r.doc, "examples-h").Parent, "pre.ex")); n != 10 {
		t.Errorf("%d example messages, want 6 matched and 4 near misses", n)
	}
	meta := dl(one(t, r.doc, "dl.meta"))
	if meta["Verification"] != "docs_verified" || meta["Confidence"] != "0.85" || meta["Fix success rate"] != "works ~70%, estimate" {
		t.Errorf("meta %v", meta)
	}
}

// An entry with regex_not shows it under its regex; one without does not.
func TestEntryPageRegexNot(t *testing.T) {
	h := New(newService(t, nil), Options{})
	r := get(t, h, "/entries/ecosystem/tensorrt-no-tactic-implementation")
	codes := all(one(t, r.doc, "details.regex"), "code")
	if len(codes) != 2 || text(codes[1]) != `^\s*Error message: |Skipping this backend strategy|Engine generation failed with backend strategy` {
		t.Errorf("regex and regex_not: %d codes", len(codes))
	}
	r = get(t, h, "/entries/pytorch/cuda-out-of-memory")
	if codes := all(one(t, r.doc, "details.regex"), "code"); len(codes) != 1 {
		t.Errorf("no regex_not, %d codes", len(codes))
	}
}

// With a store, the entry page shows each item's blended rate and the
// reports behind it.
func TestEntryPageBlendedRates(t *testing.T) {
	st := newMemStore()
	ctx := context.Background()
	for _, worked := range []bool{true, false, false} {
		st.Record(ctx, outcome.Report{EntryID: "pytorch/cuda-out-of-memory", Kind: outcome.Workaround, Index: 2, Worked: worked})
	}
	r := get(t, New(newService(t, st), Options{}), "/entries/pytorch/cuda-out-of-memory")
	var obs []string
	for _, li := range all(byID(t, r.doc, "do-h").Parent, "li.item") {
		obs = append(obs, text(one(t, li, "p.obs")))
	}
	// (0.75·10 + 1) / 13 = 65%.
	want := []string{"no reports yet", "no reports yet", "65% with 3 reports: 1 worked, 2 failed (the curated 75% counts as 10 reports)", "no reports yet"}
	if !slices.Equal(obs, want) {
		t.Errorf("blended rates\n got %q\nwant %q", obs, want)
	}
	if got := text(one(t, r.doc, "p.note")); !strings.HasPrefix(got, "Rates blend the curated figure, counted as 10 reports, with the outcomes people reported") {
		t.Errorf("note %q", got)
	}
}

// The list: every entry, counts per domain, search and filters.
func TestEntriesList(t *testing.T) {
	svc := newService(t, nil)
	h := New(svc, Options{})
	ids := func(r *response) []string {
		var out []string
		for _, c := range all(one(t, r.doc, "ul.entries"), "code") {
			out = append(out, text(c))
		}
		return out
	}
	r := get(t, h, "/entries")
	if got, want := len(ids(r)), len(svc.Base().Entries()); got != want {
		t.Errorf("%d entries listed, want %d", got, want)
	}
	domains := map[string]string{}
	for _, a := range all(one(t, r.doc, "nav.domains"), "a") {
		domains[attr(a, "href")] = text(a)
	}
	for _, d := range svc.Domains() {
		want := d.Name + " " + itoa(d.Entries)
		if got := domains["/entries?domain="+d.Name]; got != want {
			t.Errorf("domain link for %s: %q, want %q", d.Name, got, want)
		}
	}

	r = get(t, h, "/entries?q=xid+79")
	if got := ids(r); len(got) == 0 || got[0] != "driver/xid-79-fallen-off-bus" {
		t.Errorf("search xid 79: %q", got)
	}
	if got := attr(byID(t, r.doc, "q"), "value"); got != "xid 79" {
		t.Errorf("search box keeps %q", got)
	}
	r = get(t, h, "/entries?domain=nccl&category=configuration_error")
	var want []string
	for _, e := range svc.Base().Entries() {
		if e.Domain == "nccl" && e.Category == "configuration_error" {
			want = append(want, e.ID)
		}
	}
	slices.Sort(want)
	if got := ids(r); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("nccl configuration errors\n got %q\nwant %q", got, want)
	}
	if got := text(one(t, r.doc, "h2")); got != itoa(len(want))+" entries match · Clear the filters" {
		t.Errorf("count %q", got)
	}
	r = get(t, h, "/entries?q=zzqxv+qqqzx")
	if got := text(one(t, r.doc, "p.note")); got != "No entry matches." {
		t.Errorf("no results: %q", got)
	}
}

// Unknown pages and entries are 404 pages; a domain alone lists its
// entries.
func TestNotFound(t *testing.T) {
	h := New(newService(t, nil), Options{})
	for _, tt := range []struct{ path, msg string }{
		{"/nope", "There is no page at /nope."},
		{"/entries/pytorch/nope", "There is no entry pytorch/nope in the knowledge base."},
		{"/static/", "There is no page at /static/."},
		{"/static/none.css", "There is no page at /static/none.css."},
	} {
		r := get(t, h, tt.path)
		if r.status != http.StatusNotFound {
			t.Errorf("%s: status %d", tt.path, r.status)
			continue
		}
		if got := text(one(t, r.doc, "h1")); got != "Not found" {
			t.Errorf("%s: title %q", tt.path, got)
		}
		if got := alert(t, r); got != tt.msg {
			t.Errorf("%s: %q", tt.path, got)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/entries/pytorch", nil))
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/entries?domain=pytorch" {
		t.Errorf("/entries/pytorch: %d to %q", rec.Code, rec.Header().Get("Location"))
	}
}
