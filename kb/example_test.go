package kb_test

import (
	"errors"
	"fmt"
	"testing/fstest"

	"github.com/gpudx/gpudx/kb"
)

// LoadFS loads every entry file of a tree; the files it cannot read come
// back in one kb.ErrorList, beside the entries that did load.
func ExampleLoadFS() {
	fsys := fstest.MapFS{
		"cuda/illegal-address.json": {Data: []byte(`{"id": "cuda/illegal-address",
			"regex": "an illegal memory access was encountered", "domain": "cuda"}`)},
		"cuda/broken.json": {Data: []byte(`{"id": `)},
		"README.md":        {Data: []byte("not an entry: only *.json files are read")},
	}
	entries, err := kb.LoadFS(fsys, ".", "knowledge/")
	for _, e := range entries {
		fmt.Println("loaded", e.ID, "from", e.Origin)
	}
	var list kb.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Println("error:", e)
		}
	}
	// Output:
	// loaded cuda/illegal-address from knowledge/cuda/illegal-address.json
	// error: knowledge/cuda/broken.json: not a JSON object: line 1: unexpected end of JSON input
}

// A Base holds entries by id; a later entry with the same id replaces the
// earlier one, as --kb directories override the built-in base.
func ExampleBase() {
	b := kb.NewBase()
	b.Add(&kb.Entry{ID: "cuda/illegal-address", Origin: "built-in"})
	old := b.Add(&kb.Entry{ID: "cuda/illegal-address", Origin: "mine/illegal-address.json"})
	fmt.Println(b.Len(), b.Get("cuda/illegal-address").Origin, "replaced", old.Origin)
	// Output:
	// 1 mine/illegal-address.json replaced built-in
}
