package scan_test

import (
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/scan"
)

// A Scanner is built once from entries and reads any number of logs,
// calling back for each line an entry's regex matches.
func Example() {
	s, err := scan.New([]*kb.Entry{
		{ID: "cuda/illegal-address", Regex: `CUDA error: an illegal memory access was encountered`},
		{ID: "nccl/watchdog-timeout", Regex: `Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+)`},
	})
	if err != nil {
		log.Fatal(err)
	}
	text := `step 1200 loss 2.31
RuntimeError: CUDA error: an illegal memory access was encountered
[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE)
`
	st, err := s.Scan(strings.NewReader(text), func(h scan.Hit) {
		fmt.Printf("line %d: %s %v\n", h.Line, h.ID, h.Captures)
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d lines, %d bytes\n", st.Lines, st.Bytes)
	// Output:
	// line 2: cuda/illegal-address map[]
	// line 3: nccl/watchdog-timeout map[seq:42]
	// 3 lines, 209 bytes
}

// An entry whose regex is not valid RE2 is left out; New reports it in a
// kb.ErrorList and the Scanner works with the rest.
func ExampleNew() {
	s, err := scan.New([]*kb.Entry{
		{ID: "demo/lookbehind", Origin: "demo.json", Regex: `(?<!no )error`},
		{ID: "demo/plain", Regex: `error`},
	})
	var list kb.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Println("skipped:", e)
		}
	}
	fmt.Println(len(s.Entries()), "entry usable")
	// Output:
	// skipped: demo/lookbehind (demo.json): regex skipped: error parsing regexp: invalid named capture: `(?<!no )error`
	// 1 entry usable
}
