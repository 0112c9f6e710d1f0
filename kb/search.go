package kb

import (
	"sort"
	"strings"
	"unicode"
)

// Result is one search hit with its score; higher is better.
type Result struct {
	Entry *Entry
	Score int
}

// Search ranks entries for a query, which may be an error name
// (CUBLAS_STATUS_ALLOC_FAILED, cudaErrorIllegalAddress, xid 79), an id, a
// few words, or a pasted message line. A pasted line that an entry's regex
// matches ranks that entry first. At most limit results are returned
// (all when limit <= 0).
func Search(b *Base, query string, limit int) []Result {
	q := strings.TrimSpace(query)
	if q == "" {
		return nil
	}
	lq := strings.ToLower(q)
	words := tokens(lq)
	var out []Result
	for _, e := range b.Entries() {
		score := 0
		lid := strings.ToLower(e.ID)
		switch {
		case lid == lq:
			score += 1000
		case strings.HasPrefix(lid, lq) && strings.Contains(lq, "/"):
			score += 100 // the start of an id: what a mistyped or cut id is
		case len(lq) >= 4 && strings.Contains(lid, lq):
			score += 40
		}
		if e.Regex != "" {
			if e.MatchAnyLine(q) {
				score += 200
			}
		}
		names := append([]string{e.ErrorCode}, e.Aliases...)
		for _, n := range names {
			if n != "" && strings.EqualFold(n, q) {
				score += 150
			}
		}
		sig := strings.ToLower(e.Signature)
		if len(lq) >= 4 && strings.Contains(sig, lq) {
			score += 60
		}
		hay := strings.ToLower(strings.Join(append(append([]string{e.ID, e.Signature, e.ErrorCode}, e.Aliases...), e.Tags...), " "))
		body := strings.ToLower(e.RootCause)
		hayWords := map[string]bool{}
		for _, w := range tokens(hay) {
			hayWords[w] = true
		}
		matched := 0
		for _, w := range words {
			switch {
			case hayWords[w]:
				score += 10
				matched++
			case len(w) >= 3 && strings.Contains(hay, w):
				score += 5
				matched++
			case len(w) >= 4 && strings.Contains(body, w):
				score += 2
				matched++
			}
		}
		// Every word found: the entry is about the query, not near it.
		if len(words) > 1 && matched == len(words) {
			score += 20
		}
		if score > 0 {
			out = append(out, Result{e, score})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Entry.ID < out[j].Entry.ID
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

var stop = map[string]bool{"the": true, "a": true, "an": true, "of": true, "to": true,
	"in": true, "on": true, "is": true, "error": true, "and": true, "or": true, "when": true}

// tokens splits text into lower-case words of letters, digits and '_'.
func tokens(s string) []string {
	f := strings.FieldsFunc(s, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
	})
	out := f[:0]
	for _, w := range f {
		if !stop[w] {
			out = append(out, w)
		}
	}
	return out
}
