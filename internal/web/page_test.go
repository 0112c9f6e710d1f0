package web

import (
	"github.com/gpudx/gpudx/internal/view"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// ?lang=zh switches every label to Chinese, uses the entries' Chinese
// text and is remembered in a cookie; ?lang=en switches back.
func TestChinese(t *testing.T) {
	svc := newService(t, nil)
	h := New(svc, Options{})
	e := svc.Entry("pytorch/cuda-out-of-memory")
	r := get(t, h, "/entries/pytorch/cuda-out-of-memory?lang=zh")
	if got := attr(one(t, r.doc, "html"), "lang"); got != "zh-CN" {
		t.Errorf("html lang %q", got)
	}
	cookie := r.header.Get("Set-Cookie")
	if !strings.HasPrefix(cookie, "gpudx_lang=zh; Path=/; Max-Age=31536000; HttpOnly; SameSite=Lax") {
		t.Errorf("Set-Cookie %q", cookie)
	}
	what := byID(t, r.doc, "what-h")
	if got := text(what); got != "出了什么问题" {
		t.Errorf("heading %q", got)
	}
	if got := text(first(t, what.Parent, "p")); got != e.RootCauseZh {
		t.Errorf("root cause is not root_cause_zh:\n%s", got)
	}
	if got := text(one(t, r.doc, "p.sig")); got != e.SignatureZh {
		t.Errorf("signature is not signature_zh: %q", got)
	}
	dead := all(byID(t, r.doc, "dead-h").Parent, "li.item")
	if got, want := text(one(t, dead[0], "p.action")), e.DeadEndsZh[0]+" 失败率 约 85%，估计"; got != want {
		t.Errorf("dead end 1\n got %q\nwant %q", got, want)
	}
	if got := texts(all(one(t, r.doc, "nav.menu"), "a")); !slices.Equal(got, []string{"诊断日志", "显存快照", "知识库"}) {
		t.Errorf("menu %q", got)
	}

	// The cookie carries the choice to the next page.
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Cookie", "gpudx_lang=zh")
	r = do(t, h, req)
	if got := text(one(t, r.doc, "h1")); got != "诊断 GPU 任务日志" {
		t.Errorf("start page with the cookie: %q", got)
	}
	if r.header.Get("Set-Cookie") != "" {
		t.Errorf("the cookie is set again")
	}
	body, ct := multipartBody(t, part{name: "log", data: readFile(t, "../../examples/ddp-oom.log")})
	req = httptest.NewRequest(http.MethodPost, "/diagnose", body)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Cookie", "gpudx_lang=zh")
	r = do(t, h, req)
	card := one(t, r.doc, "article.card.root")
	if got := text(one(t, card, "span.badge")); got != "根本原因" {
		t.Errorf("badge %q", got)
	}
	if got := text(one(t, r.doc, "p.headline")); got != "发现 4 个已知错误" {
		t.Errorf("headline %q", got)
	}
	if got := text(one(t, card, "span.verdict")); got != "结论：碎片化" {
		t.Errorf("verdict %q", got)
	}
	if got := text(one(t, one(t, card, "section.what"), "p")); got != e.RootCauseZh {
		t.Errorf("card root cause is not root_cause_zh")
	}
	if got := text(all(card, "p.where")[0]); got != "第 21 行 · rank 2" {
		t.Errorf("where %q", got)
	}

	// ?lang=en overrides the cookie and replaces it.
	req = httptest.NewRequest(http.MethodGet, "/entries?lang=en", nil)
	req.Header.Set("Cookie", "gpudx_lang=zh")
	r = do(t, h, req)
	if got := text(one(t, r.doc, "h1")); got != "Knowledge base" {
		t.Errorf("?lang=en: %q", got)
	}
	if c := r.header.Get("Set-Cookie"); !strings.HasPrefix(c, "gpudx_lang=en;") {
		t.Errorf("Set-Cookie %q", c)
	}
}

func TestAcceptLanguage(t *testing.T) {
	for _, tt := range []struct{ header, want string }{
		{"", "en"},
		{"zh-CN,zh;q=0.9,en;q=0.8", "zh"},
		{"en-US,en;q=0.9,zh-CN;q=0.8", "en"},
		{"fr-FR, zh;q=0.5", "zh"},
		{"de", "en"},
		{"zh-TW;q=0.3, en;q=0.7", "en"},
		{"zh;q=bad", "en"},
	} {
		if got := acceptLang(tt.header); got != tt.want {
			t.Errorf("Accept-Language %q: %s, want %s", tt.header, got, tt.want)
		}
	}
}

// Nothing a person sends becomes markup: a log line, the environment
// text, a file name and a path all come back as text.
func TestEscaping(t *testing.T) {
	h := New(newService(t, nil), Options{})
	const evil = "<script>alert(1)</script>"
	line := "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. " + evil + "\n"
	r := post(t, h, "/diagnose", part{name: "logfile", file: `<img src=x onerror=alert(2)>.log`, data: []byte(line)},
		part{name: "log", data: []byte(evil)}, part{name: "env", data: []byte(evil + "\nPython 3.11.4\n")})
	if r.status != http.StatusOK {
		t.Fatalf("status %d", r.status)
	}
	card := one(t, r.doc, "article.card.root")
	if got := text(one(t, one(t, card, "table.evidence"), "td")); got != strings.TrimSpace(line) {
		t.Errorf("evidence %q", got)
	}
	if got := text(one(t, r.doc, "p.meta")); !strings.HasSuffix(got, "from <img src=x onerror=alert(2)>.log") {
		t.Errorf("file name %q", got)
	}
	noMarkup(t, r)

	r = get(t, h, "/entries/"+evil)
	if r.status != http.StatusNotFound {
		t.Fatalf("status %d", r.status)
	}
	if got := alert(t, r); got != "There is no entry "+evil+" in the knowledge base." {
		t.Errorf("404 message %q", got)
	}
	noMarkup(t, r)
	r = get(t, h, "/entries?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E")
	noMarkup(t, r)
}

// noMarkup checks that the page holds no script but its own file, no
// element from the input and no event handler.
func noMarkup(t *testing.T, r *response) {
	t.Helper()
	if strings.Contains(r.raw, "<script>alert") || strings.Contains(r.raw, "<img src=x") {
		t.Errorf("input markup in the page")
	}
	for _, n := range find(r.doc, func(*html.Node) bool { return true }) {
		if n.Data == "script" && !strings.HasPrefix(attr(n, "src"), "/static/app.js?h=") {
			t.Errorf("a script that is not /static/app.js: %q", attr(n, "src"))
		}
		if n.Data == "img" {
			t.Errorf("an img element")
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") || a.Key == "style" {
				t.Errorf("<%s %s=%q>", n.Data, a.Key, a.Val)
			}
		}
	}
}

// Every page of the site is self-contained and accessible in the ways a
// test can see: the policy header, no inline script or style, nothing
// from another site, one h1 and headings in order, a label for every
// field, the skip link, and the language on <html>.
func TestPageStructure(t *testing.T) {
	h := New(newService(t, nil), Options{})
	pages := map[string]*response{}
	for _, u := range []string{"/", "/?lang=zh", "/memory", "/entries", "/entries?q=nccl", "/entries/nccl/watchdog-timeout", "/entries/pytorch/cuda-out-of-memory?lang=zh", "/nope"} {
		pages["GET "+u] = get(t, h, u)
	}
	pages["POST /diagnose"] = post(t, h, "/diagnose", part{name: "log", data: readFile(t, "../../examples/ddp-oom.log")})
	pages["POST /diagnose (413)"] = post(t, New(newService(t, nil), Options{MaxLogBytes: 10}), "/diagnose", part{name: "log", data: []byte("01234567890")})
	for name, r := range pages {
		t.Run(name, func(t *testing.T) {
			if got := r.header.Get("Content-Security-Policy"); got != pageCSP {
				t.Errorf("policy %q", got)
			}
			if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Errorf("headers %v", r.header)
			}
			if l := attr(one(t, r.doc, "html"), "lang"); l != "en" && l != "zh-CN" {
				t.Errorf("html lang %q", l)
			}
			noMarkup(t, r)
			if len(all(r.doc, "style")) > 0 {
				t.Errorf("inline style element")
			}
			for _, n := range find(r.doc, func(n *html.Node) bool { return n.Data == "link" || n.Data == "script" || n.Data == "form" }) {
				for _, k := range []string{"href", "src", "action"} {
					if v := attr(n, k); v != "" && !strings.HasPrefix(v, "/") {
						t.Errorf("<%s %s=%q> does not stay on this server", n.Data, k, v)
					}
				}
			}
			if skip := first(t, r.doc, "a.skip"); attr(skip, "href") != "#main" {
				t.Errorf("skip link %q", attr(skip, "href"))
			}
			byID(t, r.doc, "main")
			var levels []int
			for _, n := range find(r.doc, func(n *html.Node) bool {
				return len(n.Data) == 2 && n.Data[0] == 'h' && n.Data[1] >= '1' && n.Data[1] <= '6'
			}) {
				levels = append(levels, int(n.Data[1]-'0'))
			}
			if len(levels) == 0 || levels[0] != 1 || slices.Index(levels[1:], 1) >= 0 {
				t.Errorf("headings %v: want one h1, first", levels)
			}
			for i := 1; i < len(levels); i++ {
				if levels[i] > levels[i-1]+1 {
					t.Errorf("heading h%d after h%d", levels[i], levels[i-1])
				}
			}
			labels := map[string]bool{}
			for _, l := range all(r.doc, "label") {
				labels[attr(l, "for")] = true
			}
			for _, f := range find(r.doc, func(n *html.Node) bool { return n.Data == "input" || n.Data == "textarea" || n.Data == "select" }) {
				if attr(f, "type") == "hidden" {
					continue
				}
				if id := attr(f, "id"); id == "" || !labels[id] {
					t.Errorf("<%s name=%q> has no label", f.Data, attr(f, "name"))
				}
			}
		})
	}
}

// Every label a template or the code names exists (internal/view's
// TestLabels checks both languages against each other).
func TestLabels(t *testing.T) {
	used := map[string]bool{}
	keyRE := regexp.MustCompile(`\{\{t "([a-z0-9_]+)"`)
	err := fs.WalkDir(templateFS, "templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := templateFS.ReadFile(path)
		for _, m := range keyRE.FindAllStringSubmatch(string(b), -1) {
			used[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	codeRE := regexp.MustCompile(`tr\([a-z.]+, "([a-z0-9_]+)"[,)]`)
	for _, f := range []string{"diagnose.go", "entries.go", "memory.go", "page.go", "view.go"} {
		for _, m := range codeRE.FindAllStringSubmatch(string(readFile(t, f)), -1) {
			used[m[1]] = true
		}
	}
	for k := range used {
		if !view.Has("en", k) {
			t.Errorf("label %q is used but not defined", k)
		}
	}
	if len(used) < 100 {
		t.Errorf("only %d labels found in use; the patterns no longer match the code", len(used))
	}
}

func TestStaticFiles(t *testing.T) {
	h := New(newService(t, nil), Options{})
	for name, ct := range map[string]string{"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8", "icon.svg": "image/svg+xml"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, staticURL(name), nil))
		want, _ := staticFS.ReadFile("static/" + name)
		if rec.Code != http.StatusOK || rec.Body.String() != string(want) {
			t.Errorf("%s: status %d, %d bytes", name, rec.Code, rec.Body.Len())
		}
		if got := rec.Header().Get("Content-Type"); got != ct {
			t.Errorf("%s: Content-Type %q", name, got)
		}
		if got := rec.Header().Get("Cache-Control"); got != "public, max-age=86400" {
			t.Errorf("%s: Cache-Control %q", name, got)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/diagnose", nil))
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/" {
		t.Errorf("GET /diagnose: %d to %q", rec.Code, rec.Header().Get("Location"))
	}
}
