package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/gpudx/gpudx/outcome"
)

// dl reads a definition list as name → value.
func dl(n *html.Node) map[string]string {
	out := map[string]string{}
	for _, dt := range all(n, "dt") {
		dd := dt.NextSibling
		for dd != nil && dd.Type != html.ElementNode {
			dd = dd.NextSibling
		}
		if dd != nil {
			out[text(dt)] = text(dd)
		}
	}
	return out
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// The bundled 4-rank log, sent every way the form can send it, gives the
// diagnosis of `gpudx diagnose`: the root cause, its evidence and figures,
// the dead ends and workarounds with their rates, and the cards that
// follow from it.
func TestDiagnoseDDPOOM(t *testing.T) {
	svc := newService(t, nil)
	h := New(svc, Options{})
	log := readFile(t, "../../examples/ddp-oom.log")
	crlf := bytes.ReplaceAll(log, []byte("\n"), []byte("\r\n"))
	urlencoded := func() *response {
		req := httptest.NewRequest(http.MethodPost, "/diagnose", strings.NewReader(url.Values{"log": {string(crlf)}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return do(t, h, req)
	}
	for _, tt := range []struct {
		name   string
		send   func() *response
		source string
	}{
		{"pasted (CRLF, as browsers send a textarea)", func() *response { return post(t, h, "/diagnose", part{name: "log", data: crlf}) }, "from the pasted text"},
		{"file", func() *response {
			return post(t, h, "/diagnose", part{name: "logfile", file: "ddp-oom.log", data: log})
		}, "from ddp-oom.log"},
		{"gzip file", func() *response {
			return post(t, h, "/diagnose", part{name: "logfile", file: "ddp-oom.log.gz", data: gz(t, log)})
		}, "from ddp-oom.log.gz"},
		{"url-encoded form", urlencoded, "from the pasted text"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.send()
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.raw)
			}
			sum := one(t, r.doc, "section.summary")
			if got := text(one(t, sum, "p.headline")); got != "4 known errors found" {
				t.Errorf("headline %q", got)
			}
			want := fmt.Sprintf("read 29 lines, 3,848 bytes; %d entries checked · %s", len(svc.Base().Entries()), tt.source)
			if got := text(one(t, sum, "p.meta")); got != want {
				t.Errorf("meta line\n got %q\nwant %q", got, want)
			}
			kv := dl(one(t, sum, "dl.kv"))
			if got := kv["Environment"]; got != "driver supports CUDA 12.4 · NCCL 2.21.5 · Python 3.11" {
				t.Errorf("environment %q", got)
			}
			if got := kv["Ranks"]; !strings.HasPrefix(got, "rank 2 failed first (torchrun reported its process, pid 139832, as the failed one") {
				t.Errorf("ranks %q", got)
			}
			checkCards(t, r.doc)
			checkRootCard(t, one(t, r.doc, "article.card.root"))
		})
	}
}

func checkCards(t *testing.T, doc *html.Node) {
	t.Helper()
	var got []string
	for _, c := range all(doc, "article.card") {
		got = append(got, attr(c, "class")+" "+attr(c, "data-id")+" "+text(first(t, c, "p.where")))
	}
	want := []string{
		"card root pytorch/cuda-out-of-memory line 21 · ranks 2",
		"card follow nccl/watchdog-timeout follows from pytorch/cuda-out-of-memory · line 22–24 · ×3 · ranks 0, 1, 3",
		"card follow nccl/async-error-handling-teardown follows from nccl/watchdog-timeout · line 26–27 · ×2 · ranks 1",
		"card follow nccl/elastic-child-failed follows from nccl/async-error-handling-teardown, nccl/watchdog-timeout, pytorch/cuda-out-of-memory · line 29",
	}
	if !slices.Equal(got, want) {
		t.Errorf("cards\n got %q\nwant %q", got, want)
	}
	// A cause that has a card on the page links to the card.
	follow := all(doc, "article.card.follow")[0]
	if href := attr(first(t, one(t, follow, "span.cause"), "a"), "href"); href != "#d1" {
		t.Errorf("follow-on card links its cause at %q, want #d1", href)
	}
}

func checkRootCard(t *testing.T, c *html.Node) {
	t.Helper()
	h2 := one(t, c, "h2")
	if got := text(h2); got != "ROOT CAUSE pytorch/cuda-out-of-memory" {
		t.Errorf("heading %q", got)
	}
	if href := attr(one(t, h2, "a.id"), "href"); href != "/entries/pytorch/cuda-out-of-memory" {
		t.Errorf("entry link %q", href)
	}
	rows := all(one(t, c, "table.evidence"), "tr")[1:] // after the header row
	if len(rows) != 1 {
		t.Fatalf("%d evidence rows, want 1", len(rows))
	}
	if got := text(one(t, rows[0], "th")); got != "21" {
		t.Errorf("evidence line %q", got)
	}
	if got := text(one(t, rows[0], "td")); !strings.HasPrefix(got, "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 2 has a total capacity of 79.15 GiB of which 2.81 GiB is free.") {
		t.Errorf("evidence text %q", got)
	}
	facts := dl(one(t, c, "dl.facts"))
	wantFacts := map[string]string{"allocated": "70.94 GiB", "free": "2.81 GiB", "gpu": "2", "other_processes": "0 B",
		"requested": "4.00 GiB", "reserved": "75.60 GiB", "reserved_unallocated": "4.66 GiB", "total_capacity": "79.15 GiB"}
	if fmt.Sprint(facts) != fmt.Sprint(wantFacts) {
		t.Errorf("facts\n got %v\nwant %v", facts, wantFacts)
	}
	mem := one(t, c, "section.mem")
	if got := text(one(t, mem, "span.verdict")); got != "Verdict: fragmentation" {
		t.Errorf("verdict %q", got)
	}
	figs := dl(one(t, mem, "dl.figs"))
	wantFigs := map[string]string{"requested": "4.00 GiB", "capacity": "79.15 GiB", "free": "2.81 GiB", "allocated": "70.94 GiB",
		"reserved": "75.60 GiB", "reserved-unallocated": "4.66 GiB", "other processes": "0 B"}
	if fmt.Sprint(figs) != fmt.Sprint(wantFigs) {
		t.Errorf("memory figures\n got %v\nwant %v", figs, wantFigs)
	}
	if got := text(first(t, mem, "ul.advice")); !strings.HasPrefix(got, "4.66 GiB is reserved but unallocated, at least the 4.00 GiB asked: enable expandable segments") {
		t.Errorf("advice %q", got)
	}
	// Dead ends and workarounds in the diagnosis's order, numbered 1..n
	// as shown, with the entry's own number where it differs, and their
	// rates; those whose condition fails here are marked.
	items := func(sec string) []string {
		var out []string
		for _, li := range all(one(t, c, "section."+sec), "li.item") {
			s := attr(li, "value") + " " + text(one(t, li, "span.rate"))
			if ref := all(li, "span.ref"); len(ref) > 0 {
				s += " " + text(ref[0])
			}
			if hasClass(li, "na") {
				s += " " + text(one(t, li, "span.flag"))
			}
			out = append(out, s)
		}
		return out
	}
	if got, want := items("dead"), []string{"1 fails ~85%, estimate", "2 fails ~90%, estimate [item 4]", "3 fails ~98%, estimate does not apply here", "4 fails ~80%, estimate [item 2] does not apply here"}; !slices.Equal(got, want) {
		t.Errorf("dead ends\n got %q\nwant %q", got, want)
	}
	if got, want := items("do"), []string{"1 works ~60%, estimate", "2 works ~75%, estimate [item 3]", "3 works ~35%, estimate [item 4]", "4 works ~70%, estimate [item 2] does not apply here"}; !slices.Equal(got, want) {
		t.Errorf("workarounds\n got %q\nwant %q", got, want)
	}
	dead := all(one(t, c, "section.dead"), "li.item")
	if got := text(one(t, dead[0], "p.action")); got != "Call torch.cuda.empty_cache() in the except handler (or before the failing line) and retry the same batch fails ~85%, estimate" {
		t.Errorf("dead end 1 %q", got)
	}
	if got := text(one(t, dead[2], "p.cond")); got != "When: facts.requested > facts.total_capacity — does not hold here (facts.requested = 4.00 GiB, facts.total_capacity = 79.15 GiB)" {
		t.Errorf("condition %q", got)
	}
	do := all(one(t, c, "section.do"), "li.item")
	if got := text(one(t, do[0], "pre.how")); !strings.HasPrefix(got, "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True # before Python starts") {
		t.Errorf("how %q", got)
	}
	if got := attr(first(t, one(t, do[0], "p.src"), "a"), "href"); got != "https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf" {
		t.Errorf("source link %q", got)
	}
	if n := len(all(c, "p.obs")); n != 0 {
		t.Errorf("%d observed rates without an outcome store", n)
	}
}

// With outcomes reported, each item shows its rate blended with the
// reports and how many back it; items nobody reported say so.
func TestDiagnoseObservedRates(t *testing.T) {
	st := newMemStore()
	ctx := context.Background()
	for i := 0; i < 10; i++ { // workaround 1 (index 0) worked 10 times
		st.Record(ctx, outcome.Report{EntryID: "pytorch/cuda-out-of-memory", Kind: outcome.Workaround, Index: 0, Worked: true})
	}
	st.Record(ctx, outcome.Report{EntryID: "pytorch/cuda-out-of-memory", Kind: outcome.DeadEnd, Index: 1, Worked: true})
	h := New(newService(t, st), Options{})
	r := post(t, h, "/diagnose", part{name: "log", data: readFile(t, "../../examples/ddp-oom.log")})
	c := one(t, r.doc, "article.card.root")
	obs := func(sec, value string) string {
		for _, li := range all(one(t, c, "section."+sec), "li.item") {
			if attr(li, "value") == value {
				return text(one(t, li, "p.obs"))
			}
		}
		t.Fatalf("no item %s in %s", value, sec)
		return ""
	}
	// (0.60·10 + 10) / 20 = 80%; dead end 2 (curated 80%, shown 4th)
	// worked once, which counts against calling it a dead end:
	// (0.80·10 + 0) / 11 = 73%. Workaround 3 is shown 2nd.
	if got := obs("do", "1"); got != "80% with 10 reports: 10 worked, 0 failed (the curated 60% counts as 10 reports)" {
		t.Errorf("workaround 1: %q", got)
	}
	if got := obs("dead", "4"); got != "73% with 1 report: 1 worked, 0 failed (the curated 80% counts as 10 reports)" {
		t.Errorf("dead end 2: %q", got)
	}
	if got := obs("do", "2"); got != "no reports yet" {
		t.Errorf("workaround 3: %q", got)
	}
}

// A log with no known error says so, plainly.
func TestDiagnoseNothingFound(t *testing.T) {
	svc := newService(t, nil)
	h := New(svc, Options{})
	r := post(t, h, "/diagnose", part{name: "logfile", file: "clean-training.log", data: readFile(t, "../../examples/clean-training.log")})
	if r.status != http.StatusOK {
		t.Fatalf("status %d", r.status)
	}
	sum := one(t, r.doc, "section.summary")
	if !hasClass(sum, "ok") {
		t.Errorf("summary class %q, want ok", attr(sum, "class"))
	}
	if got := text(one(t, sum, "p.headline")); got != "No known GPU error found" {
		t.Errorf("headline %q", got)
	}
	want := fmt.Sprintf("None of the %d entries matched.", len(svc.Base().Entries()))
	if got := text(all(sum, "p")[2]); !strings.HasPrefix(got, want) {
		t.Errorf("note %q, want it to start %q", got, want)
	}
	if n := len(all(r.doc, "article.card")); n != 0 {
		t.Errorf("%d cards", n)
	}
}

// The result page sends the pasted log back in its form, so that the
// language switch (buttons of that form) keeps the result; a log from a
// file is not echoed and the switch goes back to the start page.
func TestResultLanguageSwitch(t *testing.T) {
	h := New(newService(t, nil), Options{})
	log := readFile(t, "../../examples/ddp-oom.log")
	env := "NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4\n"
	r := post(t, h, "/diagnose", part{name: "log", data: log}, part{name: "env", data: []byte(env)})
	if got := text(byID(t, r.doc, "again-log")); got != strings.Join(strings.Fields(string(log)), " ") {
		t.Errorf("the again form does not hold the log sent")
	}
	if got := byID(t, r.doc, "again-env").FirstChild.Data; got != env {
		t.Errorf("env echoed as %q", got)
	}
	var switches []string
	for _, b := range all(one(t, r.doc, "ul.langs"), "button") {
		switches = append(switches, attr(b, "form")+" "+attr(b, "name")+"="+attr(b, "value")+" "+text(b))
	}
	if want := []string{"again lang=zh 中文"}; !slices.Equal(switches, want) {
		t.Errorf("switch buttons %q, want %q", switches, want)
	}
	// The switch posts the form again with lang=zh: the same diagnosis in
	// Chinese, remembered in the cookie.
	r = post(t, h, "/diagnose", part{name: "log", data: log}, part{name: "env", data: []byte(env)}, part{name: "lang", data: []byte("zh")})
	if got := text(one(t, one(t, r.doc, "article.card.root"), "span.badge")); got != "根本原因" {
		t.Errorf("badge after the switch %q", got)
	}
	if c := r.header.Get("Set-Cookie"); !strings.HasPrefix(c, "gpudx_lang=zh;") {
		t.Errorf("Set-Cookie %q", c)
	}
	if got := dl(one(t, r.doc, "dl.kv"))["环境"]; !strings.Contains(got, "驱动 550.54.15") {
		t.Errorf("environment from the env text: %q", got)
	}

	r = post(t, h, "/diagnose", part{name: "logfile", file: "ddp-oom.log", data: log})
	if n := len(all(one(t, r.doc, "ul.langs"), "button")); n != 0 {
		t.Errorf("%d switch buttons for a log from a file", n)
	}
	if href := attr(first(t, one(t, r.doc, "ul.langs"), "a"), "href"); href != "/?lang=zh" {
		t.Errorf("switch link %q", href)
	}
	if got := text(byID(t, r.doc, "again-log")); got != "" {
		t.Errorf("a log from a file is echoed: %d bytes", len(got))
	}
}

// The environment text counts where the log names no version: the
// environment line shows it, and the entry's version table is read
// against it.
func TestDiagnoseWithEnvironment(t *testing.T) {
	h := New(newService(t, nil), Options{})
	log := "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`\n"
	r := post(t, h, "/diagnose", part{name: "log", data: []byte(log)}, part{name: "env", data: []byte("PyTorch version: 2.1.0+cu121\r\n")})
	if got := text(one(t, r.doc, "p.headline")); got != "1 known error found" {
		t.Errorf("headline %q", got)
	}
	if got := dl(one(t, r.doc, "dl.kv"))["Environment"]; got != "PyTorch 2.1.0+cu121 · built for CUDA 12.1" {
		t.Errorf("environment %q", got)
	}
	card := one(t, r.doc, "article.card.root")
	if got := attr(card, "data-id"); got != "cuda/cublas-execution-failed" {
		t.Fatalf("root cause %q", got)
	}
	vers := one(t, card, "section.vers")
	if got := texts(all(one(t, vers, "ul.notes"), "li")); !slices.Equal(got, []string{"PyTorch 1.8.1 was affected; installed 2.1.0+cu121 is a different release, and no fix release is recorded."}) {
		t.Errorf("version notes %q", got)
	}
	if got := texts(all(one(t, vers, "table.versions"), "th")); !slices.Equal(got[6:], []string{"PyTorch 1.8.1", "PyTorch 1.x", "PyTorch 2.x"}) {
		t.Errorf("version table rows %q", got[6:])
	}
}

// An Xid in a kernel log shows the operator's block on its card and on
// its entry page, in both languages, from the entry's operator fields.
func TestOperatorBlock(t *testing.T) {
	svc := newService(t, nil)
	h := New(svc, Options{})
	log := readFile(t, "../../examples/xid79-dmesg.log")
	for _, tt := range []struct{ lang, line, next string }{
		{"en", "critical: GPU or node unusable until acted on · hardware fault · drain the node · NVIDIA action RESTART_BM",
			"→ Drain the node, save the kernel log, reboot;"},
		{"zh", "严重：处理前 GPU 或节点不可用 · 硬件故障 · 下线该节点 · NVIDIA 建议操作 RESTART_BM", "→ 下线节点，保存内核日志后重启；"},
	} {
		r := post(t, h, "/diagnose?lang="+tt.lang, part{name: "log", data: log})
		if r.status != http.StatusOK {
			t.Fatalf("%s: status %d", tt.lang, r.status)
		}
		ps := all(one(t, one(t, r.doc, "article.card.root"), "section.op"), "p")
		if len(ps) != 2 || text(ps[0]) != tt.line || !strings.HasPrefix(text(ps[1]), tt.next) {
			t.Errorf("%s: operator section %q", tt.lang, texts(ps))
		}
		page := get(t, h, "/entries/driver/xid-79-fallen-off-bus?lang="+tt.lang)
		if !strings.Contains(string(page.raw), tt.line) {
			t.Errorf("%s: entry page lacks the operator line", tt.lang)
		}
	}
}
