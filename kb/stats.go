package kb

import (
	"github.com/gpudx/gpudx/literal"
	"strings"
)

// Families an entry can belong to. Domains other than cuda are their own
// family; the cuda domain is split by library, which an entry's slug names
// first (cuda/cublas-..., cuda/cudnn-..., cuda/cufft-...).
const (
	FamilyCUDARuntime = "cuda-runtime"
	FamilyCUBLAS      = "cublas"
	FamilyCUDNN       = "cudnn"
	FamilyCUDAMath    = "cuda-math" // cuFFT, cuSOLVER, cuSPARSE, cuRAND
)

// Family returns the entry's family: for the cuda domain the library its
// slug starts with, otherwise its domain.
func (e *Entry) Family() string {
	if e.Domain != "cuda" {
		return e.Domain
	}
	_, slug, _ := strings.Cut(e.ID, "/")
	switch {
	case strings.HasPrefix(slug, "cublas"):
		return FamilyCUBLAS
	case strings.HasPrefix(slug, "cudnn"):
		return FamilyCUDNN
	case strings.HasPrefix(slug, "cufft"), strings.HasPrefix(slug, "cusolver"),
		strings.HasPrefix(slug, "cusparse"), strings.HasPrefix(slug, "curand"):
		return FamilyCUDAMath
	}
	return FamilyCUDARuntime
}

// CompleteZh reports whether the entry's Chinese text is complete: a
// signature and root cause, and one non-empty string per dead end and per
// workaround.
func (e *Entry) CompleteZh() bool {
	if strings.TrimSpace(e.SignatureZh) == "" || strings.TrimSpace(e.RootCauseZh) == "" ||
		len(e.DeadEndsZh) != len(e.DeadEnds) || len(e.WorkaroundsZh) != len(e.Workarounds) {
		return false
	}
	for _, s := range append(append([]string{}, e.DeadEndsZh...), e.WorkaroundsZh...) {
		if strings.TrimSpace(s) == "" {
			return false
		}
	}
	return true
}

// HasExamples reports whether the entry has at least two real forms of its
// message and one near miss.
func (e *Entry) HasExamples() bool {
	return len(e.Examples.Match) >= 2 && len(e.Examples.NoMatch) >= 1
}

// SourcedItems reports whether the entry has dead ends or workarounds and
// every one of them cites a source.
func (e *Entry) SourcedItems() bool {
	if len(e.DeadEnds)+len(e.Workarounds) == 0 {
		return false
	}
	for _, d := range e.DeadEnds {
		if len(d.Sources) == 0 {
			return false
		}
	}
	for _, w := range e.Workarounds {
		if len(w.Sources) == 0 {
			return false
		}
	}
	return true
}

// HasFacts reports whether the entry's regex names at least one group.
func (e *Entry) HasFacts() bool {
	re, err := e.Compiled()
	if err != nil {
		return false
	}
	for _, n := range re.SubexpNames() {
		if n != "" {
			return true
		}
	}
	return false
}

// Share is a count out of the total, with its ratio.
type Share struct {
	Count int     `json:"count"`
	Share float64 `json:"share"`
}

// Stats describes a knowledge base in numbers.
type Stats struct {
	Entries    int            `json:"entries"`
	ByDomain   map[string]int `json:"by_domain"`
	ByFamily   map[string]int `json:"by_family"`
	ByCategory map[string]int `json:"by_category"`
	ByTier     map[string]int `json:"by_tier"`
	// Quality shares: complete Chinese text, examples, sources on every
	// dead end and workaround, named facts, transition-graph edges.
	CompleteZh     Share `json:"complete_zh"`
	WithExamples   Share `json:"with_examples"`
	SourcedItems   Share `json:"sources_on_every_item"`
	WithFacts      Share `json:"with_facts"`
	WithGraphEdges Share `json:"with_graph_edges"`
	DeadEnds       int   `json:"dead_ends"`
	Workarounds    int   `json:"workarounds"`
	// Checks counts the workarounds that are diagnostic steps (no rate).
	Checks int `json:"checks"`
	// RateBases counts rates by what they rest on: dead ends, fixes and
	// entries' fix_success_rate ("" for a rate without a basis).
	RateBases map[string]int `json:"rate_bases"`
	// Checked counts entries whose check by a second reader is recorded;
	// CheckedByFamily splits them by family (every family present, 0
	// included) and ByCheckMethod by method.
	Checked         Share          `json:"checked"`
	CheckedByFamily map[string]int `json:"checked_by_family"`
	ByCheckMethod   map[string]int `json:"by_check_method"`
	// Unfiltered counts regexes with no literal every match must contain:
	// the scanner tries them on every line (see package literal).
	Unfiltered int `json:"unfiltered_regexes"`
	// Registry: how many names it holds, by kind. Absent without one.
	Registry *RegistryStats `json:"registry,omitempty"`
}

// RegistryStats counts registry names.
type RegistryStats struct {
	Names  int            `json:"names"`
	ByKind map[string]int `json:"by_kind"`
}

// ComputeStats counts entries (and the registry, when reg is not nil).
func ComputeStats(entries []*Entry, reg *Registry) Stats {
	s := Stats{
		Entries:    len(entries),
		ByDomain:   map[string]int{},
		ByFamily:   map[string]int{},
		ByCategory: map[string]int{},
		ByTier:     map[string]int{},
		RateBases:  map[string]int{},

		CheckedByFamily: map[string]int{},
		ByCheckMethod:   map[string]int{},
	}
	for _, e := range entries {
		s.ByDomain[e.Domain]++
		s.ByFamily[e.Family()]++
		s.ByCategory[e.Category]++
		s.ByTier[e.VerificationTier]++
		count := func(sh *Share, ok bool) {
			if ok {
				sh.Count++
			}
		}
		count(&s.CompleteZh, e.CompleteZh())
		count(&s.WithExamples, e.HasExamples())
		count(&s.SourcedItems, e.SourcedItems())
		count(&s.WithFacts, e.HasFacts())
		g := e.TransitionGraph
		count(&s.WithGraphEdges, len(g.LeadsTo)+len(g.PrecededBy)+len(g.FrequentlyConfusedWith) > 0)
		s.DeadEnds += len(e.DeadEnds)
		s.Workarounds += len(e.Workarounds)
		s.RateBases[string(e.FixSuccessRateBasis)]++
		for _, d := range e.DeadEnds {
			s.RateBases[string(d.RateBasis)]++
		}
		for _, w := range e.Workarounds {
			if w.IsCheck() {
				s.Checks++
				continue
			}
			s.RateBases[string(w.RateBasis)]++
		}
		s.CheckedByFamily[e.Family()] += 0
		if e.IsChecked() {
			s.Checked.Count++
			s.CheckedByFamily[e.Family()]++
			s.ByCheckMethod[e.Checked.Method]++
		}
		if _, err := e.Compiled(); err == nil && e.Regex != "" {
			if _, ok := literal.Required(e.Regex); !ok {
				s.Unfiltered++
			}
		}
	}
	for _, sh := range []*Share{&s.CompleteZh, &s.WithExamples, &s.SourcedItems, &s.WithFacts, &s.WithGraphEdges, &s.Checked} {
		if s.Entries > 0 {
			sh.Share = float64(sh.Count) / float64(s.Entries)
		}
	}
	if reg != nil {
		rs := &RegistryStats{Names: reg.Len(), ByKind: map[string]int{}}
		for _, n := range reg.Names() {
			rs.ByKind[n.Kind]++
		}
		s.Registry = rs
	}
	return s
}
