package memory_test

import (
	"fmt"
	"log"

	"github.com/gpudx/gpudx/memory"
	"github.com/gpudx/gpudx/snapshot"
)

// A snapshot written by torch.cuda.memory._dump_snapshot is read with
// package snapshot and analysed here: what each device reserves, what is
// allocated, and how fragmented the free memory is.
func Example() {
	s, err := snapshot.ReadFile("../snapshot/testdata/hand-p4.pickle")
	if err != nil {
		log.Fatal(err)
	}
	rep := memory.Analyze(s, memory.Options{RequestDevice: -1})
	for _, d := range rep.Devices {
		f := d.Figures
		fmt.Printf("device %d: %d bytes reserved, %d allocated, %d free in %d segments, fragmentation %.2f\n",
			d.Device, f.ReservedBytes, f.AllocatedBytes, f.InactiveBytes, f.Segments, f.Fragmentation)
	}
	// Output:
	// device 0: 20971520 bytes reserved, 10485760 allocated, 8388608 free in 1 segments, fragmentation 0.00
	// device 1: 2097152 bytes reserved, 512 allocated, 2096640 free in 1 segments, fragmentation 0.00
}
