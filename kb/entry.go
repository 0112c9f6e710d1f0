// Package kb holds gpudx's knowledge base: the Entry type, loading entries
// from the embedded knowledge tree, from directories and from the
// deadends.dev canon format, linting them, and searching them.
package kb

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Entry is one known error: how to recognise it, why it happens, what does
// not help and what does. Field names and JSON types follow
// docs/kb-format.md; the seed entry of the project loads into it unchanged.
type Entry struct {
	ID          string `json:"id"`
	Title       string `json:"title"`    // names the error without figures; a diagnosis's heading
	TitleZh     string `json:"title_zh"` // the title in Chinese
	Signature   string `json:"signature"`
	SignatureZh string `json:"signature_zh"`
	Regex       string `json:"regex"`
	// RegexNot, when set, is a regex (RE2) for the harmless lines that
	// hold the error's text too (a warning quoting it, a retry that
	// recovered): a line it matches is not a hit, whatever Regex says.
	RegexNot           string            `json:"regex_not,omitempty"`
	Aliases            []string          `json:"aliases"`
	Domain             string            `json:"domain"`
	Category           string            `json:"category"`
	Subcategory        *string           `json:"subcategory"`
	ErrorCode          string            `json:"error_code"`
	RootCause          string            `json:"root_cause"`
	RootCauseZh        string            `json:"root_cause_zh"`
	RootCauseType      string            `json:"root_cause_type"`
	Versions           []Version         `json:"versions"`
	OSSpecific         map[string]string `json:"os_specific"`
	DeadEnds           []DeadEnd         `json:"dead_ends"`
	Workarounds        []Workaround      `json:"workarounds"`
	WorkaroundsZh      []string          `json:"workarounds_zh"`
	DeadEndsZh         []string          `json:"dead_ends_zh"`
	TransitionGraph    TransitionGraph   `json:"transition_graph"`
	OfficialDocURL     string            `json:"official_doc_url"`
	OfficialDocSection *string           `json:"official_doc_section"`
	VerificationTier   string            `json:"verification_tier"`
	Confidence         float64           `json:"confidence"`
	FixSuccessRate     float64           `json:"fix_success_rate"`
	// FixSuccessRateBasis says what FixSuccessRate rests on.
	FixSuccessRateBasis Basis    `json:"fix_success_rate_basis,omitempty"`
	Resolvable          string   `json:"resolvable"`
	FirstSeen           string   `json:"first_seen"`
	LastConfirmed       string   `json:"last_confirmed"`
	LastUpdated         string   `json:"last_updated"`
	EvidenceCount       int      `json:"evidence_count"`
	Tags                []string `json:"tags"`
	Locale              string   `json:"locale"`
	Examples            Examples `json:"examples"`
	// Operator is set for events a node operator acts on (Xid and other
	// kernel-driver events); nil for application errors.
	Operator *Operator `json:"operator,omitempty"`
	// Checked says when and how the entry was last checked by a second
	// reader; nil until it has been.
	Checked *Check `json:"checked,omitempty"`

	// Origin says where the entry was loaded from (a path, or
	// "embedded:<path>"); it is not part of the file format.
	Origin string `json:"-"`
	// Format is FormatGpudx or FormatDeadends.
	Format string `json:"-"`

	reOnce  sync.Once
	re      *regexp.Regexp
	reErr   error
	notOnce sync.Once
	not     *regexp.Regexp
	notErr  error
}

// Compiled returns the entry's regex compiled, once; later calls share it.
// Regex must not change after the first call.
func (e *Entry) Compiled() (*regexp.Regexp, error) {
	e.reOnce.Do(func() { e.re, e.reErr = regexp.Compile(e.Regex) })
	return e.re, e.reErr
}

// CompiledNot returns RegexNot compiled, once; nil when there is none.
func (e *Entry) CompiledNot() (*regexp.Regexp, error) {
	e.notOnce.Do(func() {
		if e.RegexNot != "" {
			e.not, e.notErr = regexp.Compile(e.RegexNot)
		}
	})
	return e.not, e.notErr
}

// MatchLine reports whether line is a hit of the entry: its regex matches
// and RegexNot does not. An entry whose regexes do not compile matches
// nothing.
func (e *Entry) MatchLine(line string) bool {
	re, err := e.Compiled()
	if err != nil || e.Regex == "" || !re.MatchString(line) {
		return false
	}
	not, err := e.CompiledNot()
	return err == nil && (not == nil || !not.MatchString(line))
}

// MatchAnyLine reports whether MatchLine holds for one of the lines of s,
// which is what the scanner can see of a message wrapped over several
// lines.
func (e *Entry) MatchAnyLine(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if e.MatchLine(strings.TrimSuffix(line, "\r")) {
			return true
		}
	}
	return false
}

// TagWarning marks an entry whose line healthy runs print too (a
// deprecation or performance warning): it is reported only beside an error
// and ranked after errors.
const TagWarning = "warning"

// TagOutOfMemory marks an entry for a device out-of-memory report (not
// host memory): its first line gets the out-of-memory arithmetic, and its
// conditions may read the figures that adds (MemoryFacts).
const TagOutOfMemory = "out-of-memory"

// TagWaiter marks an entry for what a rank of a distributed job prints
// when it waited for another: a collective timeout, the teardown that
// follows one, a peer seen exiting, the launcher's report of a child's
// exit. A rank that printed only such lines is not blamed for the failure.
const TagWaiter = "waiter"

// IsWaiter reports whether the entry is tagged TagWaiter.
func (e *Entry) IsWaiter() bool { return slices.Contains(e.Tags, TagWaiter) }

// IsWarning reports whether the entry is tagged TagWarning.
func (e *Entry) IsWarning() bool { return slices.Contains(e.Tags, TagWarning) }

// IsMemory reports whether the entry is tagged TagOutOfMemory.
func (e *Entry) IsMemory() bool { return slices.Contains(e.Tags, TagOutOfMemory) }

// Formats an entry can be read from.
const (
	FormatGpudx    = "gpudx"
	FormatDeadends = "deadends"
)

// Version is one row of an entry's version table.
type Version struct {
	Version        string  `json:"version"`
	Introduced     *string `json:"introduced"`
	Deprecated     *string `json:"deprecated"`
	Removed        *string `json:"removed"`
	BehaviorChange *string `json:"behavior_change"`
	Status         string  `json:"status"`
}

// DeadEnd is something people try that does not fix the error.
type DeadEnd struct {
	Action   string  `json:"action"`
	WhyFails string  `json:"why_fails"`
	FailRate float64 `json:"fail_rate"`
	// RateBasis says what FailRate rests on; RateReports counts the
	// reports when it is BasisReports.
	RateBasis   Basis    `json:"rate_basis,omitempty"`
	RateReports int      `json:"rate_reports,omitempty"`
	Condition   string   `json:"condition"`
	Sources     []string `json:"sources"`
	// Zh is the item's Chinese text when written inline rather than in
	// the entry's dead_ends_zh.
	Zh string `json:"zh,omitempty"`
}

// Workaround is something that fixes or avoids the error, or, when Kind is
// KindCheck, a step that finds out what is wrong (no success rate).
type Workaround struct {
	Action string `json:"action"`
	// Kind is KindFix (or empty) or KindCheck.
	Kind        string  `json:"kind,omitempty"`
	SuccessRate float64 `json:"success_rate,omitempty"`
	// RateBasis says what SuccessRate rests on; RateReports counts the
	// reports when it is BasisReports.
	RateBasis   Basis    `json:"rate_basis,omitempty"`
	RateReports int      `json:"rate_reports,omitempty"`
	How         string   `json:"how"`
	Condition   string   `json:"condition"`
	Sources     []string `json:"sources"`
	// Zh is the item's Chinese text when written inline rather than in
	// the entry's workarounds_zh.
	Zh string `json:"zh,omitempty"`
}

// TransitionGraph links an entry to the errors around it.
type TransitionGraph struct {
	LeadsTo                []string    `json:"leads_to"`
	PrecededBy             []string    `json:"preceded_by"`
	FrequentlyConfusedWith []Confusion `json:"frequently_confused_with"`
}

// Confusion names an error that looks alike and says how to tell them apart.
type Confusion struct {
	ErrorID     string `json:"error_id"`
	Distinction string `json:"distinction"`
}

// Examples are message lines the regex must match and near misses it must
// not. Sources say where the real forms come from.
type Examples struct {
	Match   []string `json:"match"`
	NoMatch []string `json:"no_match"`
	Sources []string `json:"sources,omitempty"`
}

// UnmarshalJSON accepts graph references written either as plain ids
// (our format) or as objects with an error_id (deadends.dev's format).
func (g *TransitionGraph) UnmarshalJSON(b []byte) error {
	var raw struct {
		LeadsTo                []json.RawMessage `json:"leads_to"`
		PrecededBy             []json.RawMessage `json:"preceded_by"`
		FrequentlyConfusedWith []Confusion       `json:"frequently_confused_with"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var err error
	if g.LeadsTo, err = refIDs(raw.LeadsTo); err != nil {
		return fmt.Errorf("leads_to: %w", err)
	}
	if g.PrecededBy, err = refIDs(raw.PrecededBy); err != nil {
		return fmt.Errorf("preceded_by: %w", err)
	}
	g.FrequentlyConfusedWith = raw.FrequentlyConfusedWith
	return nil
}

func refIDs(items []json.RawMessage) ([]string, error) {
	if items == nil {
		return nil, nil
	}
	ids := make([]string, 0, len(items))
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			ids = append(ids, s)
			continue
		}
		var o struct {
			ErrorID string `json:"error_id"`
		}
		if err := json.Unmarshal(it, &o); err != nil {
			return nil, fmt.Errorf("want an id string or {\"error_id\": ...}, got %s", truncate(string(it), 40))
		}
		ids = append(ids, o.ErrorID)
	}
	return ids, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// DeadEndZh returns the Chinese text of dead end i, or "" when missing.
func (e *Entry) DeadEndZh(i int) string { return at(e.DeadEndsZh, i) }

// WorkaroundZh returns the Chinese text of workaround i, or "" when missing.
func (e *Entry) WorkaroundZh(i int) string { return at(e.WorkaroundsZh, i) }

// inlineZh fills DeadEndsZh and WorkaroundsZh from the items' own zh
// fields when the entry has no parallel list, so that the rest of gpudx
// reads one form (an item without Chinese text reads as ""). Parallel
// lists, where given, are kept.
func (e *Entry) inlineZh() {
	if len(e.DeadEndsZh) == 0 && len(e.DeadEnds) > 0 {
		e.DeadEndsZh = make([]string, len(e.DeadEnds))
		for i, d := range e.DeadEnds {
			e.DeadEndsZh[i] = d.Zh
		}
	}
	if len(e.WorkaroundsZh) == 0 && len(e.Workarounds) > 0 {
		e.WorkaroundsZh = make([]string, len(e.Workarounds))
		for i, w := range e.Workarounds {
			e.WorkaroundsZh[i] = w.Zh
		}
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}

// Operator says what a cluster operator does about a driver or hardware
// event, independent of the job that saw it: how bad it is, whose fault
// it is, whether the node leaves the pool, and NVIDIA's resolution bucket
// where NVIDIA's Xid catalog gives one.
type Operator struct {
	// Severity: critical (the GPU or node is unusable until acted on),
	// error (the job died; the GPU may be fine), warning (degraded or a
	// precursor), info (recorded, no action).
	Severity string `json:"severity"`
	// Fault: hardware, application, driver (driver or firmware), or
	// either (the message alone cannot tell; see the entry's root cause).
	Fault string `json:"fault"`
	// Drain: yes (take the node out of scheduling now), no, or
	// if_repeats (only when the event recurs on the same GPU).
	Drain string `json:"drain"`
	// Action is NVIDIA's immediate resolution bucket from its Xid catalog
	// (RESTART_APP, RESET_GPU, RESTART_BM, IGNORE, CONTACT_SUPPORT or a
	// WORKFLOW_* name); empty where NVIDIA gives none.
	Action string `json:"action"`
	// Next is the operator's next step in one sentence, and NextZh the same
	// in Chinese.
	Next   string `json:"next"`
	NextZh string `json:"next_zh"`
}

// Severities are the values of Operator.Severity, most severe first
// (gpudx check ranks events by it).
var Severities = []string{"critical", "error", "warning", "info"}

// Values the other Operator fields may take.
var (
	faults       = []string{"hardware", "application", "driver", "either"}
	drainChoices = []string{"yes", "no", "if_repeats"}
)
