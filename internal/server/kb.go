package server

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpudx/gpudx/internal/service"
	"github.com/gpudx/gpudx/kb"
)

// entrySummary is one entry in a list or a search result.
type entrySummary struct {
	ID               string `json:"id"`
	Title            string `json:"title"`
	Signature        string `json:"signature"`
	Domain           string `json:"domain"`
	Category         string `json:"category"`
	ErrorCode        string `json:"error_code"`
	VerificationTier string `json:"verification_tier"`
	Score            *int   `json:"score,omitempty"` // search only
}

func summarize(e *kb.Entry) entrySummary {
	return entrySummary{ID: e.ID, Title: e.Title, Signature: e.Signature, Domain: e.Domain, Category: e.Category,
		ErrorCode: e.ErrorCode, VerificationTier: e.VerificationTier}
}

type entryList struct {
	Total   int            `json:"total"`
	Entries []entrySummary `json:"entries"`
}

// entries answers GET /api/v1/entries?domain=&category=&q=.
func (s *Server) entries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	es := s.svc.Entries(service.Filter{Domain: q.Get("domain"), Category: q.Get("category"), Q: q.Get("q")})
	out := entryList{Total: len(es), Entries: make([]entrySummary, len(es))}
	for i, e := range es {
		out.Entries[i] = summarize(e)
	}
	writeJSON(w, http.StatusOK, out)
}

// entryView is an entry as its knowledge file has it, with the blended
// rates of its items.
type entryView struct {
	*kb.Entry
	Rates *service.Rates `json:"rates"`
}

// idPart is what a domain or a slug may hold: the route takes no other
// characters, so an id can never be a path.
var idPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// entry answers GET /api/v1/entries/{domain}/{slug}.
func (s *Server) entry(w http.ResponseWriter, r *http.Request) {
	domain, slug := r.PathValue("domain"), r.PathValue("slug")
	if !idPart.MatchString(domain) || !idPart.MatchString(slug) || strings.Contains(slug, "..") {
		writeError(w, http.StatusBadRequest, "%q is not an entry id: want DOMAIN/SLUG of letters, digits, '.', '_' and '-'", domain+"/"+slug)
		return
	}
	id := domain + "/" + slug
	e := s.svc.Entry(id)
	if e == nil {
		msg := fmt.Sprintf("no entry %q", id)
		if rs := s.svc.Search(id, 3); len(rs) > 0 {
			ids := make([]string, len(rs))
			for i, r := range rs {
				ids[i] = r.Entry.ID
			}
			msg += "; did you mean " + strings.Join(ids, ", ") + "?"
		}
		writeError(w, http.StatusNotFound, "%s", msg)
		return
	}
	rates, err := s.svc.Rates(r.Context(), e.ID)
	if err != nil {
		s.serviceFailed(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, entryView{e, rates})
}

// domains answers GET /api/v1/domains.
func (s *Server) domains(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Domains []service.Domain `json:"domains"`
	}{s.svc.Domains()})
}

// Search limits: the default, and the most one request may ask for.
const (
	defaultSearchLimit = 10
	maxSearchLimit     = 1000
)

type searchResults struct {
	Query   string         `json:"query"`
	Results []entrySummary `json:"results"`
}

// search answers GET /api/v1/search?q=&limit=.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	query := strings.TrimSpace(q.Get("q"))
	if query == "" {
		writeError(w, http.StatusBadRequest, "q is empty: give an error name, a few words or a message line, e.g. ?q=CUBLAS_STATUS_ALLOC_FAILED")
		return
	}
	limit := defaultSearchLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxSearchLimit {
			writeError(w, http.StatusBadRequest, "limit: want a number from 1 to %d, got %q", maxSearchLimit, v)
			return
		}
		limit = n
	}
	rs := s.svc.Search(query, limit)
	out := searchResults{Query: query, Results: make([]entrySummary, len(rs))}
	for i, res := range rs {
		sum := summarize(res.Entry)
		score := res.Score
		sum.Score = &score
		out.Results[i] = sum
	}
	writeJSON(w, http.StatusOK, out)
}
