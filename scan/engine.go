package scan

import (
	"bytes"
	"io"
	"runtime"
	"slices"
	"sync"
)

// Gate says which lines a Visitor is shown besides the lines with hits.
type Gate struct {
	// Literals: a line holding one of these (case-sensitive) is shown.
	// Literals of 6 bytes or more are searched ignoring ASCII case, so a
	// few more lines may be shown; shorter ones are slower to search.
	Literals []string
	// Start, if not nil, shows a line for which it returns true. It is
	// called on every line that nothing else selects, from several
	// goroutines at once, so it must be cheap (a look at the first bytes)
	// and safe for concurrent use.
	Start func(line []byte) bool
	// All shows every line.
	All bool
}

// A Visitor receives what a scan finds, in input order, on one goroutine.
type Visitor interface {
	// Line shows a line (its number and cleaned text, valid until Line
	// returns, or until Hit returns for its hits): every line the Gate
	// selects, every line with hits before its hits, and the line after
	// one for which Line returned true (a block being read).
	Line(n int, text []byte) (next bool)
	// Hit reports one hit of the line last shown.
	Hit(h Hit)
}

// A MultiVisitor is a Visitor told where each input begins and ends.
type MultiVisitor interface {
	Visitor
	// Begin starts input i; the lines and hits that follow are its own.
	Begin(i int)
	// End closes input i with what was read of it and the first read
	// error. An input that could not be opened has Begin not called and
	// err an *OpenError.
	End(i int, st Stats, err error)
}

// Input is one stream of a multi-input scan. Open is called on the reading
// goroutine, in input order, when the scan reaches the input.
type Input struct {
	Name string
	Open func() (io.ReadCloser, error)
}

// OpenError is an input that Open could not open.
type OpenError struct {
	Name string
	Err  error
}

func (e *OpenError) Error() string { return e.Err.Error() }
func (e *OpenError) Unwrap() error { return e.Err }

// DefaultChunk is how many bytes a worker scans at once.
const DefaultChunk = 1 << 20

// MaxWorkers bounds the goroutines a scan uses, and so its memory: a scan
// holds at most 2*workers+4 chunk buffers of DefaultChunk bytes (about
// 36 MiB with 16 workers), whatever the size of its input.
const MaxWorkers = 16

// foldLen is the length from which a gate literal is searched ignoring
// case: long literals let the search skip (see litSet).
const foldLen = 6

// A Plan is a Scanner with a Gate, compiled once and safe for concurrent
// use. It reads its input in chunks of whole lines that several goroutines
// scan at once; the Visitor still sees everything in input order.
type Plan struct {
	s      *Scanner
	set    *litSet
	owners [][]int32 // per literal id: entries requiring it
	gate   []bool    // per literal id: a gate literal
	start  func([]byte) bool
	all    bool
	every  bool // every line must be matched: all, or unfiltered entries

	workers int
	chunk   int
	maxLine int
}

// Plan compiles the scanner with a gate.
func (s *Scanner) Plan(g Gate) *Plan {
	p := &Plan{s: s, start: g.Start, all: g.All, every: g.All || len(s.always) > 0,
		workers: min(runtime.GOMAXPROCS(0), MaxWorkers), chunk: DefaultChunk, maxLine: MaxLine}
	folded := slices.Clone(s.lits)
	p.owners = slices.Clone(s.owners)
	p.gate = make([]bool, len(folded))
	index := map[string]int{}
	for i, l := range folded {
		index[l] = i
	}
	var exact []string
	exactSeen := map[string]bool{}
	for _, l := range g.Literals {
		switch {
		case l == "":
			p.all, p.every = true, true // every line holds ""
		case len(l) >= foldLen:
			low := lowerString(l)
			i, ok := index[low]
			if !ok {
				i = len(folded)
				index[low] = i
				folded = append(folded, low)
				p.owners = append(p.owners, nil)
				p.gate = append(p.gate, false)
			}
			p.gate[i] = true
		case !exactSeen[l]:
			exactSeen[l] = true
			exact = append(exact, l)
		}
	}
	for range exact {
		p.owners = append(p.owners, nil)
		p.gate = append(p.gate, true)
	}
	p.set = newLitSet(folded, exact)
	return p
}

func lowerString(s string) string {
	return string(lowerASCII(nil, []byte(s)))
}

// Visit scans r and shows v its lines and hits.
func (p *Plan) Visit(r io.Reader, v Visitor) (Stats, error) {
	var st Stats
	var rerr error
	p.VisitAll([]Input{{Open: func() (io.ReadCloser, error) { return io.NopCloser(r), nil }}},
		single{v, &st, &rerr})
	return st, rerr
}

type single struct {
	Visitor
	st  *Stats
	err *error
}

func (s single) Begin(int) {}
func (s single) End(_ int, st Stats, err error) {
	*s.st, *s.err = st, err
}

// item is one step of a multi-input scan, in input order.
type item struct {
	kind  int // itemBegin, itemChunk, itemEnd
	input int
	c     *chunk
	done  chan *result
	bytes int64
	last  byte
	err   error
}

const (
	itemBegin = iota
	itemChunk
	itemEnd
)

// chunk is a run of whole lines of one input, or of pieces of one long
// line (partial: the line goes on in the next chunk; cont: it began in an
// earlier one).
type chunk struct {
	buf     []byte
	off     int64
	cont    bool
	partial bool
}

// result is what a worker found in a chunk: the lines to show, in order.
type result struct {
	recs  []record
	arena []byte // cleaned text of lines that held escape codes
	lines int    // newlines in the chunk
}

// record is one line (or piece of a long line) to show.
type record struct {
	at       int  // where its segment starts in the chunk
	rel      int  // line index within the chunk
	from, to int  // the cleaned text: in the chunk, or in the arena
	inArena  bool // the text is in the arena
	next     int  // where the next segment starts
	nextRel  int  // and its line index
	hits     []Hit
}

// VisitAll scans the inputs in order, several chunks at once, and shows
// v everything in input order.
func (p *Plan) VisitAll(inputs []Input, v MultiVisitor) {
	inflight := 2*p.workers + 2
	order := make(chan item, inflight)
	work := make(chan item, inflight)
	bufSize := max(p.chunk, p.maxLine+2)
	free := make(chan []byte, inflight+2)
	for range inflight + 2 {
		free <- nil // allocated on first use
	}
	get := func() []byte {
		b := <-free
		if b == nil {
			b = make([]byte, 0, bufSize)
		}
		return b[:0]
	}
	// put returns a buffer no chunk took; free always has room for it.
	put := func(b []byte) { free <- b }
	go func() {
		defer close(order)
		defer close(work)
		for i, in := range inputs {
			rc, err := in.Open()
			if err != nil {
				order <- item{kind: itemEnd, input: i, err: &OpenError{in.Name, err}}
				continue
			}
			order <- item{kind: itemBegin, input: i}
			n, last, err := p.read(rc, get, put, func(c *chunk) {
				done := make(chan *result, 1)
				order <- item{kind: itemChunk, input: i, c: c, done: done}
				work <- item{c: c, done: done}
			})
			rc.Close()
			order <- item{kind: itemEnd, input: i, bytes: n, last: last, err: err}
		}
	}()
	var wg sync.WaitGroup
	for range p.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := p.newWorker()
			for it := range work {
				it.done <- w.run(it.c)
			}
		}()
	}
	m := merger{p: p, v: v}
	newlines := 0
	for it := range order {
		switch it.kind {
		case itemBegin:
			m.reset()
			newlines = 0
			v.Begin(it.input)
		case itemChunk:
			res := <-it.done
			m.merge(it.c, res)
			newlines += res.lines
			free <- it.c.buf
		case itemEnd:
			st := Stats{Bytes: it.bytes, Lines: newlines}
			if it.bytes > 0 && it.last != '\n' {
				st.Lines++ // a last line without a newline still counts
			}
			if it.err == io.EOF {
				it.err = nil
			}
			if _, ok := it.err.(*OpenError); ok {
				st = Stats{}
			}
			v.End(it.input, st, it.err)
		}
	}
	wg.Wait()
}

// read cuts r into chunks: whole lines, or, for a line longer than a
// buffer, pieces of maxLine bytes. It returns the bytes read, the last of
// them, and the first error other than io.EOF.
func (p *Plan) read(r io.Reader, get func() []byte, put func([]byte), emit func(*chunk)) (int64, byte, error) {
	var n int64
	var last byte
	buf := get()
	var off int64
	cont := false
	for {
		var err error
		for len(buf) < cap(buf) && err == nil {
			var m int
			m, err = r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+m]
			n += int64(m)
			if m > 0 {
				last = buf[len(buf)-1]
			}
		}
		if err != nil {
			if len(buf) > 0 {
				emit(&chunk{buf: buf, off: off, cont: cont})
			} else {
				put(buf)
			}
			if err == io.EOF {
				err = nil
			}
			return n, last, err
		}
		cut, partial := bytes.LastIndexByte(buf, '\n')+1, false
		if cut == 0 {
			// No line ends in a full buffer: emit whole pieces, and keep
			// two bytes so that the line is known to go on past them
			// (a piece never ends in the line's trailing '\r').
			cut, partial = (len(buf)-2)/p.maxLine*p.maxLine, true
		}
		next := get()
		next = append(next, buf[cut:]...)
		emit(&chunk{buf: buf[:cut], off: off, cont: cont, partial: partial})
		off += int64(cut)
		cont = partial
		buf = next
	}
}

// segment is one line of a chunk, or one piece of a long line.
type segment struct {
	from, to int // its text: no '\n', no trailing '\r'
	rel      int // line index within the chunk
	next     int // where the next segment starts
	nextRel  int // and its line index
}

// lines walks the segments of a chunk from a position.
type lines struct {
	buf     []byte
	pos     int
	rel     int
	partial bool
	maxLine int
}

func (it *lines) next() (segment, bool) {
	if it.pos >= len(it.buf) {
		return segment{}, false
	}
	from := it.pos
	end, after, ends := len(it.buf), len(it.buf), !it.partial
	if i := bytes.IndexByte(it.buf[from:], '\n'); i >= 0 {
		end, after, ends = from+i, from+i+1, true
	}
	to := end
	if ends && to > from && it.buf[to-1] == '\r' {
		to--
	}
	seg := segment{from: from, rel: it.rel}
	if !ends || to-from > it.maxLine {
		seg.to, seg.next = min(from+it.maxLine, len(it.buf)), min(from+it.maxLine, len(it.buf))
	} else {
		seg.to, seg.next = to, after
		if after > end {
			it.rel++
		}
	}
	it.pos, seg.nextRel = seg.next, it.rel
	return seg, true
}

// worker scans chunks with its own scratch space.
type worker struct {
	p     *Plan
	cands []int
	clean []byte
	seen  []uint32
	gen   uint32
	ents  []int32
}

func (p *Plan) newWorker() *worker {
	return &worker{p: p, seen: make([]uint32, len(p.s.res))}
}

func (w *worker) run(c *chunk) *result {
	p := w.p
	res := &result{}
	buf := c.buf
	w.cands = w.cands[:0]
	if !p.every {
		p.set.find(buf, func(pos int, _ int32) { w.cands = append(w.cands, pos) })
		if !slices.IsSorted(w.cands) {
			slices.Sort(w.cands)
		}
	}
	esc := bytes.IndexByte(buf, 0x1b)
	if esc < 0 {
		esc = len(buf)
	}
	ci := 0
	it := lines{buf: buf, partial: c.partial, maxLine: p.maxLine}
	for {
		seg, ok := it.next()
		if !ok {
			break
		}
		sel := p.every
		if !sel {
			for ci < len(w.cands) && w.cands[ci] < seg.from {
				ci++
			}
			sel = ci < len(w.cands) && w.cands[ci] < seg.next
		}
		if !sel && esc < seg.next {
			for esc < seg.from {
				if i := bytes.IndexByte(buf[esc+1:], 0x1b); i >= 0 {
					esc += 1 + i
				} else {
					esc = len(buf)
				}
			}
			sel = esc < seg.to
		}
		if !sel && p.start != nil {
			sel = p.start(buf[seg.from:seg.to])
		}
		if sel {
			w.line(res, buf, seg)
		}
	}
	res.lines = it.rel // the newlines passed
	return res
}

// line matches one selected segment and keeps it if it is to be shown.
func (w *worker) line(res *result, buf []byte, seg segment) {
	p := w.p
	raw := buf[seg.from:seg.to]
	text := raw
	rec := record{at: seg.from, rel: seg.rel, from: seg.from, to: seg.to, next: seg.next, nextRel: seg.nextRel}
	stripped := bytes.IndexByte(raw, 0x1b) >= 0
	if stripped {
		w.clean = stripANSI(w.clean[:0], raw)
		text = w.clean
		rec.from = len(res.arena)
		res.arena = append(res.arena, text...)
		rec.to, rec.inArena = len(res.arena), true
	}
	shown := p.all || (p.start != nil && p.start(text))
	gated := w.match(text, func(i int, loc []int) {
		h := Hit{Entry: i, ID: p.s.entries[i].ID, Line: seg.rel, Len: loc[1] - loc[0]}
		at := loc[0]
		if stripped {
			at = rawOffset(raw, at)
		}
		h.Offset = int64(seg.from + at)
		h.Text = evidence(text, loc[0], loc[1])
		names := p.s.names[i]
		for g := 1; g < len(names); g++ {
			if names[g] != "" && loc[2*g] >= 0 {
				if h.Captures == nil {
					h.Captures = map[string]string{}
				}
				h.Captures[names[g]] = string(text[loc[2*g]:loc[2*g+1]])
			}
		}
		rec.hits = append(rec.hits, h)
	})
	if shown || gated || len(rec.hits) > 0 {
		res.recs = append(res.recs, rec)
	}
}

// match runs the regexes of the entries whose literals text holds (and
// the unfiltered ones), in entry order, and says whether text holds a
// gate literal.
func (w *worker) match(text []byte, emit func(int, []int)) (gated bool) {
	p := w.p
	w.gen++
	if w.gen == 0 { // wrapped: forget every old mark
		clear(w.seen)
		w.gen = 1
	}
	w.ents = append(w.ents[:0], p.s.always...)
	p.set.find(text, func(_ int, id int32) {
		if p.gate[id] {
			gated = true
		}
		for _, e := range p.owners[id] {
			if w.seen[e] != w.gen {
				w.seen[e] = w.gen
				w.ents = append(w.ents, e)
			}
		}
	})
	if len(w.ents) > len(p.s.always) {
		slices.Sort(w.ents)
	}
	for _, i := range w.ents {
		if loc := p.s.res[i].FindSubmatchIndex(text); loc != nil {
			emit(int(i), loc)
		}
	}
	return gated
}

// merger shows a Visitor the records of the chunks of one input in order,
// and the lines after one for which Line asked for the next.
type merger struct {
	p      *Plan
	v      Visitor
	base   int  // line number of the current chunk's first line
	follow bool // Line asked for the next line
	clean  []byte
}

func (m *merger) reset() { m.base, m.follow = 1, false }

func (m *merger) merge(c *chunk, res *result) {
	it := lines{buf: c.buf, partial: c.partial, maxLine: m.p.maxLine}
	for _, rec := range res.recs {
		if m.follow {
			m.walk(&it, rec.at)
		}
		text := c.buf[rec.from:rec.to]
		if rec.inArena {
			text = res.arena[rec.from:rec.to]
		}
		n := m.base + rec.rel
		m.follow = m.v.Line(n, text)
		for _, h := range rec.hits {
			h.Line = n
			h.Offset += c.off
			m.v.Hit(h)
		}
		it.pos, it.rel = rec.next, rec.nextRel
	}
	if m.follow {
		m.walk(&it, len(c.buf))
	}
	m.base += res.lines
}

// walk shows the segments from it's position on while Line asks for the
// next one, up to the chunk position stop (where a record takes over).
func (m *merger) walk(it *lines, stop int) {
	for m.follow && it.pos < stop {
		seg, ok := it.next()
		if !ok {
			return
		}
		text := it.buf[seg.from:seg.to]
		if bytes.IndexByte(text, 0x1b) >= 0 {
			m.clean = stripANSI(m.clean[:0], text)
			text = m.clean
		}
		m.follow = m.v.Line(m.base+seg.rel, text)
	}
}
