package snapshot_test

import (
	"fmt"
	"log"

	"github.com/gpudx/gpudx/snapshot"
)

// ReadFile reads a snapshot (pickled, gzip-compressed or not) into typed
// values; package memory analyses them.
func ExampleReadFile() {
	s, err := snapshot.ReadFile("testdata/hand-p4.pickle")
	if err != nil {
		log.Fatal(err)
	}
	for _, seg := range s.Segments {
		fmt.Printf("device %d: segment of %d bytes, %d blocks\n", seg.Device, seg.TotalSize, len(seg.Blocks))
	}
	// Output:
	// device 0: segment of 20971520 bytes, 3 blocks
	// device 1: segment of 2097152 bytes, 2 blocks
}
