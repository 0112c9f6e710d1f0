package web

import (
	"bytes"
	"embed"
	"github.com/gpudx/gpudx/internal/view"
	"html/template"
	"log"
	"net/http"
	"net/url"
	"strings"

	"github.com/gpudx/gpudx/facts"
)

//go:embed templates
var templateFS embed.FS

// pageNames are the templates that define a page's "content"; each is
// parsed with the layout and the shared parts once per language.
var pageNames = []string{"index", "result", "memory", "entries", "entry", "error"}

// pages holds the parsed templates by language, then page name.
var pages = func() map[string]map[string]*template.Template {
	out := map[string]map[string]*template.Template{}
	for _, l := range langs {
		out[l] = map[string]*template.Template{}
		for _, name := range append(pageNames, "membar") {
			t := template.New("layout").Funcs(funcs(l))
			files := []string{"templates/layout.tmpl", "templates/parts.tmpl", "templates/" + name + ".tmpl"}
			out[l][name] = template.Must(t.ParseFS(templateFS, files...))
		}
	}
	return out
}()

// funcs are the template functions of language l.
func funcs(l string) template.FuncMap {
	return template.FuncMap{
		"t":      func(key string, args ...any) string { return tr(l, key, args...) },
		"static": staticURL,
	}
}

// page is what the layout needs; Body is the page's own data.
type page struct {
	Lang       string
	HTMLLang   string
	Title      string
	Nav        string // "diag", "mem" or "kb": the current item
	HideSearch bool   // the page has its own search form
	Langs      []langLink
	SwitchForm string // post this form to switch language (a result page)
	Version    string
	Body       any

	posted bool // an answer to a form: it holds what was sent
}

// langLink is one item of the language switch.
type langLink struct {
	Code, HTMLLang, Name, URL string
	Current                   bool
}

var langNames = map[string]string{"en": "English", "zh": "中文"}

// newPage starts the layout data for r in language l: the switch links
// keep the path and query and change only lang.
func (h *handler) newPage(r *http.Request, l, title, nav string) *page {
	p := &page{Lang: l, HTMLLang: htmlLang(l), Title: title, Nav: nav, Version: h.opt.Version, posted: r.Method != http.MethodGet}
	if p.Version == "" {
		p.Version = "dev"
	}
	for _, c := range langs {
		q := url.Values{}
		if r.Method == http.MethodGet {
			q = r.URL.Query()
		}
		q.Set("lang", c)
		path := r.URL.Path
		if r.Method != http.MethodGet {
			path = navPath(nav)
		}
		p.Langs = append(p.Langs, langLink{Code: c, HTMLLang: htmlLang(c), Name: langNames[c],
			URL: path + "?" + q.Encode(), Current: c == l})
	}
	return p
}

// navPath is the form page behind a posted page, where a language switch
// without the posted data lands.
func navPath(nav string) string {
	switch nav {
	case "mem":
		return "/memory"
	case "kb":
		return "/entries"
	}
	return "/"
}

// render writes page name with status. The page is written to a buffer
// first, so a template error is a clean 500, not half a page.
func (h *handler) render(w http.ResponseWriter, status int, name string, p *page) {
	var b bytes.Buffer
	if err := pages[p.Lang][name].ExecuteTemplate(&b, "layout", p); err != nil {
		log.Printf("web: page %s: %v", name, err)
		http.Error(w, "internal error writing the page", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Vary", "Cookie, Accept-Language")
	if p.posted {
		hd.Set("Cache-Control", "no-store") // a log or a snapshot's figures
	} else {
		hd.Set("Cache-Control", "no-cache") // the language may change
	}
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// errorBody is the data of an error page.
type errorBody struct {
	Title, Message string
	Link           *link // a way on, besides the start page
}

type link struct{ Href, Text string }

// fail writes an error page in language l.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, l string, status int, nav, title, msg string, next *link) {
	p := h.newPage(r, l, title, nav)
	p.Body = errorBody{Title: title, Message: msg, Link: next}
	h.render(w, status, "error", p)
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	l := chooseLang(w, r, "")
	h.fail(w, r, l, http.StatusNotFound, "", tr(l, "e404_title"), tr(l, "e404", r.URL.Path), nil)
}

// entryURL is the page of entry id. Ids are "domain/slug"; each part is
// escaped so that an id from a user's --kb cannot leave /entries/.
func entryURL(id string) string {
	parts := strings.Split(id, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return "/entries/" + strings.Join(parts, "/")
}

// limitText says a size limit in both forms, "64.00 MiB (67,108,864
// bytes)", or "1,000 bytes" below a KiB.
func limitText(l string, n int64) string {
	if n < 1024 {
		return tr(l, "bytes", view.Group(n))
	}
	return tr(l, "limit", facts.FormatBytes(float64(n)), view.Group(n))
}
