package web

import (
	"fmt"
	"github.com/gpudx/gpudx/internal/view"
	"net/http"
	"strings"
)

// langCookie remembers the language a person chose with ?lang=.
const langCookie = "gpudx_lang"

// langs are the page's languages; the first is the default.
var langs = []string{"en", "zh"}

func validLang(l string) bool { return view.ValidLang(l) }

// chooseLang picks the page's language: ?lang= (remembered in a cookie),
// then a form's lang field, then the cookie, then the browser's
// Accept-Language, then English.
//
// A language named by ?lang= or by a form (the switch on a result page
// posts the form again with lang set) is remembered.
func chooseLang(w http.ResponseWriter, r *http.Request, formLang string) string {
	cookie := ""
	if c, err := r.Cookie(langCookie); err == nil && validLang(c.Value) {
		cookie = c.Value
	}
	chosen := r.URL.Query().Get("lang")
	if !validLang(chosen) {
		chosen = formLang
	}
	if validLang(chosen) {
		if chosen != cookie {
			http.SetCookie(w, &http.Cookie{Name: langCookie, Value: chosen, Path: "/", MaxAge: 365 * 24 * 3600,
				HttpOnly: true, SameSite: http.SameSiteLaxMode})
		}
		return chosen
	}
	if cookie != "" {
		return cookie
	}
	return acceptLang(r.Header.Get("Accept-Language"))
}

// acceptLang returns "zh" when the browser ranks Chinese above English,
// and "en" otherwise. Quality values are honoured; order breaks ties.
func acceptLang(h string) string {
	best, bestQ := "en", -1.0
	for _, part := range strings.Split(h, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if _, err := fmt.Sscanf(v, "%g", &q); err != nil {
				q = 0
			}
		}
		base, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
		if (base == "en" || base == "zh") && q > 0 && q > bestQ {
			best, bestQ = base, q
		}
	}
	return best
}

// htmlLang is the page's <html lang>: Chinese pages are simplified
// Chinese, which also picks the right glyphs for CJK text.
func htmlLang(l string) string {
	if l == "zh" {
		return "zh-CN"
	}
	return "en"
}

// tr formats the label key in language l (internal/view's one table).
func tr(l, key string, args ...any) string { return view.T(l, key, args...) }
