package scan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"
	"sync"
)

// litSet finds every occurrence of many literals in a buffer in one pass.
//
// Folded literals (the knowledge base's, lower-cased by package literal,
// and the long gate literals) are found by sampling: every stride-th
// position of the buffer, the gram of g bytes there (3 or 4, ASCII letters
// folded by OR-ing 0x20) is looked up in a bitmap of the grams the literals
// hold. Each literal registers the stride grams that start at one window of
// consecutive offsets, so whatever its position, exactly one of them falls
// on a sampled position; a set bit is then confirmed against the literals
// that registered that gram. The stride is the shortest literal's length
// minus g plus one (at most 5): long literals let the search skip.
//
// Exact literals (a gate's short, case-sensitive ones) are found with
// bytes.IndexByte on their rarest byte.
//
// Every occurrence is reported once; the order is by position within each
// kind, not across kinds.
type litSet struct {
	lits   []string // folded literals, lower-cased A-Z
	g      int      // gram length: 4, or 3 when a folded literal is that short
	stride int
	shift  uint // hash: (gram*hashMul)>>shift indexes bits
	bits   []uint64
	grams  map[uint32][]gramRef

	exact []exactLit
}

type gramRef struct {
	lit int32 // index into lits
	off int32 // offset of the gram in the literal
}

type exactLit struct {
	s    string
	rare int // index of the byte searched for
	id   int32
}

const hashMul = 0x9E3779B1

// foldMask sets bit 5 of each byte: A-Z become a-z, and a text and a
// literal that are equal under ASCII lower-casing stay equal.
const foldMask = 0x20202020

// newLitSet compiles the literals. folded are matched ignoring ASCII case
// and must be lower-cased, at least 3 bytes; exact are matched as they are
// (any length of at least 1). Ids are positions: folded first, then exact.
func newLitSet(folded, exact []string) *litSet {
	ls := &litSet{lits: folded, g: 4, stride: 5}
	for _, l := range folded {
		if len(l) < 3 {
			panic("scan: folded literal shorter than 3 bytes: " + l)
		}
		if len(l) < 4 {
			ls.g = 3
		}
	}
	for _, l := range folded {
		ls.stride = min(ls.stride, len(l)-ls.g+1)
	}
	type gram struct {
		v   uint32
		ref gramRef
	}
	var all []gram
	for i, l := range folded {
		k := bestWindow(l, ls.g, ls.stride)
		for off := k; off < k+ls.stride; off++ {
			all = append(all, gram{ls.gramOf([]byte(l[off:])), gramRef{int32(i), int32(off)}})
		}
	}
	// About 32 bits per gram: one set bit in 32 on a miss.
	logBits := max(12, min(20, bits.Len(uint(len(all)*128))))
	ls.shift = uint(32 - logBits)
	ls.bits = make([]uint64, (1<<logBits)/64)
	ls.grams = make(map[uint32][]gramRef, len(all))
	for _, g := range all {
		h := (g.v * hashMul) >> ls.shift
		ls.bits[h>>6] |= 1 << (h & 63)
		if !slices.Contains(ls.grams[g.v], g.ref) {
			ls.grams[g.v] = append(ls.grams[g.v], g.ref)
		}
	}
	for j, l := range exact {
		if l == "" {
			panic("scan: empty exact literal")
		}
		ls.exact = append(ls.exact, exactLit{s: l, rare: rarest(l), id: int32(len(folded) + j)})
	}
	return ls
}

// gramOf is the folded gram at the start of b (len(b) >= g).
func (ls *litSet) gramOf(b []byte) uint32 {
	if ls.g == 4 {
		return binary.LittleEndian.Uint32(b) | foldMask
	}
	return (uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16) | foldMask&0xFFFFFF
}

// bestWindow picks where in l the stride grams are taken: the window
// whose grams are least likely in ordinary log text (commonGrams), then
// the one of the rarest bytes. A gram that ordinary text holds costs a
// confirmation at every occurrence.
func bestWindow(l string, g, stride int) int {
	best, bestScore := 0, -1
	for k := 0; k+stride+g-1 <= len(l); k++ {
		score := 0
		for off := k; off < k+stride; off++ {
			if commonGrams()[l[off:off+g]] { // l is lower-cased already
				score += 1000
			}
		}
		for _, c := range []byte(l[k : k+stride+g-1]) {
			score += byteCommon[c]
		}
		if bestScore < 0 || score < bestScore {
			best, bestScore = k, score
		}
	}
	return best
}

// commonText is what every training log is full of: English, paths,
// progress bars, NCCL and Python chatter. Its 3- and 4-grams are avoided
// where a literal has others.
const commonText = ` the and not for with this that from have will are was were been can
 which when while into only also more than then there their other such use used using
 is it in on of to as at by be or an if no all any new one two may must should would could
 error warning warn info debug fatal failed failure exception traceback most recent call last
 file line module self return forward backward call wrapped inner outer impl
 /usr/lib/python3/site-packages/ /usr/local/lib/python3.10/dist-packages/ /home/user/
 torch/nn/modules/module.py torch/distributed/ torch/cuda/ numpy array tensor tensors
 python package packages version available writable readable support supported
 epoch step steps loss lr iter it/s s/it eta time memory allocated reserved cached
 node rank local_rank world size process group thread read write open close load save
 nccl info channel via p2p ipc cumem ring tree init comm transport net socket ib
 cuda device gpu cpu kernel stream event launch driver runtime library
 checkpoint model weights config dataset batch train training eval validation
 0123456789 00:00 [00:00<00:00, 1.00it/s] 100% ===== ----- ..... `

// commonGrams is built on first use: only compiling a scanner needs it,
// not every gpudx command.
var commonGrams = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for g := 3; g <= 4; g++ {
		for i := 0; i+g <= len(commonText); i++ {
			if !strings.ContainsAny(commonText[i:i+g], "\n") {
				m[commonText[i:i+g]] = true
			}
		}
	}
	return m
})

// rarest is the index of the byte of s least common in logs.
func rarest(s string) int {
	best := 0
	for i := 1; i < len(s); i++ {
		if byteCommon[s[i]] < byteCommon[s[best]] {
			best = i
		}
	}
	return best
}

// byteCommon ranks bytes by how common they are in training logs (higher
// is more common): a static guess, used only to pick what to search for.
var byteCommon = func() (t [256]int) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = 2
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = 4
	}
	for _, c := range "etaoinsrlcdu" {
		t[c] = 7
	}
	for _, c := range "EINORST" {
		t[c] = 4
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = 6
	}
	for _, c := range " .:/_-=,[]()'\"" {
		t[c] = 8
	}
	t[' '] = 10
	for _, c := range "qxzjkvwy" {
		t[c] = 2
	}
	return t
}()

// find calls fn for every occurrence of every literal in b with its start
// and the literal's id.
func (ls *litSet) find(b []byte, fn func(pos int, id int32)) {
	if len(ls.lits) > 0 {
		if ls.g == 4 {
			ls.find4(b, fn)
		} else {
			ls.find3(b, fn)
		}
	}
	for _, e := range ls.exact {
		for from := 0; from+len(e.s) <= len(b); {
			i := bytes.IndexByte(b[from+e.rare:len(b)-len(e.s)+e.rare+1], e.s[e.rare])
			if i < 0 {
				break
			}
			start := from + i
			if string(b[start:start+len(e.s)]) == e.s {
				fn(start, e.id)
			}
			from = start + 1
		}
	}
}

func (ls *litSet) find4(b []byte, fn func(int, int32)) {
	bm, shift, stride := ls.bits, ls.shift, ls.stride
	i := 0
	// Two samples per round, one branch for both: most rounds miss.
	for ; i+stride+4 <= len(b); i += 2 * stride {
		w0 := binary.LittleEndian.Uint32(b[i:]) | foldMask
		w1 := binary.LittleEndian.Uint32(b[i+stride:]) | foldMask
		h0 := (w0 * hashMul) >> shift
		h1 := (w1 * hashMul) >> shift
		if (bm[h0>>6]>>(h0&63)|bm[h1>>6]>>(h1&63))&1 == 0 {
			continue
		}
		if bm[h0>>6]&(1<<(h0&63)) != 0 {
			ls.confirm(b, i, w0, fn)
		}
		if bm[h1>>6]&(1<<(h1&63)) != 0 {
			ls.confirm(b, i+stride, w1, fn)
		}
	}
	for ; i+4 <= len(b); i += stride {
		w := binary.LittleEndian.Uint32(b[i:]) | foldMask
		h := (w * hashMul) >> shift
		if bm[h>>6]&(1<<(h&63)) != 0 {
			ls.confirm(b, i, w, fn)
		}
	}
}

func (ls *litSet) find3(b []byte, fn func(int, int32)) {
	bm, shift, stride := ls.bits, ls.shift, ls.stride
	i := 0
	for ; i+4 <= len(b); i += stride {
		w := (binary.LittleEndian.Uint32(b[i:]) | foldMask) & 0xFFFFFF
		h := (w * hashMul) >> shift
		if bm[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		ls.confirm(b, i, w, fn)
	}
	for ; i+3 <= len(b); i += stride {
		w := ls.gramOf(b[i:])
		h := (w * hashMul) >> shift
		if bm[h>>6]&(1<<(h&63)) != 0 {
			ls.confirm(b, i, w, fn)
		}
	}
}

// confirm checks the literals that registered gram w against b around i.
func (ls *litSet) confirm(b []byte, i int, w uint32, fn func(int, int32)) {
	for _, r := range ls.grams[w] {
		start := i - int(r.off)
		l := ls.lits[r.lit]
		if start < 0 || start+len(l) > len(b) {
			continue
		}
		if equalLower(b[start:start+len(l)], l) {
			fn(start, r.lit)
		}
	}
}

// equalLower reports whether b lower-cased (A-Z only) equals l.
func equalLower(b []byte, l string) bool {
	for j := 0; j < len(l); j++ {
		c := b[j]
		if c-'A' < 26 {
			c += 'a' - 'A'
		}
		if c != l[j] {
			return false
		}
	}
	return true
}
