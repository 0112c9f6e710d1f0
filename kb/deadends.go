package kb

import (
	"encoding/json"
	"fmt"
	"strings"
)

// canon is the subset of a deadends.dev canon file that maps onto Entry.
type canon struct {
	ID    string `json:"id"`
	URL   string `json:"url"`
	Error struct {
		Signature     string `json:"signature"`
		Regex         string `json:"regex"`
		Domain        string `json:"domain"`
		Category      string `json:"category"`
		FirstSeen     string `json:"first_seen"`
		LastConfirmed string `json:"last_confirmed"`
	} `json:"error"`
	Verdict struct {
		Resolvable     string  `json:"resolvable"`
		FixSuccessRate float64 `json:"fix_success_rate"`
		Confidence     float64 `json:"confidence"`
		LastUpdated    string  `json:"last_updated"`
		Summary        string  `json:"summary"`
	} `json:"verdict"`
	DeadEnds        []DeadEnd       `json:"dead_ends"`
	Workarounds     []Workaround    `json:"workarounds"`
	TransitionGraph TransitionGraph `json:"transition_graph"`
	Metadata        struct {
		ReviewStatus  string `json:"review_status"`
		EvidenceCount int    `json:"evidence_count"`
	} `json:"metadata"`
}

// isCanon reports whether a decoded top-level object looks like a
// deadends.dev canon: it has "error" and "verdict" objects and no "regex"
// at the top.
func isCanon(top map[string]json.RawMessage) bool {
	_, e := top["error"]
	_, v := top["verdict"]
	_, r := top["regex"]
	return e && v && !r
}

// canonID maps a deadends.dev id ("domain/slug/env") to a gpudx id
// ("domain/slug.env"), lower-cased, with characters outside [a-z0-9.-]
// replaced by '-'. The environment segment stays so that variants of one
// error for different runtimes remain distinct entries.
func canonID(id string) string {
	parts := strings.Split(strings.ToLower(id), "/")
	for i, p := range parts {
		parts[i] = sanitizeSlug(p)
	}
	if len(parts) >= 3 {
		return parts[0] + "/" + strings.Join(parts[1:], ".")
	}
	return strings.Join(parts, "/")
}

func sanitizeSlug(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}

func fromCanon(data []byte) (*Entry, error) {
	var c canon
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("deadends canon: %w", err)
	}
	if c.ID == "" {
		return nil, fmt.Errorf("deadends canon: no id")
	}
	e := &Entry{
		ID:             canonID(c.ID),
		Signature:      c.Error.Signature,
		Regex:          caseless(c.Error.Regex),
		Domain:         c.Error.Domain,
		Category:       c.Error.Category,
		RootCause:      c.Verdict.Summary,
		RootCauseType:  "generic",
		DeadEnds:       c.DeadEnds,
		Workarounds:    c.Workarounds,
		OfficialDocURL: c.URL,
		Confidence:     c.Verdict.Confidence,
		FixSuccessRate: c.Verdict.FixSuccessRate,
		Resolvable:     c.Verdict.Resolvable,
		FirstSeen:      c.Error.FirstSeen,
		LastConfirmed:  c.Error.LastConfirmed,
		LastUpdated:    c.Verdict.LastUpdated,
		EvidenceCount:  c.Metadata.EvidenceCount,
		Tags:           []string{"deadends.dev"},
		Locale:         "en",
		Format:         FormatDeadends,
		// deadends.dev marks most canons auto_generated; none were checked
		// by us, so none claims more than that.
		VerificationTier: "ai_generated",
	}
	if c.Metadata.ReviewStatus == "community_verified" {
		e.VerificationTier = "community_confirmed"
	}
	for i, id := range c.TransitionGraph.LeadsTo {
		c.TransitionGraph.LeadsTo[i] = canonID(id)
	}
	for i, id := range c.TransitionGraph.PrecededBy {
		c.TransitionGraph.PrecededBy[i] = canonID(id)
	}
	for i := range c.TransitionGraph.FrequentlyConfusedWith {
		f := &c.TransitionGraph.FrequentlyConfusedWith[i]
		f.ErrorID = canonID(f.ErrorID)
	}
	e.TransitionGraph = c.TransitionGraph
	return e, nil
}

// caseless makes a canon regex case-insensitive, as deadends.dev itself
// compiles every pattern.
func caseless(re string) string {
	if re == "" || strings.HasPrefix(re, "(?i)") {
		return re
	}
	return "(?i)" + re
}
