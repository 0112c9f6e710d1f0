package mcpserver

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"strings"
	"testing"
)

// memoBomb is the probe's memo-reference bomb, gzip-compressed: a memoised
// list of 1,000 small ints appended to another list through BINGET, 1,000
// references per APPENDS, reps times (2,002 bytes a block; 100,000 blocks
// are 200 MB, 321 KB of gzip).
func memoBomb(t *testing.T, reps int) []byte {
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	head := []byte("\x80\x04]\x94]\x94(")
	head = append(head, bytes.Repeat([]byte("K\x01"), 1000)...)
	zw.Write(append(head, "ea"...))
	blk := append(append([]byte("("), bytes.Repeat([]byte("h\x01"), 1000)...), 'e')
	for range reps {
		zw.Write(blk)
	}
	zw.Write([]byte("."))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// analyze_memory_snapshot reads within the service's memory budget: the
// probe's 321 KB memo bomb (200 MB once decompressed; the tool peaked at
// 5.86 GB on it before) is refused at the byte where decoding went over,
// and a cap set on the service holds.
func TestSnapshotMemoryBudget(t *testing.T) {
	bomb := memoBomb(t, 100_000)
	if len(bomb) > 400<<10 {
		t.Fatalf("the bomb is %d bytes of gzip", len(bomb))
	}
	cs := connectMem(t, newService(t, nil), Options{})
	msg := callErr(t, cs, "analyze_memory_snapshot", map[string]any{"snapshot_base64": base64.StdEncoding.EncodeToString(bomb)})
	if !strings.Contains(msg, "more than the memory budget of") || !strings.Contains(msg, "(opcode APPENDS)") {
		t.Errorf("%q", msg)
	}
	capped := newService(t, nil)
	capped.SetSnapshotMemory(1 << 20)
	cs = connectMem(t, capped, Options{})
	msg = callErr(t, cs, "analyze_memory_snapshot", map[string]any{"snapshot_base64": base64.StdEncoding.EncodeToString(memoBomb(t, 100))})
	if !strings.Contains(msg, "more than the memory cap of 1.0 MiB set for this read") {
		t.Errorf("%q", msg)
	}
}
