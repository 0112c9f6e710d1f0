package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var staticFS embed.FS

// staticSums maps each static file to a short hash of its content. Pages
// link /static/NAME?h=HASH, so a browser may cache a file for long and
// still gets a changed one after an upgrade.
var staticSums = func() map[string]string {
	sums := map[string]string{}
	entries, err := fs.ReadDir(staticFS, "static")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		b, err := staticFS.ReadFile("static/" + e.Name())
		if err != nil {
			panic(err)
		}
		s := sha256.Sum256(b)
		sums[e.Name()] = hex.EncodeToString(s[:6])
	}
	return sums
}()

// staticURL is the address of a static file; it panics on a name that is
// not embedded, which the tests catch.
func staticURL(name string) string {
	sum, ok := staticSums[name]
	if !ok {
		panic("web: no static file " + name)
	}
	return "/static/" + name + "?h=" + sum
}

// static serves the embedded files; a folder (a listing) is not found.
func (h *handler) static(files http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := staticSums[strings.TrimPrefix(r.URL.Path, "/static/")]; !ok {
			h.notFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=86400")
		files.ServeHTTP(w, r)
	}
}

func staticFiles() http.Handler {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err)
	}
	return http.StripPrefix("/static/", http.FileServerFS(sub))
}
