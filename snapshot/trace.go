package snapshot

import "iter"

// chunkBits sets the trace chunk size: 1<<16 entries, 2 MiB per chunk.
const chunkBits = 16

// Trace is one device's events, oldest first. Events live in fixed-size
// chunks so that tens of millions of them never need one huge allocation or
// a doubling copy.
type Trace struct {
	chunks [][]TraceEntry
	off    int // index of the first event in chunks
	n      int
	// shared is set on the decoder's traces, which are views into one
	// arena holding every device's events; Append copies such a trace first.
	shared bool
}

// Len is the number of events.
func (t *Trace) Len() int { return t.n }

// At returns the i-th event. It panics when i is out of range, like a slice.
func (t *Trace) At(i int) *TraceEntry {
	if uint(i) >= uint(t.n) {
		panic("snapshot: trace index out of range")
	}
	g := t.off + i
	return &t.chunks[g>>chunkBits][g&(1<<chunkBits-1)]
}

// All yields every event with its index, oldest first.
func (t *Trace) All() iter.Seq2[int, *TraceEntry] {
	return func(yield func(int, *TraceEntry) bool) {
		for i := 0; i < t.n; i++ {
			if !yield(i, t.At(i)) {
				return
			}
		}
	}
}

// Append adds an event at the end (for programs that build traces).
func (t *Trace) Append(e TraceEntry) {
	if t.shared {
		own := Trace{}
		for _, x := range t.All() {
			own.Append(*x)
		}
		*t = own
	}
	g := t.off + t.n
	c := g >> chunkBits
	if c == len(t.chunks) {
		t.chunks = append(t.chunks, make([]TraceEntry, 0, 1<<chunkBits))
	}
	t.chunks[c] = append(t.chunks[c], e)
	t.n++
}

// TraceOf builds a trace from a slice (for tests and small programs).
func TraceOf(es ...TraceEntry) Trace {
	var t Trace
	for _, e := range es {
		t.Append(e)
	}
	return t
}
