package kb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/gpudx/gpudx/literal"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/gpudx/gpudx/facts"
)

// Problem is one defect found by Lint, printed as "path: field: message".
type Problem struct {
	Path    string
	Field   string
	Message string
	// Warning marks advice that does not make the entry wrong (lint still
	// passes): for example a regex every line must be tried with.
	Warning bool
}

func (p Problem) String() string {
	msg := p.Message
	if p.Warning {
		msg = "warning: " + msg
	}
	if p.Field == "" {
		return p.Path + ": " + msg
	}
	return p.Path + ": " + p.Field + ": " + msg
}

// File is one file handed to Lint.
type File struct {
	Path string
	Data []byte
}

// Enumerations the format allows.
var (
	domains = []string{"cuda", "nccl", "pytorch", "driver", "container", "build",
		"jax", "tensorflow", "triton", "ecosystem"}
	categories = []string{"resource_error", "version_mismatch", "install_error",
		"configuration_error", "programming_error", "hardware_fault",
		"communication_error", "numerical_error", "internal_error"}
	rootCauseTypes    = []string{"generic", "specific", "environment", "hardware"}
	verificationTiers = []string{"ai_generated", "docs_verified", "reproduced", "community_confirmed"}
	resolvables       = []string{"true", "partial", "false"}
	versionStatuses   = []string{"active", "fixed", "deprecated", "removed"}
)

// rowVersionRE finds the version after a leading component name in a
// version row's bound: "PyTorch 2.3.1", "NVIDIA driver R570", "CUDA 4.0".
var rowVersionRE = regexp.MustCompile(`^.*?\s+[Rv]?([0-9].*)$`)

// isRowVersion reports whether a version row's "introduced" or "removed"
// is one release, with or without a leading component name: "2.3.1",
// "PyTorch 2.3.1", "R565". Whatever follows the version must be part of
// it, so "2.2 (nightly)" is not one.
func isRowVersion(s string) bool {
	t := strings.TrimSpace(s)
	if m := rowVersionRE.FindStringSubmatch(t); m != nil {
		t = m[1]
	} else {
		t = strings.TrimPrefix(t, "R")
	}
	_, err := facts.ParseVersion(t)
	return err == nil
}

var idRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*/[a-z0-9][a-z0-9.-]*$`)

// jsonKind is the JSON type a field must have.
type jsonKind int

const (
	kString jsonKind = iota
	kStringOrNull
	kNumber
	kInt
	kStrings
	kObjects
	kObject
	kStringMap
)

func (k jsonKind) String() string {
	return [...]string{"a string", "a string or null", "a number", "an integer",
		"an array of strings", "an array of objects", "an object", "an object of strings"}[k]
}

type fieldSpec struct {
	name     string
	kind     jsonKind
	required bool
}

// entryFields lists the top-level fields of the gpudx format. Everything
// the seed entry has is required except the fields that may be null
// (subcategory, error_code, official_doc_section), which may be left out;
// the Chinese lists may be left out when every item carries its own zh.
var entryFields = []fieldSpec{
	{"id", kString, true}, {"title", kString, true}, {"title_zh", kString, true}, {"signature", kString, true}, {"signature_zh", kString, true},
	{"regex", kString, true}, {"aliases", kStrings, true}, {"domain", kString, true},
	{"category", kString, true}, {"subcategory", kStringOrNull, false},
	{"error_code", kStringOrNull, false}, {"root_cause", kString, true},
	{"root_cause_zh", kString, true}, {"root_cause_type", kString, true},
	{"versions", kObjects, true}, {"os_specific", kStringMap, true},
	{"dead_ends", kObjects, true}, {"workarounds", kObjects, true},
	{"workarounds_zh", kStrings, false}, {"dead_ends_zh", kStrings, false},
	{"transition_graph", kObject, true}, {"official_doc_url", kString, true},
	{"official_doc_section", kStringOrNull, false}, {"verification_tier", kString, true},
	{"confidence", kNumber, true}, {"fix_success_rate", kNumber, true},
	{"fix_success_rate_basis", kString, false},
	{"resolvable", kString, true}, {"first_seen", kString, true},
	{"last_confirmed", kString, true}, {"last_updated", kString, true},
	{"evidence_count", kInt, true}, {"tags", kStrings, true}, {"locale", kString, true},
	{"examples", kObject, true}, {"operator", kObject, false}, {"checked", kObject, false},
	{"regex_not", kString, false},
}

var checkedFields = []fieldSpec{{"date", kString, true}, {"by", kString, true},
	{"method", kString, true}, {"notes", kString, false}}

var operatorFields = []fieldSpec{{"severity", kString, true}, {"fault", kString, true},
	{"drain", kString, true}, {"action", kString, true}, {"next", kString, true}, {"next_zh", kString, true}}

var itemFields = map[string][]fieldSpec{
	"dead_ends": {{"action", kString, true}, {"why_fails", kString, true},
		{"fail_rate", kNumber, true}, {"rate_basis", kString, false}, {"rate_reports", kInt, false},
		{"condition", kString, false}, {"sources", kStrings, true}, {"zh", kString, false}},
	// success_rate and rate_basis are required of a fix and refused on a
	// check; checkItemRates says so.
	"workarounds": {{"action", kString, true}, {"kind", kString, false},
		{"success_rate", kNumber, false}, {"rate_basis", kString, false}, {"rate_reports", kInt, false},
		{"how", kString, true}, {"condition", kString, false}, {"sources", kStrings, true},
		{"zh", kString, false}},
	"versions": {{"version", kString, true}, {"introduced", kStringOrNull, false},
		{"deprecated", kStringOrNull, false}, {"removed", kStringOrNull, false},
		{"behavior_change", kStringOrNull, false}, {"status", kString, true}},
}

func kindOK(k jsonKind, raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return false
	}
	switch k {
	case kString:
		_, ok := v.(string)
		return ok
	case kStringOrNull:
		_, ok := v.(string)
		return ok || v == nil
	case kNumber:
		_, ok := v.(json.Number)
		return ok
	case kInt:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	case kStrings:
		a, ok := v.([]any)
		if !ok {
			return false
		}
		for _, x := range a {
			if _, ok := x.(string); !ok {
				return false
			}
		}
		return true
	case kObjects:
		a, ok := v.([]any)
		if !ok {
			return false
		}
		for _, x := range a {
			if _, ok := x.(map[string]any); !ok {
				return false
			}
		}
		return true
	case kObject:
		_, ok := v.(map[string]any)
		return ok
	case kStringMap:
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for _, x := range m {
			if _, ok := x.(string); !ok {
				return false
			}
		}
		return true
	}
	return false
}

// checkFields reports missing, mistyped and unknown fields of one object.
func checkFields(prefix string, obj map[string]json.RawMessage, specs []fieldSpec, add func(field, msg string)) (typesOK bool) {
	typesOK = true
	known := map[string]bool{}
	for _, s := range specs {
		known[s.name] = true
		raw, ok := obj[s.name]
		if !ok {
			if s.required {
				add(prefix+s.name, "missing")
			}
			continue
		}
		if !kindOK(s.kind, raw) {
			add(prefix+s.name, "must be "+s.kind.String())
			typesOK = false
		}
	}
	var unknown []string
	for k := range obj {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		add(prefix+k, "unknown field")
	}
	return typesOK
}

// Linter checks entry files. Known, if set, says whether an id exists
// outside the linted files (the embedded base when linting a directory of
// overrides); transition-graph references are checked against it and
// against the linted files themselves. Registry, if set, turns on the
// names rule: every UPPER_CASE name, allocator setting and torch./jax./tf.
// name an entry's prose mentions must be recorded there; its own reading
// problems are reported too.
type Linter struct {
	Known    *Base
	Registry *Registry
}

type linted struct {
	path  string
	entry *Entry
	re    *regexp.Regexp
}

// Lint checks the files and returns every problem found, sorted by path.
func (l *Linter) Lint(files []File) []Problem {
	var probs []Problem
	var ok []linted
	seen := map[string]string{}
	for _, f := range files {
		add := func(field, msg string) { probs = append(probs, Problem{Path: f.Path, Field: field, Message: msg}) }
		e, re := l.lintFile(f, add)
		if e == nil {
			continue
		}
		if prev, dup := seen[e.ID]; dup {
			add("id", fmt.Sprintf("%q is also the id of %s", e.ID, prev))
			continue
		}
		seen[e.ID] = f.Path
		ok = append(ok, linted{f.Path, e, re})
		for _, w := range unconditionedScope(e) {
			probs = append(probs, Problem{Path: f.Path, Field: w[0], Message: w[1], Warning: true})
		}
		if re != nil {
			if _, has := literal.Required(e.Regex); !has {
				probs = append(probs, Problem{Path: f.Path, Field: "regex", Message: fmt.Sprintf("no literal of %d or more bytes that every match must contain, so the regex is tried on every line of every log; anchor it on a fixed part of the message", literal.MinLength), Warning: true})
			}
		}
	}
	exists := func(id string) bool {
		if _, in := seen[id]; in {
			return true
		}
		return l.Known != nil && l.Known.Get(id) != nil
	}
	for _, x := range ok {
		add := func(field, msg string) { probs = append(probs, Problem{Path: x.path, Field: field, Message: msg}) }
		checkGraph(x.entry, exists, add)
		if l.Registry != nil && x.entry.Format == FormatGpudx {
			checkNames(x.entry, l.Registry, add)
		}
	}
	if l.Registry != nil {
		probs = append(probs, l.Registry.Problems...)
	}
	probs = append(probs, overlaps(ok, l.Known)...)
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].Path < probs[j].Path })
	return probs
}

func (l *Linter) lintFile(f File, add func(field, msg string)) (*Entry, *regexp.Regexp) {
	var top map[string]json.RawMessage
	data := bytes.TrimPrefix(f.Data, []byte("\xef\xbb\xbf"))
	if err := json.Unmarshal(data, &top); err != nil {
		add("", "not a JSON object: "+jsonErr(data, err).Error())
		return nil, nil
	}
	if isCanon(top) {
		return lintCanon(f, add)
	}
	typesOK := checkFields("", top, entryFields, add)
	for _, name := range []string{"dead_ends", "workarounds", "versions"} {
		var items []map[string]json.RawMessage
		if json.Unmarshal(top[name], &items) != nil {
			continue
		}
		for i, it := range items {
			prefix := fmt.Sprintf("%s[%d].", name, i)
			if !checkFields(prefix, it, itemFields[name], add) {
				typesOK = false
			}
			if name == "workarounds" {
				checkWorkaroundRate(prefix, it, add)
			}
		}
	}
	checkZhForms(top, add)
	if raw, ok := top["examples"]; ok {
		var ex map[string]json.RawMessage
		if json.Unmarshal(raw, &ex) == nil {
			typesOK = checkFields("examples.", ex, []fieldSpec{{"match", kStrings, true},
				{"no_match", kStrings, true}, {"sources", kStrings, false}}, add) && typesOK
		}
	}
	if raw, ok := top["checked"]; ok {
		var c map[string]json.RawMessage
		if json.Unmarshal(raw, &c) == nil {
			typesOK = checkFields("checked.", c, checkedFields, add) && typesOK
		}
	}
	if raw, ok := top["operator"]; ok {
		var op map[string]json.RawMessage
		if json.Unmarshal(raw, &op) == nil {
			typesOK = checkFields("operator.", op, operatorFields, add) && typesOK
		}
	}
	if !typesOK {
		return nil, nil // semantic checks would only repeat the type errors
	}
	// A field already reported missing is not reported again as empty.
	missing := map[string]bool{}
	for _, s := range entryFields {
		if _, ok := top[s.name]; !ok && s.required {
			missing[s.name] = true
		}
	}
	sem := func(field, msg string) {
		top, _, _ := strings.Cut(field, ".")
		if !missing[top] {
			add(field, msg)
		}
	}
	e, err := Parse(f.Path, data)
	if err != nil {
		add("", err.Error())
		return nil, nil
	}
	re := checkEntry(f.Path, e, sem)
	return e, re
}

func oneOf(v string, allowed []string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

func checkEnum(field, v string, allowed []string, add func(field, msg string)) {
	if !oneOf(v, allowed) {
		add(field, fmt.Sprintf("%q is not one of %s", v, strings.Join(allowed, ", ")))
	}
}

func checkRate(field string, v float64, add func(field, msg string)) {
	if v < 0 || v > 1 {
		add(field, fmt.Sprintf("%g is outside [0,1]", v))
	}
}

func checkDate(field, v string, add func(field, msg string)) {
	if _, err := time.Parse("2006-01-02", v); err != nil {
		add(field, fmt.Sprintf("%q is not a YYYY-MM-DD date", v))
	}
}

// checkEntry runs the semantic rules on a well-typed entry and returns its
// compiled regex (nil if it does not compile).
func checkEntry(path string, e *Entry, add func(field, msg string)) *regexp.Regexp {
	if !idRE.MatchString(e.ID) {
		add("id", fmt.Sprintf("%q is not domain/slug in [a-z0-9.-]", e.ID))
	} else if filepath.Ext(path) == ".json" {
		// Only .json files live in the tree; a stray file given by hand
		// (the seed is a .txt) has no path to compare with.
		want := filepath.ToSlash(strings.TrimSuffix(path, ".json"))
		if !strings.HasSuffix(want, "/"+e.ID) && want != e.ID {
			add("id", fmt.Sprintf("%q does not match the file's path (want <root>/%s.json)", e.ID, e.ID))
		}
	}
	if d, _, ok := strings.Cut(e.ID, "/"); ok && d != e.Domain {
		add("domain", fmt.Sprintf("%q differs from the id's domain %q", e.Domain, d))
	}
	checkEnum("domain", e.Domain, domains, add)
	checkEnum("category", e.Category, categories, add)
	checkEnum("root_cause_type", e.RootCauseType, rootCauseTypes, add)
	checkEnum("verification_tier", e.VerificationTier, verificationTiers, add)
	checkEnum("resolvable", e.Resolvable, resolvables, add)
	checkEnum("locale", e.Locale, []string{"en"}, add)
	checkRate("confidence", e.Confidence, add)
	checkRate("fix_success_rate", e.FixSuccessRate, add)
	checkDate("first_seen", e.FirstSeen, add)
	checkDate("last_confirmed", e.LastConfirmed, add)
	checkDate("last_updated", e.LastUpdated, add)
	if e.EvidenceCount < 0 {
		add("evidence_count", "negative")
	}
	// In a fixed order, so that lint's output is the same every run.
	for _, f := range []struct{ name, v string }{{"title", e.Title}, {"title_zh", e.TitleZh}, {"signature", e.Signature}, {"signature_zh", e.SignatureZh},
		{"root_cause", e.RootCause}, {"root_cause_zh", e.RootCauseZh}} {
		if strings.TrimSpace(f.v) == "" {
			add(f.name, "empty")
		}
	}
	for i, v := range e.Versions {
		f := fmt.Sprintf("versions[%d]", i)
		if strings.TrimSpace(v.Version) == "" {
			add(f+".version", "empty")
		}
		checkEnum(f+".status", v.Status, versionStatuses, add)
		if v.Status == "fixed" {
			// gpudx compares the installed version with these; one that
			// does not parse ("main", "2.x", "2.2 (nightly)") rules
			// nothing in or out.
			for _, b := range []struct {
				name string
				s    *string
			}{{"introduced", v.Introduced}, {"removed", v.Removed}} {
				if b.s != nil && strings.TrimSpace(*b.s) != "" && !isRowVersion(*b.s) {
					add(f+"."+b.name, fmt.Sprintf("%q is not a version (want a release such as \"2.3.1\" or \"PyTorch 2.3.1\")", *b.s))
				}
			}
		}
	}
	for i, d := range e.DeadEnds {
		f := fmt.Sprintf("dead_ends[%d]", i)
		if strings.TrimSpace(d.Action) == "" {
			add(f+".action", "empty: say what people try")
		}
		if strings.TrimSpace(d.WhyFails) == "" {
			add(f+".why_fails", "empty")
		}
		checkRate(f+".fail_rate", d.FailRate, add)
		checkSources(f+".sources", d.Sources, add)
	}
	for i, w := range e.Workarounds {
		f := fmt.Sprintf("workarounds[%d]", i)
		if strings.TrimSpace(w.Action) == "" {
			add(f+".action", "empty: say what to do")
		}
		if strings.TrimSpace(w.How) == "" {
			add(f+".how", "empty: give a command, code line or setting")
		}
		checkRate(f+".success_rate", w.SuccessRate, add)
		checkSources(f+".sources", w.Sources, add)
	}
	checkOperator(e, add)
	checkBases(e, add)
	checkChecked(e.Checked, add)
	// Without a parallel list, Parse filled it from the items' zh.
	if len(e.WorkaroundsZh) != len(e.Workarounds) {
		add("workarounds_zh", fmt.Sprintf("%d items for %d workarounds", len(e.WorkaroundsZh), len(e.Workarounds)))
	}
	if len(e.DeadEndsZh) != len(e.DeadEnds) {
		add("dead_ends_zh", fmt.Sprintf("%d items for %d dead ends", len(e.DeadEndsZh), len(e.DeadEnds)))
	}
	for i, s := range e.DeadEndsZh {
		if i < len(e.DeadEnds) && strings.TrimSpace(s) == "" {
			add(fmt.Sprintf("dead_ends[%d].zh", i), "empty: the Chinese text of the dead end (inline zh, or its place in dead_ends_zh)")
		}
	}
	for i, s := range e.WorkaroundsZh {
		if i < len(e.Workarounds) && strings.TrimSpace(s) == "" {
			add(fmt.Sprintf("workarounds[%d].zh", i), "empty: the Chinese text of the workaround (inline zh, or its place in workarounds_zh)")
		}
	}
	if e.Regex == "" {
		add("regex", "empty")
		return nil
	}
	re, err := e.Compiled()
	if err != nil {
		add("regex", "not valid RE2: "+err.Error())
		return nil
	}
	checkConditions(e, re, add)
	if e.RegexNot != "" {
		if _, err := e.CompiledNot(); err != nil {
			add("regex_not", "not valid RE2: "+err.Error())
			return nil
		}
	}
	if len(e.Examples.Match) < 2 {
		add("examples.match", fmt.Sprintf("%d examples, want at least 2 real forms of the message", len(e.Examples.Match)))
	}
	if len(e.Examples.NoMatch) < 1 {
		add("examples.no_match", "no near miss, want at least 1")
	}
	// Examples are checked as the scanner reads them: line by line.
	for i, s := range e.Examples.Match {
		if !e.MatchAnyLine(s) {
			msg := "regex does not match "
			switch {
			case matchesALine(re, s):
				msg = "regex_not rules out "
			case re.MatchString(s):
				msg = "regex matches only across lines (gpudx matches line by line) "
			}
			add(fmt.Sprintf("examples.match[%d]", i), msg+quoteShort(s))
		}
	}
	for i, s := range e.Examples.NoMatch {
		if e.MatchAnyLine(s) {
			add(fmt.Sprintf("examples.no_match[%d]", i), "regex matches "+quoteShort(s))
		}
	}
	return re
}

// checkWorkaroundRate enforces what a workaround's kind implies, on the
// raw item (a missing rate and a zero rate differ there): a fix has a
// success_rate, a check has none.
func checkWorkaroundRate(prefix string, it map[string]json.RawMessage, add func(field, msg string)) {
	var kind string
	if raw, ok := it["kind"]; ok && json.Unmarshal(raw, &kind) != nil {
		return // reported as a type error
	}
	_, hasRate := it["success_rate"]
	_, hasBasis := it["rate_basis"]
	_, hasReports := it["rate_reports"]
	if kind == KindCheck {
		if hasRate || hasBasis || hasReports {
			add(prefix+"success_rate", "a check (kind \"check\") finds out what is wrong and has no success rate: remove success_rate, rate_basis and rate_reports, or make it a fix")
		}
		return
	}
	if !hasRate {
		add(prefix+"success_rate", "missing: a fix has a success rate (a diagnostic step is marked \"kind\": \"check\" instead)")
	}
}

// checkZhForms refuses an entry that gives the Chinese text of its items
// both ways: inline (zh on the item) and in the parallel list.
func checkZhForms(top map[string]json.RawMessage, add func(field, msg string)) {
	for _, l := range []struct{ items, list string }{{"dead_ends", "dead_ends_zh"}, {"workarounds", "workarounds_zh"}} {
		var list []json.RawMessage
		if json.Unmarshal(top[l.list], &list) != nil || len(list) == 0 {
			continue
		}
		var items []map[string]json.RawMessage
		if json.Unmarshal(top[l.items], &items) != nil {
			continue
		}
		for i, it := range items {
			if _, ok := it["zh"]; ok {
				add(fmt.Sprintf("%s[%d].zh", l.items, i), fmt.Sprintf("Chinese text given both inline and in %s: use one form", l.list))
			}
		}
	}
}

// checkBases requires a basis on every rate and checks it.
func checkBases(e *Entry, add func(field, msg string)) {
	basis := func(field string, b Basis, reports int) {
		switch {
		case b == "":
			add(field+"rate_basis", "missing: say what the rate rests on (estimate, reports with rate_reports, or reproduced)")
		case !oneOf(string(b), RateBases):
			checkEnum(field+"rate_basis", string(b), RateBases, add)
		case b == BasisReports && reports < 1:
			add(field+"rate_reports", "missing: a rate counted from reports says how many (rate_reports >= 1)")
		case b != BasisReports && reports != 0:
			add(field+"rate_reports", fmt.Sprintf("set, but rate_basis is %q: rate_reports goes with rate_basis \"reports\"", b))
		}
	}
	for i, d := range e.DeadEnds {
		basis(fmt.Sprintf("dead_ends[%d].", i), d.RateBasis, d.RateReports)
	}
	for i, w := range e.Workarounds {
		f := fmt.Sprintf("workarounds[%d].", i)
		if w.Kind != "" {
			checkEnum(f+"kind", w.Kind, WorkaroundKinds, add)
		}
		if !w.IsCheck() {
			basis(f, w.RateBasis, w.RateReports)
		}
	}
	switch b := e.FixSuccessRateBasis; {
	case b == "":
		add("fix_success_rate_basis", "missing: say what fix_success_rate rests on (estimate, reports or reproduced)")
	default:
		checkEnum("fix_success_rate_basis", string(b), RateBases, add)
	}
}

// checkChecked checks the record of an entry's last check.
func checkChecked(c *Check, add func(field, msg string)) {
	if c == nil {
		return
	}
	if d, err := time.Parse("2006-01-02", c.Date); err != nil {
		add("checked.date", fmt.Sprintf("%q is not a YYYY-MM-DD date", c.Date))
	} else if d.After(today()) {
		add("checked.date", fmt.Sprintf("%s is in the future", c.Date))
	}
	if strings.TrimSpace(c.By) == "" {
		add("checked.by", "empty: name the reader")
	}
	checkEnum("checked.method", c.Method, CheckMethods, add)
}

var actionRE = regexp.MustCompile(`^(RESTART_APP|RESET_GPU|RESTART_BM|IGNORE|CONTACT_SUPPORT|WORKFLOW_[A-Z0-9_]+)?$`)

// checkOperator requires the operator block on Xid entries (an operator
// reads them, not the job's author) and checks its values.
func checkOperator(e *Entry, add func(field, msg string)) {
	o := e.Operator
	if o == nil {
		if strings.HasPrefix(e.ErrorCode, "Xid") {
			add("operator", "missing: an Xid entry says severity, fault, drain and the next step")
		}
		return
	}
	checkEnum("operator.severity", o.Severity, Severities, add)
	checkEnum("operator.fault", o.Fault, faults, add)
	checkEnum("operator.drain", o.Drain, drainChoices, add)
	if !actionRE.MatchString(o.Action) {
		add("operator.action", fmt.Sprintf("%q is not an NVIDIA resolution bucket (RESTART_APP, RESET_GPU, RESTART_BM, IGNORE, CONTACT_SUPPORT, WORKFLOW_*) or empty", o.Action))
	}
	if strings.TrimSpace(o.Next) == "" || strings.TrimSpace(o.NextZh) == "" {
		add("operator.next", "empty: say the operator's next step, in English and Chinese (next_zh)")
	}
}

func checkSources(field string, srcs []string, add func(field, msg string)) {
	if len(srcs) == 0 {
		add(field, "none: every dead end and workaround needs a source")
	}
	for _, s := range srcs {
		if !strings.HasPrefix(s, "https://") && !strings.HasPrefix(s, "http://") {
			add(field, fmt.Sprintf("%q is not an http(s) URL", s))
		}
	}
}

func quoteShort(s string) string { return fmt.Sprintf("%q", truncate(s, 100)) }

func checkGraph(e *Entry, exists func(string) bool, add func(field, msg string)) {
	g := e.TransitionGraph
	for i, id := range g.LeadsTo {
		if !exists(id) {
			add(fmt.Sprintf("transition_graph.leads_to[%d]", i), fmt.Sprintf("no entry %q", id))
		}
	}
	for i, id := range g.PrecededBy {
		if !exists(id) {
			add(fmt.Sprintf("transition_graph.preceded_by[%d]", i), fmt.Sprintf("no entry %q", id))
		}
	}
	for i, c := range g.FrequentlyConfusedWith {
		if !exists(c.ErrorID) {
			add(fmt.Sprintf("transition_graph.frequently_confused_with[%d]", i), fmt.Sprintf("no entry %q", c.ErrorID))
		}
	}
}

// Confused reports whether a or b names the other in
// frequently_confused_with: one stated distinction is enough.
func Confused(a, b *Entry) bool {
	for _, c := range a.TransitionGraph.FrequentlyConfusedWith {
		if c.ErrorID == b.ID {
			return true
		}
	}
	for _, c := range b.TransitionGraph.FrequentlyConfusedWith {
		if c.ErrorID == a.ID {
			return true
		}
	}
	return false
}

// overlaps reports an entry whose regex matches another entry's examples
// when neither names the other in frequently_confused_with. Linted entries
// are checked against each other and against the known base.
func overlaps(ls []linted, known *Base) []Problem {
	// Targets: the linted entries, then the known ones they do not replace.
	var targets []*Entry
	inLint := map[string]bool{}
	for _, x := range ls {
		if x.re != nil && x.entry.Format == FormatGpudx {
			targets = append(targets, x.entry)
			inLint[x.entry.ID] = true
		}
	}
	if known != nil {
		for _, e := range known.Entries() {
			if !inLint[e.ID] && e.Format == FormatGpudx {
				targets = append(targets, e)
			}
		}
	}
	var probs []Problem
	for _, x := range ls {
		if x.re == nil || x.entry.Format != FormatGpudx {
			continue
		}
		for _, o := range targets {
			if o.ID == x.entry.ID || Confused(x.entry, o) {
				continue
			}
			for i, s := range o.Examples.Match {
				if x.entry.MatchAnyLine(s) {
					probs = append(probs, Problem{Path: x.path, Field: "regex", Message: fmt.Sprintf(
						"also matches %s's examples.match[%d]; name each other in frequently_confused_with or narrow the regex", o.ID, i)})
					break
				}
			}
		}
	}
	return probs
}

// lintCanon checks what applies to a deadends.dev canon: that it converts,
// that its regex is valid RE2, that it matches its own signature and that
// its rates are in range.
func lintCanon(f File, add func(field, msg string)) (*Entry, *regexp.Regexp) {
	e, err := fromCanon(f.Data)
	if err != nil {
		add("", err.Error())
		return nil, nil
	}
	e.Origin = f.Path
	checkRate("verdict.confidence", e.Confidence, add)
	checkRate("verdict.fix_success_rate", e.FixSuccessRate, add)
	for i, d := range e.DeadEnds {
		checkRate(fmt.Sprintf("dead_ends[%d].fail_rate", i), d.FailRate, add)
		if strings.TrimSpace(d.Action) == "" {
			add(fmt.Sprintf("dead_ends[%d].action", i), "empty")
		}
	}
	for i, w := range e.Workarounds {
		checkRate(fmt.Sprintf("workarounds[%d].success_rate", i), w.SuccessRate, add)
	}
	if e.Regex == "" {
		add("error.regex", "empty")
		return e, nil
	}
	re, err := e.Compiled()
	if err != nil {
		add("error.regex", "not valid RE2, skipped when matching: "+err.Error())
		return e, nil
	}
	if e.Signature != "" && !re.MatchString(e.Signature) {
		add("error.regex", "does not match its own error.signature "+quoteShort(e.Signature))
	}
	return e, re
}

// CheckRegex reports whether expr is valid RE2 (Go regexp) syntax.
func CheckRegex(expr string) error {
	_, err := regexp.Compile(expr)
	return err
}

// matchesALine reports whether re matches one of the lines of s, which is
// what the scanner can see of a message wrapped over several lines.
func matchesALine(re *regexp.Regexp, s string) bool {
	for _, line := range strings.Split(s, "\n") {
		if re.MatchString(strings.TrimSuffix(line, "\r")) {
			return true
		}
	}
	return false
}

// scopeRE finds where an item's action names a release or a GPU series it
// is tied to: "PyTorch 2.3.0", "CUDA 10.x", "TensorFlow 2.14+", "RTX
// 30-series", "pre-Ampere", "sm_89".
var scopeRE = regexp.MustCompile(`\b(?:PyTorch|torch|CUDA|cuDNN|NCCL|TensorFlow|JAX|jaxlib|Triton)\s+v?\d+(?:\.(?:\d+|x))*\+?|` +
	`\b(?:RTX|GTX)\s?\d0(?:\d0)?(?:-?series|xx)?\b|\b(?:Kepler|Maxwell|Pascal|Volta|Turing|Ampere|Ada Lovelace|Hopper|Blackwell)\b|\bsm_\d{2,3}[a-z]?\b`)

// unconditionedScope warns about dead ends and workarounds whose action
// names a release or a GPU series but that carry no condition: without
// one the item ranks with the generic advice on a log that does not say
// the version or GPU (diagnose orders items whose condition holds first,
// then items with none, then items whose condition is unknown). It returns
// field and message pairs.
func unconditionedScope(e *Entry) [][2]string {
	var out [][2]string
	check := func(field, action, cond string) {
		if strings.TrimSpace(cond) != "" {
			return
		}
		if m := scopeRE.FindString(action); m != "" {
			out = append(out, [2]string{field + ".condition", fmt.Sprintf("the action names %q but there is no condition: "+
				"say when it applies (e.g. env.torch >= '2.3' && env.torch < '2.4', env.torch_cuda < '11.0'), "+
				"or it ranks with the generic advice where the log does not name the version or GPU", m)})
		}
	}
	for i, d := range e.DeadEnds {
		check(fmt.Sprintf("dead_ends[%d]", i), d.Action, d.Condition)
	}
	for i, w := range e.Workarounds {
		check(fmt.Sprintf("workarounds[%d]", i), w.Action, w.Condition)
	}
	return out
}
