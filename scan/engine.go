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

// A HitsVisitor is a Visitor that needs less of repeated hits, so that a
// log that repeats a known line a million times is read at the cost of
// counting its hits, not of reading each line in full again.
type HitsVisitor interface {
	Visitor
	// HitsLine replaces Line for a line that the Gate does not select (no
	// gate literal, Start false, not All) and that does not follow a Line
	// that returned true: a line that only its hits bring.
	HitsLine(n int, text []byte) (next bool)
	// Settled reports that the visitor keeps nothing more of the captures
	// of entry's hits: later hits of it may come without Captures. It is
	// called from the scan's workers while the visitor is shown earlier
	// lines, so it must be safe for concurrent use, and once true stay so.
	Settled(entry int) bool
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
	// Per folded literal id: the gate literals that fold to it, as
	// written. The ids past them are the exact literals.
	gateCase [][]string
	start    func([]byte) bool
	all      bool
	every    bool     // every line must be matched: all, or unfiltered entries
	memo     []memoRe // per entry: how lines are remembered by shape (repeat.go)
	litLen   []int    // per literal id: its length

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
	p.gateCase = make([][]string, len(folded))
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
				p.gateCase = append(p.gateCase, nil)
			}
			p.gate[i] = true
			p.gateCase[i] = append(p.gateCase[i], l)
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
	for _, l := range folded {
		p.litLen = append(p.litLen, len(l))
	}
	for _, l := range exact {
		p.litLen = append(p.litLen, len(l))
	}
	p.memo = make([]memoRe, len(s.res))
	return p
}

func lowerString(s string) string {
	return string(lowerASCII(nil, []byte(s)))
}

// Visit scans r and shows v its lines and hits.
func (p *Plan) Visit(r io.Reader, v Visitor) (Stats, error) {
	var st Stats
	var rerr error
	var mv MultiVisitor = single{v, &st, &rerr}
	if hv, ok := v.(HitsVisitor); ok {
		mv = singleHits{single{v, &st, &rerr}, hv}
	}
	p.VisitAll([]Input{{Open: func() (io.ReadCloser, error) { return io.NopCloser(r), nil }}}, mv)
	return st, rerr
}

// singleHits is single for a HitsVisitor.
type singleHits struct {
	single
	hv HitsVisitor
}

func (s singleHits) HitsLine(n int, text []byte) bool { return s.hv.HitsLine(n, text) }
func (s singleHits) Settled(entry int) bool           { return s.hv.Settled(entry) }

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
	byGate   bool // the Gate selects it (else only its hits bring it)
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
	hv, _ := v.(HitsVisitor)
	var wg sync.WaitGroup
	for range p.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := p.newWorker()
			w.hv = hv
			for it := range work {
				it.done <- w.run(it.c)
			}
		}()
	}
	m := merger{p: p, v: v, hv: hv}
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
	cands []uint64 // the literals found in the chunk, by position (packLit)
	found []litPos // those of the line being matched, from its start
	clean []byte
	seen  []uint32
	gen   uint32
	ents  []int32

	hv        HitsVisitor       // the visitor, where it is one
	memo      map[string]*shape // line shapes seen, see repeat.go
	memoBytes int
	key       []byte
}

func (p *Plan) newWorker() *worker {
	return &worker{p: p, seen: make([]uint32, len(p.s.res)), memo: map[string]*shape{}}
}

func (w *worker) run(c *chunk) *result {
	p := w.p
	res := &result{}
	buf := c.buf
	w.cands = w.cands[:0]
	if !p.every {
		p.set.find(buf, func(pos int, id int32) { w.cands = append(w.cands, packLit(pos, id)) })
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
			for ci < len(w.cands) && litAt(w.cands[ci]) < seg.from {
				ci++
			}
			sel = ci < len(w.cands) && litAt(w.cands[ci]) < seg.next
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
			var lits []uint64 // where the chunk's search was done: this line's
			if !p.every {
				cj := ci
				for cj < len(w.cands) && litAt(w.cands[cj]) < seg.next {
					cj++
				}
				lits = w.cands[ci:cj:cj]
			}
			w.line(res, buf, seg, lits, !p.every)
		}
	}
	res.lines = it.rel // the newlines passed
	return res
}

// line matches one selected segment and keeps it if it is to be shown.
// Where searched is true, lits are the literals the chunk's search found
// starting in the segment.
func (w *worker) line(res *result, buf []byte, seg segment, lits []uint64, searched bool) {
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
	w.found = w.found[:0]
	if stripped || !searched {
		p.set.find(text, func(pos int, id int32) { w.found = append(w.found, litPos{pos, id}) })
	} else {
		// The chunk's search also found what runs past the segment's end.
		for _, l := range lits {
			at, id := litAt(l), litID(l)
			if at+p.litLen[id] <= seg.to {
				w.found = append(w.found, litPos{at - seg.from, id})
			}
		}
	}
	gated, exactly := w.match(text, w.found, func(i int, loc []int) {
		if not := p.s.nots[i]; not != nil && not.Match(text) {
			return // a harmless line that holds the error's text
		}
		h := Hit{Entry: i, ID: p.s.entries[i].ID, Line: seg.rel, Len: loc[1] - loc[0]}
		at := loc[0]
		if stripped {
			at = rawOffset(raw, at)
		}
		h.Offset = int64(seg.from + at)
		h.Text = evidence(text, loc[0], loc[1])
		names := p.s.names[i]
		if len(names) > 1 && w.hv != nil && w.hv.Settled(i) {
			names = nil
		}
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
		// A line with hits that holds a gate literal only in another case
		// is not one the Gate selects.
		rec.byGate = shown || exactly || (gated && len(rec.hits) == 0)
		res.recs = append(res.recs, rec)
	}
}

// litPos is where a literal was found, and its id.
type litPos struct {
	pos int
	id  int32
}

// packLit packs a literal's chunk position and id in one number that sorts
// by position: a chunk is well under 4 GiB.
func packLit(pos int, id int32) uint64 { return uint64(pos)<<32 | uint64(uint32(id)) }
func litAt(l uint64) int               { return int(l >> 32) }
func litID(l uint64) int32             { return int32(uint32(l)) }

// match runs the regexes of the entries whose literals text holds (lits,
// every literal found in text) and the unfiltered ones, in entry order.
// It says whether text holds a gate literal ignoring case (gated) and as
// written (exactly).
func (w *worker) match(text []byte, lits []litPos, emit func(int, []int)) (gated, exactly bool) {
	p := w.p
	w.gen++
	if w.gen == 0 { // wrapped: forget every old mark
		clear(w.seen)
		w.gen = 1
	}
	w.ents = append(w.ents[:0], p.s.always...)
	for _, l := range lits {
		if p.gate[l.id] {
			gated = true
			exactly = exactly || p.holdsGate(text, l)
		}
		for _, e := range p.owners[l.id] {
			if w.seen[e] != w.gen {
				w.seen[e] = w.gen
				w.ents = append(w.ents, e)
			}
		}
	}
	if len(w.ents) > len(p.s.always) {
		slices.Sort(w.ents)
	}
	var sh *shape
	if len(w.ents) > 0 && len(text) <= memoLine {
		sh = w.shape(text)
	}
	for _, i := range w.ents {
		if loc := w.find(sh, i, text); loc != nil {
			emit(int(i), loc)
		}
	}
	if sh != nil {
		sh.repeat = true
	}
	return gated, exactly
}

// holdsGate reports whether the gate literal found at l is there as the
// Gate wrote it: the folded ones are found ignoring case.
func (p *Plan) holdsGate(text []byte, l litPos) bool {
	if int(l.id) >= len(p.gateCase) {
		return true // an exact literal: found as written
	}
	for _, g := range p.gateCase[l.id] {
		if l.pos+len(g) <= len(text) && string(text[l.pos:l.pos+len(g)]) == g {
			return true
		}
	}
	return false
}

// find runs entry i's regex on text, or answers from what is remembered
// of text's shape sh (nil: nothing).
func (w *worker) find(sh *shape, i int32, text []byte) []int {
	re := w.p.s.res[i]
	if sh == nil {
		return re.FindSubmatchIndex(text)
	}
	m := &w.p.memo[i]
	exact, ok := m.exact(re)
	if !ok {
		return re.FindSubmatchIndex(text)
	}
	mloc, seen := sh.lookup(i)
	switch {
	case seen && exact:
		return mloc
	case seen && mloc == nil:
		return nil // the relaxation does not match: neither does re
	case seen:
		return re.FindSubmatchIndex(text)
	case exact:
		mloc = re.FindSubmatchIndex(text)
		w.remember(sh, i, mloc)
		return mloc
	}
	// Not remembered, and re is not digit-blind.
	loc := re.FindSubmatchIndex(text)
	if loc != nil {
		w.remember(sh, i, loc) // the relaxation matches too; where, is not needed
	} else if sh.repeat {
		if rre := m.relaxation(re); rre != nil {
			w.remember(sh, i, rre.FindSubmatchIndex(text))
		}
	}
	return loc
}

func (w *worker) remember(sh *shape, i int32, loc []int) {
	sh.ents, sh.locs = append(sh.ents, i), append(sh.locs, loc)
	w.memoBytes += 8 * (len(loc) + 2)
}

// shape returns what the worker remembers of text's shape, a new record
// if nothing. The memory is bounded: past memoBudget bytes it starts over.
func (w *worker) shape(text []byte) *shape {
	w.key = shapeOf(w.key, text)
	if s, ok := w.memo[string(w.key)]; ok {
		return s
	}
	if w.memoBytes > memoBudget {
		clear(w.memo)
		w.memoBytes = 0
	}
	s := &shape{}
	w.memo[string(w.key)] = s
	w.memoBytes += len(w.key) + 64
	return s
}

// merger shows a Visitor the records of the chunks of one input in order,
// and the lines after one for which Line asked for the next.
type merger struct {
	p      *Plan
	v      Visitor
	hv     HitsVisitor // v, where it is one
	base   int         // line number of the current chunk's first line
	follow bool        // Line asked for the next line
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
		if m.hv != nil && !rec.byGate && !m.follow {
			m.follow = m.hv.HitsLine(n, text)
		} else {
			m.follow = m.v.Line(n, text)
		}
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
