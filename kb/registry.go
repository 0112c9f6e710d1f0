package kb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Name is one registry record: an environment variable, allocator setting,
// flag, API call or status constant that entries may mention, with the
// component it belongs to, the versions where it exists and an official
// source that shows it.
type Name struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Component string `json:"component"`
	Versions  string `json:"versions"`
	Source    string `json:"source"`

	// Origin is the registry file the record came from.
	Origin string `json:"-"`
}

// nameKinds are the kinds a registry record may have. KindNonexistent
// records a name people believe in that does not exist: entries may name
// it only inside a dead end.
var nameKinds = []string{"env", "alloc_conf", "flag", "api", "cli", "status", KindNonexistent}

// KindNonexistent is the kind of a name that does not exist.
const KindNonexistent = "nonexistent"

// RegistryDir is the directory, beside the domain directories of an entry
// tree, that holds the registry files.
const RegistryDir = "_registry"

// Registry is the set of names entries may mention. The zero value is an
// empty registry.
type Registry struct {
	names map[string]Name
	// Problems found while reading: malformed records and duplicates.
	Problems []Problem
}

// Lookup returns the record for name.
func (r *Registry) Lookup(name string) (Name, bool) {
	if r == nil {
		return Name{}, false
	}
	n, ok := r.names[name]
	return n, ok
}

// Len reports how many names the registry holds.
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	return len(r.names)
}

// Names returns the records sorted by name.
func (r *Registry) Names() []Name {
	if r == nil {
		return nil
	}
	out := make([]Name, 0, len(r.names))
	for _, n := range r.names {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Add reads one registry file (a JSON array of records) into r. Malformed
// records and names already present are recorded in r.Problems; the other
// records are added.
func (r *Registry) Add(f File) {
	if r.names == nil {
		r.names = map[string]Name{}
	}
	add := func(field, msg string) {
		r.Problems = append(r.Problems, Problem{Path: f.Path, Field: field, Message: msg})
	}
	var raw []json.RawMessage
	data := bytes.TrimPrefix(f.Data, []byte("\xef\xbb\xbf"))
	if err := json.Unmarshal(data, &raw); err != nil {
		add("", "not a JSON array of records: "+jsonErr(data, err).Error())
		return
	}
	for i, rec := range raw {
		field := func(s string) string { return fmt.Sprintf("[%d].%s", i, s) }
		var n Name
		dec := json.NewDecoder(bytes.NewReader(rec))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&n); err != nil {
			add(fmt.Sprintf("[%d]", i), "not a registry record: "+err.Error())
			continue
		}
		n.Origin = f.Path
		ok := true
		for _, req := range []struct{ name, v string }{{"name", n.Name}, {"kind", n.Kind},
			{"component", n.Component}, {"versions", n.Versions}, {"source", n.Source}} {
			if strings.TrimSpace(req.v) == "" {
				add(field(req.name), "missing or empty")
				ok = false
			}
		}
		if n.Kind != "" && !oneOf(n.Kind, nameKinds) {
			add(field("kind"), fmt.Sprintf("%q is not one of %s", n.Kind, strings.Join(nameKinds, ", ")))
			ok = false
		}
		if n.Source != "" && !strings.HasPrefix(n.Source, "https://") && !strings.HasPrefix(n.Source, "http://") {
			add(field("source"), "not an http(s) URL")
			ok = false
		}
		if prev, dup := r.names[n.Name]; dup && n.Name != "" {
			add(field("name"), fmt.Sprintf("%q is already recorded in %s", n.Name, prev.Origin))
			continue
		}
		if ok {
			r.names[n.Name] = n
		}
	}
}

// ReadRegistryFS reads every *.json file in root/_registry of fsys. A tree
// without a registry directory gives an empty registry. Paths are
// prefix+path.
func ReadRegistryFS(fsys fs.FS, root, prefix string) (*Registry, error) {
	r := &Registry{names: map[string]Name{}}
	dir := path.Join(root, RegistryDir)
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return r, nil
		}
		return nil, &LoadError{prefix + dir, err}
	}
	for _, d := range ents {
		if d.IsDir() || path.Ext(d.Name()) != ".json" {
			continue
		}
		p := path.Join(dir, d.Name())
		data, err := readLimited(fsys, p)
		if err != nil {
			return nil, &LoadError{prefix + p, err}
		}
		r.Add(File{Path: prefix + p, Data: data})
	}
	return r, nil
}

// Patterns for the names an entry's prose mentions.
var (
	// UPPER_CASE with at least one underscore: environment variables and
	// status constants (NCCL_DEBUG, CUBLAS_STATUS_NOT_SUPPORTED).
	upperNameRE = regexp.MustCompile(`\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b`)
	// Dotted framework names: torch.cuda.empty_cache, jax.devices, tf.config.
	frameworkNameRE = regexp.MustCompile(`\b(?:torch|jax|jnp|tf)(?:\.[A-Za-z_][A-Za-z0-9_]*)+`)
	// An allocator setting written key:value (expandable_segments:True).
	allocKeyRE = regexp.MustCompile(`\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+):\s*(?:True|False|true|false|[0-9]|\[|native|cudaMallocAsync)`)
	// The value assigned to the allocator environment variables; its
	// comma-separated keys are allocator settings too.
	allocAssignRE = regexp.MustCompile(`\bPYTORCH_(?:CUDA_|HIP_)?ALLOC_CONF\s*=\s*["']?([A-Za-z0-9_:.,\[\]>]+)`)
)

// mention is a name found in an entry's prose, with the field it was found in.
type mention struct {
	Name  string
	Field string
	// Kind is "name" for UPPER_CASE and dotted names, "alloc_conf" for an
	// allocator setting.
	Kind string
}

// mentions returns the names e's prose mentions: root cause, dead ends,
// workarounds, their Chinese text, version notes and confusion
// distinctions. Names that appear in the entry's own message (signature,
// aliases, error code, examples.match) are not returned: the message
// itself shows they exist.
func mentions(e *Entry) []mention {
	own := ownTokens(e)
	var out []mention
	seen := map[string]bool{}
	emit := func(field, name, kind string) {
		if own[name] || seen[field+"\x00"+name] {
			return
		}
		seen[field+"\x00"+name] = true
		out = append(out, mention{name, field, kind})
	}
	scanText := func(field, s string) {
		for _, m := range namesIn(s) {
			emit(field, m.Name, m.Kind)
		}
	}
	scanText("root_cause", e.RootCause)
	scanText("root_cause_zh", e.RootCauseZh)
	for i, d := range e.DeadEnds {
		scanText(fmt.Sprintf("dead_ends[%d].action", i), d.Action)
		scanText(fmt.Sprintf("dead_ends[%d].why_fails", i), d.WhyFails)
	}
	for i, s := range e.DeadEndsZh {
		scanText(fmt.Sprintf("dead_ends_zh[%d]", i), s)
	}
	for i, w := range e.Workarounds {
		scanText(fmt.Sprintf("workarounds[%d].action", i), w.Action)
		scanText(fmt.Sprintf("workarounds[%d].how", i), w.How)
	}
	for i, s := range e.WorkaroundsZh {
		scanText(fmt.Sprintf("workarounds_zh[%d]", i), s)
	}
	for i, v := range e.Versions {
		if v.BehaviorChange != nil {
			scanText(fmt.Sprintf("versions[%d].behavior_change", i), *v.BehaviorChange)
		}
	}
	for i, c := range e.TransitionGraph.FrequentlyConfusedWith {
		scanText(fmt.Sprintf("transition_graph.frequently_confused_with[%d].distinction", i), c.Distinction)
	}
	keys := make([]string, 0, len(e.OSSpecific))
	for k := range e.OSSpecific {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		scanText("os_specific."+k, e.OSSpecific[k])
	}
	return out
}

// namesIn returns the names a text mentions, in order: UPPER_CASE and
// dotted framework names (kind "name"), then allocator settings (kind
// "alloc_conf"). Field is left empty.
func namesIn(s string) []mention {
	var out []mention
	for _, loc := range upperNameRE.FindAllStringIndex(s, -1) {
		out = append(out, mention{Name: s[loc[0]:loc[1]], Kind: "name"})
	}
	for _, loc := range frameworkNameRE.FindAllStringIndex(s, -1) {
		// Part of a host name or path (docs.jax.dev, a/torch.py), not an API.
		if loc[0] > 0 && strings.ContainsRune("./-", rune(s[loc[0]-1])) {
			continue
		}
		out = append(out, mention{Name: s[loc[0]:loc[1]], Kind: "name"})
	}
	for _, m := range allocKeyRE.FindAllStringSubmatch(s, -1) {
		out = append(out, mention{Name: m[1], Kind: "alloc_conf"})
	}
	for _, m := range allocAssignRE.FindAllStringSubmatch(s, -1) {
		for _, kv := range strings.Split(m[1], ",") {
			k, _, _ := strings.Cut(kv, ":")
			if k != "" && strings.ToLower(k) == k {
				out = append(out, mention{Name: k, Kind: "alloc_conf"})
			}
		}
	}
	return out
}

// NamesIn returns the variables, APIs and allocator settings a text
// mentions, found as lint finds them in entries' prose, so that generated
// text (advice, reasons) can be checked against the registry too.
func NamesIn(s string) []string {
	var out []string
	for _, m := range namesIn(s) {
		out = append(out, m.Name)
	}
	return out
}

// ownTokens gathers the names in the entry's own message fields.
func ownTokens(e *Entry) map[string]bool {
	own := map[string]bool{}
	texts := append([]string{e.Signature, e.ErrorCode}, e.Aliases...)
	for _, s := range append(texts, e.Examples.Match...) {
		for _, m := range namesIn(s) {
			own[m.Name] = true
		}
	}
	return own
}

// checkNames reports names in e's prose that reg does not hold, and names
// recorded as nonexistent outside a dead end. Each name is reported once per
// entry, at the first field that mentions it.
func checkNames(e *Entry, reg *Registry, add func(field, msg string)) {
	type report struct {
		m     mention
		msg   string
		count int
	}
	var order []string
	reports := map[string]*report{}
	for _, m := range mentions(e) {
		n, ok := reg.Lookup(m.Name)
		var msg string
		switch {
		case !ok:
			what := "name"
			if m.Kind == "alloc_conf" {
				what = "allocator setting"
			}
			msg = fmt.Sprintf("%s %q is not in the registry (%s/); record it with an official source, or reword", what, m.Name, RegistryDir)
		case n.Kind == KindNonexistent && !strings.HasPrefix(m.Field, "dead_ends"):
			msg = fmt.Sprintf("%q does not exist (registry, %s); only a dead end may name it", m.Name, n.Origin)
		default:
			continue
		}
		if r := reports[m.Name]; r != nil {
			r.count++
			continue
		}
		reports[m.Name] = &report{m, msg, 1}
		order = append(order, m.Name)
	}
	for _, name := range order {
		r := reports[name]
		msg := r.msg
		if r.count > 1 {
			msg += fmt.Sprintf(" (%d fields)", r.count)
		}
		add(r.m.Field, msg)
	}
}

// Union returns a registry holding the names of r and of o, with the
// problems of both; where both record a name, r's record is kept. It lets a
// directory of user entries bring its own registry beside the built-in one.
func (r *Registry) Union(o *Registry) *Registry {
	u := &Registry{names: map[string]Name{}}
	for _, x := range []*Registry{o, r} {
		if x == nil {
			continue
		}
		for k, n := range x.names {
			u.names[k] = n
		}
		u.Problems = append(u.Problems, x.Problems...)
	}
	return u
}
