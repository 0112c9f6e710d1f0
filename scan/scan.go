// Package scan finds known errors in text. A Scanner is compiled once from
// knowledge-base entries and then reads any io.Reader as a stream of lines
// with bounded memory, reporting each line an entry's regex matches.
//
// A regex runs only on lines that hold one of the literals every match of
// it must contain (package literal). All literals are searched for at once
// over whole chunks of input (litSet), so that the lines holding none cost
// a few instructions each; entries without such a literal run on every
// line (Scanner.Unfiltered). Chunks of whole lines are scanned on all
// cores at once (up to MaxWorkers, which bounds memory) and what they hold
// is reported in input order (Plan). A line that repeats an earlier one
// with other figures (timestamps, ranks, counters) is answered from what
// the worker remembers of its shape, without running the regexes again
// (repeat.go). The hits are exactly those of trying every regex on every
// line, which the tests check.
//
// A line is the text before '\n', without a trailing '\r'. Lines longer than
// MaxLine are cut into MaxLine pieces, counted from the line's start, that
// are scanned one by one under the same line number. ANSI colour codes are
// removed before matching; invalid UTF-8 is matched as it is (RE2 reads a
// bad byte as U+FFFD) and never stops a scan.
package scan

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/literal"
)

// MaxLine is the longest piece of a line matched at once.
const MaxLine = 1 << 20

// MaxEvidence bounds the text of a hit kept as evidence.
const MaxEvidence = 400

// Hit is one line on which an entry's regex matched.
type Hit struct {
	Entry    int               // index into Scanner.Entries()
	ID       string            // the entry's id
	Line     int               // 1-based line number
	Offset   int64             // byte offset of the match's start in the input
	Len      int               // length of the match in the cleaned line
	Text     string            // the matched line, cleaned and cut to MaxEvidence around the match
	Captures map[string]string // named groups that took part in the match
}

// Stats counts what a scan read.
type Stats struct {
	Bytes int64 `json:"bytes"`
	Lines int   `json:"lines"`
}

// Scanner matches lines against a fixed set of entries. It is safe for
// concurrent use by several scans.
type Scanner struct {
	entries []*kb.Entry
	res     []*regexp.Regexp
	nots    []*regexp.Regexp // per entry: its regex_not, nil for none
	names   [][]string       // per entry: its regex's group names

	lits   []string  // the literals the regexes require, lower-cased
	owners [][]int32 // per literal: the entries requiring it
	always []int32   // entries with no usable literal, ascending

	plans sync.Map // CachedPlan's key → *Plan
}

// CompileError is an entry whose regex could not be compiled; the entry is
// left out of the Scanner.
type CompileError struct {
	ID     string
	Origin string
	Err    error
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("%s (%s): regex skipped: %v", e.ID, e.Origin, e.Err)
}

// New compiles the entries' regexes. Entries without a regex are left
// out; those whose regex is not valid RE2 too, each reported as a
// *CompileError in the kb.ErrorList err holds. The Scanner is usable
// either way, with the rest.
func New(entries []*kb.Entry) (s *Scanner, err error) {
	s = &Scanner{}
	var errs kb.ErrorList
	for _, e := range entries {
		if e.Regex == "" {
			continue
		}
		re, err := e.Compiled()
		if err != nil {
			errs = append(errs, &CompileError{e.ID, e.Origin, err})
			continue
		}
		not, err := e.CompiledNot()
		if err != nil {
			errs = append(errs, &CompileError{e.ID, e.Origin, fmt.Errorf("regex_not: %w", err)})
			continue
		}
		s.entries = append(s.entries, e)
		s.res = append(s.res, re)
		s.nots = append(s.nots, not)
		s.names = append(s.names, re.SubexpNames())
	}
	index := map[string]int{}
	for i, re := range s.res {
		set, ok := literal.Required(re.String())
		if !ok {
			s.always = append(s.always, int32(i))
			continue
		}
		for _, l := range set {
			j, seen := index[l]
			if !seen {
				j = len(s.lits)
				index[l] = j
				s.lits = append(s.lits, l)
				s.owners = append(s.owners, nil)
			}
			if !slices.Contains(s.owners[j], int32(i)) {
				s.owners[j] = append(s.owners[j], int32(i))
			}
		}
	}
	return s, errs.Err()
}

// Unfiltered is the number of entries whose regex holds no literal that
// every match must contain; they are tried on every line, and each one
// slows every scan down.
func (s *Scanner) Unfiltered() int { return len(s.always) }

// Entries returns the entries the scanner matches, in Hit.Entry order.
func (s *Scanner) Entries() []*kb.Entry { return s.entries }

// cached returns the plan of a gate without literals, compiled once.
func (s *Scanner) cached(all bool) *Plan {
	return s.CachedPlan(fmt.Sprint("scan: all=", all), func() Gate { return Gate{All: all} })
}

// CachedPlan returns the Plan of the gate under key, compiling it on the
// first call: the plan lives as long as the Scanner.
func (s *Scanner) CachedPlan(key string, gate func() Gate) *Plan {
	if p, ok := s.plans.Load(key); ok {
		return p.(*Plan)
	}
	p, _ := s.plans.LoadOrStore(key, s.Plan(gate()))
	return p.(*Plan)
}

// Scan reads r to the end and calls fn for every hit, in input order
// (by line, then by entry). It returns what it read and the first read
// error; it never stops on the content itself.
func (s *Scanner) Scan(r io.Reader, fn func(Hit)) (Stats, error) {
	return s.cached(false).Visit(r, funcs{hit: fn})
}

// ScanLines is Scan that also shows every line to each before its hits
// are reported: the line number and its cleaned text (no line ending, no
// ANSI codes, at most MaxLine bytes). text is only valid during the call
// and during the fn calls for that line's hits, which follow it. each may
// be nil. A Plan with a Gate shows only the lines a caller needs, and is
// much faster.
func (s *Scanner) ScanLines(r io.Reader, fn func(Hit), each func(line int, text []byte)) (Stats, error) {
	if each == nil {
		return s.Scan(r, fn)
	}
	return s.cached(true).Visit(r, funcs{hit: fn, line: each})
}

// funcs is a Visitor made of functions.
type funcs struct {
	hit  func(Hit)
	line func(int, []byte)
}

func (f funcs) Line(n int, text []byte) bool {
	if f.line != nil {
		f.line(n, text)
	}
	return false
}

func (f funcs) Hit(h Hit) { f.hit(h) }

// lowerASCII appends b with A-Z lower-cased to dst.
func lowerASCII(dst, b []byte) []byte {
	dst = slices.Grow(dst, len(b))[:len(b)]
	for i, c := range b {
		if c-'A' < 26 {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
	return dst
}

// evidence returns the line, or a window of it around [from,to) when it is
// long. Progress bars redraw with '\r': only the redraw holding the match
// is kept.
func evidence(text []byte, from, to int) string {
	if i := bytes.LastIndexByte(text[:from], '\r'); i >= 0 {
		text, from, to = text[i+1:], from-i-1, to-i-1
	}
	if j := bytes.IndexByte(text[to:], '\r'); j >= 0 {
		text = text[:to+j]
	}
	if len(text) <= MaxEvidence {
		if utf8.Valid(text) {
			return string(text) // one copy, not two: a hit on every repeat pays it
		}
		return string(bytes.ToValidUTF8(text, []byte("\uFFFD")))
	}
	lo := max(0, from-MaxEvidence/4)
	hi := min(len(text), lo+MaxEvidence)
	if hi-lo < MaxEvidence {
		lo = max(0, hi-MaxEvidence)
	}
	out := text[lo:hi]
	if !utf8.Valid(out) {
		out = bytes.ToValidUTF8(out, []byte("\uFFFD"))
	}
	var s strings.Builder // one allocation
	s.Grow(len(out) + 2*len("…"))
	if lo > 0 {
		s.WriteString("…")
	}
	s.Write(out)
	if hi < len(text) {
		s.WriteString("…")
	}
	return s.String()
}
