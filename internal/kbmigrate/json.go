// Package kbmigrate rewrites knowledge-base entry files in place when the
// entry format gains a field. It edits the file's text: a field is added
// after its neighbour with the neighbour's own spacing, so every byte it
// does not change stays as it was (key order, escapes, hand-made layouts),
// and a migration's diff holds only what it changed. Running a migration
// twice changes nothing the second time.
package kbmigrate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// node is a JSON value with where it sits in the file.
type node struct {
	kind       byte // '{', '[' or 0 for a leaf
	fields     []field
	elems      []*node
	start, end int // byte offsets of the value
}

type field struct {
	key      string // decoded
	pre      int    // offset just after the '{' or ',' before the key
	keyStart int
	val      *node
}

func (n *node) field(key string) (field, bool) {
	if n != nil {
		for _, f := range n.fields {
			if f.key == key {
				return f, true
			}
		}
	}
	return field{}, false
}

func (n *node) get(key string) *node {
	f, ok := n.field(key)
	if !ok {
		return nil
	}
	return f.val
}

// doc is a parsed file and the edits made to it.
type doc struct {
	b     []byte
	root  *node
	edits []edit
}

type edit struct {
	start, end int
	text       string
}

func (d *doc) str(n *node) string {
	var s string
	if n != nil && n.kind == 0 {
		_ = json.Unmarshal(d.b[n.start:n.end], &s)
	}
	return s
}

func quote(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only called with strings
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// insertAfter adds "key": value (value is JSON text) right after the
// field named after in obj, separated as that field is from what precedes
// it.
func (d *doc) insertAfter(obj *node, after, key, value string) {
	f, ok := obj.field(after)
	if !ok {
		return
	}
	sep := string(d.b[f.pre:f.keyStart])
	d.edits = append(d.edits, edit{f.val.end, f.val.end, "," + sep + quote(key) + ": " + value})
}

// replace puts "key": value (JSON text) in place of the field named old.
func (d *doc) replace(obj *node, old, key, value string) {
	f, ok := obj.field(old)
	if !ok {
		return
	}
	d.edits = append(d.edits, edit{f.keyStart, f.val.end, quote(key) + ": " + value})
}

// remove deletes the field named key with the comma that precedes it (the
// first field takes the comma after it instead).
func (d *doc) remove(obj *node, key string) {
	for i, f := range obj.fields {
		if f.key != key {
			continue
		}
		if i > 0 {
			prev := obj.fields[i-1].val.end
			d.edits = append(d.edits, edit{prev, f.val.end, ""})
		} else if len(obj.fields) > 1 {
			d.edits = append(d.edits, edit{f.keyStart, obj.fields[1].keyStart, ""})
		} else {
			d.edits = append(d.edits, edit{f.pre, obj.end - 1, ""})
		}
		return
	}
}

// bytes applies the edits.
func (d *doc) bytes() []byte {
	sort.SliceStable(d.edits, func(i, j int) bool { return d.edits[i].start < d.edits[j].start })
	var b bytes.Buffer
	at := 0
	for _, e := range d.edits {
		b.Write(d.b[at:e.start])
		b.WriteString(e.text)
		at = e.end
	}
	b.Write(d.b[at:])
	return b.Bytes()
}

// parse reads one JSON document.
func parse(data []byte) (*doc, error) {
	if !json.Valid(data) {
		return nil, fmt.Errorf("not valid JSON")
	}
	p := &parser{b: data}
	return &doc{b: data, root: p.value()}, nil
}

// parser walks JSON that json.Valid accepted.
type parser struct {
	b []byte
	i int
}

func (p *parser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *parser) value() *node {
	p.space()
	n := &node{start: p.i}
	switch p.b[p.i] {
	case '{':
		n.kind = '{'
		p.i++
		pre := p.i
		for {
			p.space()
			if p.b[p.i] == '}' {
				p.i++
				break
			}
			if p.b[p.i] == ',' {
				p.i++
				pre = p.i
				p.space()
			}
			f := field{pre: pre, keyStart: p.i}
			p.stringLit()
			_ = json.Unmarshal(p.b[f.keyStart:p.i], &f.key)
			p.space()
			p.i++ // ':'
			f.val = p.value()
			n.fields = append(n.fields, f)
		}
	case '[':
		n.kind = '['
		p.i++
		for {
			p.space()
			if p.b[p.i] == ']' {
				p.i++
				break
			}
			if p.b[p.i] == ',' {
				p.i++
			}
			n.elems = append(n.elems, p.value())
		}
	case '"':
		p.stringLit()
	default:
		for p.i < len(p.b) && !bytes.ContainsRune([]byte(" \t\r\n,]}"), rune(p.b[p.i])) {
			p.i++
		}
	}
	n.end = p.i
	return n
}

func (p *parser) stringLit() {
	p.i++ // opening quote
	for p.b[p.i] != '"' {
		if p.b[p.i] == '\\' {
			p.i++
		}
		p.i++
	}
	p.i++
}
