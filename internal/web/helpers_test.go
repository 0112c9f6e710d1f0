package web

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/html"

	"github.com/gpudx/gpudx/internal/service"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
	"github.com/gpudx/gpudx/outcome"
)

var (
	kbOnce    sync.Once
	kbEntries []*kb.Entry
	kbErr     error
)

// newService builds the service as gpudx serve does: the embedded
// knowledge base, compiled, with store (nil: no outcomes).
func newService(t testing.TB, store outcome.Store) *service.Service {
	t.Helper()
	kbOnce.Do(func() {
		kbEntries, kbErr = kb.LoadFS(knowledge.FS, ".", "knowledge/")
	})
	if kbErr != nil {
		t.Fatal(kbErr)
	}
	b := kb.NewBase()
	for _, e := range kbEntries {
		b.Add(e)
	}
	s, err := service.New(b, store)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// part is one field of a multipart form; a file when file is set.
type part struct {
	name, file string
	data       []byte
}

// multipartBody encodes parts as a browser would.
func multipartBody(t testing.TB, parts ...part) (io.Reader, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, p := range parts {
		var fw io.Writer
		var err error
		if p.file != "" {
			fw, err = w.CreateFormFile(p.name, p.file)
		} else {
			fw, err = w.CreateFormField(p.name)
		}
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(p.data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &b, w.FormDataContentType()
}

// response is an answer with its body parsed.
type response struct {
	status int
	header http.Header
	raw    string
	doc    *html.Node
}

func do(t testing.TB, h http.Handler, req *http.Request) *response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	raw := rec.Body.String()
	doc, err := html.Parse(strings.NewReader(raw))
	if err != nil {
		t.Fatalf("%s %s: the page does not parse: %v", req.Method, req.URL, err)
	}
	return &response{status: rec.Code, header: rec.Header(), raw: raw, doc: doc}
}

func get(t testing.TB, h http.Handler, target string) *response {
	t.Helper()
	return do(t, h, httptest.NewRequest(http.MethodGet, target, nil))
}

func post(t testing.TB, h http.Handler, target string, parts ...part) *response {
	t.Helper()
	body, ct := multipartBody(t, parts...)
	req := httptest.NewRequest(http.MethodPost, target, body)
	req.Header.Set("Content-Type", ct)
	return do(t, h, req)
}

// Walking the parsed page.

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, c string) bool {
	for _, f := range strings.Fields(attr(n, "class")) {
		if f == c {
			return true
		}
	}
	return false
}

// find returns the element nodes below n (n included) that match.
func find(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(c *html.Node) {
		if c.Type == html.ElementNode && match(c) {
			out = append(out, c)
		}
		for k := c.FirstChild; k != nil; k = k.NextSibling {
			walk(k)
		}
	}
	walk(n)
	return out
}

// sel matches a tag with all the classes given ("article.card.root",
// ".rate", "h2").
func sel(s string) func(*html.Node) bool {
	parts := strings.Split(s, ".")
	return func(n *html.Node) bool {
		if parts[0] != "" && n.Data != parts[0] {
			return false
		}
		for _, c := range parts[1:] {
			if !hasClass(n, c) {
				return false
			}
		}
		return true
	}
}

func all(n *html.Node, s string) []*html.Node { return find(n, sel(s)) }

// one returns the single match of s below n, failing otherwise.
func one(t testing.TB, n *html.Node, s string) *html.Node {
	t.Helper()
	ns := all(n, s)
	if len(ns) != 1 {
		t.Fatalf("%d matches of %q, want 1", len(ns), s)
	}
	return ns[0]
}

func first(t testing.TB, n *html.Node, s string) *html.Node {
	t.Helper()
	ns := all(n, s)
	if len(ns) == 0 {
		t.Fatalf("no match of %q", s)
	}
	return ns[0]
}

// text is the text of n with runs of white space made one space.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
		for k := c.FirstChild; k != nil; k = k.NextSibling {
			walk(k)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

func texts(ns []*html.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = text(n)
	}
	return out
}

// byID finds the element with id.
func byID(t testing.TB, n *html.Node, id string) *html.Node {
	t.Helper()
	ns := find(n, func(c *html.Node) bool { return attr(c, "id") == id })
	if len(ns) != 1 {
		t.Fatalf("%d elements with id %q, want 1", len(ns), id)
	}
	return ns[0]
}

// memStore keeps outcome reports in memory, for the blended rates.
type memStore struct {
	mu sync.Mutex
	t  map[outcome.Key]outcome.Tally
}

func newMemStore() *memStore { return &memStore{t: map[outcome.Key]outcome.Tally{}} }

func (m *memStore) Record(_ context.Context, r outcome.Report) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := outcome.Key{EntryID: r.EntryID, Kind: r.Kind, Index: r.Index}
	t := m.t[k]
	if r.Worked {
		t.Worked++
	} else {
		t.Failed++
	}
	m.t[k] = t
	return false, nil
}

func (m *memStore) Tallies(_ context.Context, id string) (map[outcome.Key]outcome.Tally, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[outcome.Key]outcome.Tally{}
	for k, v := range m.t {
		if k.EntryID == id {
			out[k] = v
		}
	}
	return out, nil
}

func (m *memStore) Close() error { return nil }

type htmlNode = html.Node

func itoa(n int) string { return strconv.Itoa(n) }
