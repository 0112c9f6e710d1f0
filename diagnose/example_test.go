package diagnose_test

import (
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/scan"
)

// entries is a two-entry knowledge base: running out of memory leads to
// the watchdog timeout of the ranks that waited.
var entries = []*kb.Entry{
	{ID: "pytorch/cuda-out-of-memory", Regex: `torch\.OutOfMemoryError: CUDA out of memory`, RootCauseType: "specific",
		TransitionGraph: kb.TransitionGraph{LeadsTo: []string{"nccl/watchdog-timeout"}}},
	{ID: "nccl/watchdog-timeout", Regex: `Watchdog caught collective operation timeout`, RootCauseType: "generic"},
}

// Read diagnoses one log: the hits grouped per entry, the root cause
// first, each with why it stands there.
func ExampleRead() {
	s, err := scan.New(entries)
	if err != nil {
		log.Fatal(err)
	}
	text := `[rank0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7)
[rank1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7)
[rank2] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
`
	rep, err := diagnose.Read(s, strings.NewReader(text))
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range rep.Diagnoses {
		fmt.Printf("%s root=%v count=%d first line %d\n", d.ID, d.Root, d.Count, d.FirstLine)
	}
	// Output:
	// pytorch/cuda-out-of-memory root=true count=1 first line 3
	// nccl/watchdog-timeout root=false count=2 first line 1
}

// ReadAll reads the files of one job, one per rank: each diagnosis names
// its file and the ranks it was seen on, the root cause first.
func ExampleReadAll() {
	s, err := scan.New(entries)
	if err != nil {
		log.Fatal(err)
	}
	logs := map[string]string{
		"rank0.log": "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7)\n",
		"rank1.log": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
	}
	var inputs []scan.Input
	for _, name := range []string{"rank0.log", "rank1.log"} {
		inputs = append(inputs, scan.Input{Name: name, Open: func() (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(logs[name])), nil
		}})
	}
	rep, err := diagnose.ReadAll(s, inputs, diagnose.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range rep.Diagnoses {
		fmt.Printf("%s in %s, ranks %v\n", d.ID, d.File, d.Ranks)
	}
	// Output:
	// pytorch/cuda-out-of-memory in rank1.log, ranks [1]
	// nccl/watchdog-timeout in rank0.log, ranks [0]
}
