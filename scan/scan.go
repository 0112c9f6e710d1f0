// Package scan finds known errors in text. A Scanner is compiled once from
// knowledge-base entries and then reads any io.Reader as a stream of lines
// with bounded memory, reporting each line an entry's regex matches.
//
// A regex runs only on lines that hold one of the literals every match of
// it must contain (package literal), found for all entries at once by an
// Aho-Corasick automaton over the lower-cased line; entries without such a
// literal run on every line (Scanner.Unfiltered). The hits are exactly
// those of trying every regex on every line, which the tests check.
//
// Lines longer than MaxLine are cut into MaxLine pieces that are scanned
// one by one under the same line number; CRLF endings and ANSI colour codes
// are removed before matching; invalid UTF-8 is matched as it is (RE2 reads
// a bad byte as U+FFFD) and never stops a scan.
package scan

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"

	"github.com/gpudx/gpudx/kb"
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

// matcher is the compiled form of the entries. It is kept behind this small
// interface so that a faster implementation can replace the plain one.
type matcher interface {
	// start returns what one scan matches lines with: it may keep scratch
	// state, so it serves one goroutine.
	start() lineMatcher
}

type lineMatcher interface {
	// match calls emit for every entry whose pattern matches line, with
	// the submatch index pairs of the leftmost match.
	match(line []byte, emit func(entry int, loc []int))
}

// Scanner matches lines against a fixed set of entries. It is safe for
// concurrent use by several Scan calls.
type Scanner struct {
	entries []*kb.Entry
	res     []*regexp.Regexp
	pre     *prefiltered
	m       matcher
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

// New compiles the entries' regexes. Entries without a regex, or whose
// regex is not valid RE2, are left out and reported as errors; the rest
// are usable.
func New(entries []*kb.Entry) (*Scanner, []error) {
	s := &Scanner{}
	var errs []error
	for _, e := range entries {
		if e.Regex == "" {
			continue
		}
		re, err := e.Compiled()
		if err != nil {
			errs = append(errs, &CompileError{e.ID, e.Origin, err})
			continue
		}
		s.entries = append(s.entries, e)
		s.res = append(s.res, re)
	}
	s.pre = newPrefiltered(s.res)
	s.m = s.pre
	return s, errs
}

// Unfiltered is the number of entries whose regex holds no literal that
// every match must contain; they are tried on every line, and each one
// slows every scan down.
func (s *Scanner) Unfiltered() int { return s.pre.unfiltered() }

// plainScanner is the Scanner that tries every regex on every line: the
// reference the prefiltered matcher is tested against.
func plainScanner(entries []*kb.Entry) *Scanner {
	s, _ := New(entries)
	s.m = plain(s.res)
	return s
}

// Entries returns the entries the scanner matches, in Hit.Entry order.
func (s *Scanner) Entries() []*kb.Entry { return s.entries }

// plain tries every regex on every line: the reference implementation.
type plain []*regexp.Regexp

func (p plain) start() lineMatcher { return p }

func (p plain) match(line []byte, emit func(int, []int)) {
	for i, re := range p {
		if loc := re.FindSubmatchIndex(line); loc != nil {
			emit(i, loc)
		}
	}
}

// Scan reads r to the end and calls fn for every hit, in input order
// (by line, then by entry). It returns what it read and the first read
// error; it never stops on the content itself.
func (s *Scanner) Scan(r io.Reader, fn func(Hit)) (Stats, error) {
	return s.ScanLines(r, fn, nil)
}

// ScanLines is Scan that also shows every line to each before its hits
// are reported: the line number and its cleaned text (no line ending, no
// ANSI codes, at most MaxLine bytes). text is only valid during the call
// and during the fn calls for that line's hits, which follow it. each may
// be nil.
func (s *Scanner) ScanLines(r io.Reader, fn func(Hit), each func(line int, text []byte)) (Stats, error) {
	var st Stats
	m := s.m.start()
	br := bufio.NewReaderSize(r, 64<<10)
	var acc []byte  // the line so far when it spans buffer refills
	var start int64 // offset of acc[0] (or of the next line)
	var clean []byte
	line := 1
	process := func(b []byte, off int64) {
		b = bytes.TrimSuffix(b, []byte("\n"))
		b = bytes.TrimSuffix(b, []byte("\r"))
		text := b
		stripped := false
		if bytes.IndexByte(b, 0x1b) >= 0 {
			clean = stripANSI(clean[:0], b)
			text, stripped = clean, true
		}
		if each != nil {
			each(line, text)
		}
		m.match(text, func(i int, loc []int) {
			h := Hit{Entry: i, ID: s.entries[i].ID, Line: line, Len: loc[1] - loc[0]}
			at := loc[0]
			if stripped {
				h.Offset = off + int64(rawOffset(b, at))
			} else {
				h.Offset = off + int64(at)
			}
			h.Text = evidence(text, loc[0], loc[1])
			names := s.res[i].SubexpNames()
			for g := 1; g < len(names); g++ {
				if names[g] != "" && loc[2*g] >= 0 {
					if h.Captures == nil {
						h.Captures = map[string]string{}
					}
					h.Captures[names[g]] = string(text[loc[2*g]:loc[2*g+1]])
				}
			}
			fn(h)
		})
	}
	var last byte
	for {
		frag, err := br.ReadSlice('\n')
		st.Bytes += int64(len(frag))
		if len(frag) > 0 {
			last = frag[len(frag)-1]
		}
		switch {
		case err == bufio.ErrBufferFull:
			acc = append(acc, frag...)
			for len(acc) >= MaxLine {
				process(acc[:MaxLine], start)
				start += MaxLine
				acc = append(acc[:0], acc[MaxLine:]...)
			}
			continue
		case len(acc) > 0:
			acc = append(acc, frag...)
			process(acc, start)
			start += int64(len(acc))
			acc = acc[:0]
		case len(frag) > 0:
			process(frag, start)
			start += int64(len(frag))
		}
		if len(frag) > 0 && last == '\n' {
			st.Lines++
			line++
		}
		if err == io.EOF {
			if st.Bytes > 0 && last != '\n' {
				st.Lines++ // a last line without a newline still counts
			}
			return st, nil
		}
		if err != nil {
			return st, err
		}
	}
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
		return string(bytes.ToValidUTF8(text, []byte("\uFFFD")))
	}
	lo := max(0, from-MaxEvidence/4)
	hi := min(len(text), lo+MaxEvidence)
	if hi-lo < MaxEvidence {
		lo = max(0, hi-MaxEvidence)
	}
	out := bytes.ToValidUTF8(text[lo:hi], []byte("\uFFFD"))
	s := string(out)
	if lo > 0 {
		s = "…" + s
	}
	if hi < len(text) {
		s += "…"
	}
	return s
}
