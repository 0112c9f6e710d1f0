package mcpserver

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolErrors sends bad input to every tool (files allowed, as over
// stdio, and no outcome store): each answer is a tool error whose text
// says what was wrong, never a protocol error.
func TestToolErrors(t *testing.T) {
	cs := connectMem(t, newService(t, nil), Options{AllowFiles: true})
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.log")
	snap := readFile(t, "snapshot/testdata/hand-p4.pickle")
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	abs := func(rel string) string {
		p, err := filepath.Abs(filepath.Join("..", "..", rel))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		name, tool string
		args       map[string]any
		want       string // the whole message, or its start when it ends with "…"
	}{
		{"no log", "diagnose_log", map[string]any{}, `no log: give the job's output in "log", or a file in "path"`},
		{"log and path", "diagnose_log", map[string]any{"log": "x", "path": "y"}, "give log or path, not both"},
		{"missing log file", "diagnose_log", map[string]any{"path": missing}, `path "` + missing + `": no such file or directory`},
		{"directory", "diagnose_log", map[string]any{"path": dir}, `path "` + dir + `": is a directory; give one file`},
		{"pickle as log", "diagnose_log", map[string]any{"path": abs("snapshot/testdata/hand-p4.pickle")},
			abs("snapshot/testdata/hand-p4.pickle") + ": a Python pickle, not a log; if it is a PyTorch memory snapshot, call analyze_memory_snapshot with it"},
		{"binary log", "diagnose_log", map[string]any{"log": "abc\x00def"}, "log holds NUL bytes: it is binary data, not a log"},
		{"env too long", "diagnose_log", map[string]any{"log": "x", "env": strings.Repeat("e", 1<<20+1)}, "env is longer than 1048576 bytes"},
		{"extra argument", "diagnose_log", map[string]any{"log": "x", "file": "y"}, `validating "arguments": …`},

		{"empty message", "lookup_error", map[string]any{"message": "  "}, "message is empty: give an error name or line"},
		{"no message", "lookup_error", map[string]any{}, `validating "arguments": validating root: required: missing properties: ["message"]`},
		{"message too long", "lookup_error", map[string]any{"message": strings.Repeat("a", 64<<10+1)},
			"message is 65537 bytes; lookup_error takes an error line or a few (at most 65536): give a whole log to diagnose_log"},

		{"unknown id", "get_entry", map[string]any{"id": "pytorch/cuda-oom"}, `no entry "pytorch/cuda-oom"; close ids: pytorch/cuda-out-of-memory, …`},
		{"empty id", "get_entry", map[string]any{"id": ""}, "id is empty: give an entry id such as pytorch/cuda-out-of-memory (search_entries finds ids)"},

		{"unknown domain", "search_entries", map[string]any{"query": "oom", "domain": "opencl"}, `no domain "opencl"; domains are: build, container, cuda, …`},
		{"limit too big", "search_entries", map[string]any{"query": "oom", "limit": 51}, "limit 51 is out of range: give 1 to 50"},
		{"empty query", "search_entries", map[string]any{"query": ""}, "query is empty: give words, an error name or a message line"},

		{"no snapshot", "analyze_memory_snapshot", map[string]any{}, `no snapshot: give "path" (a file) or "snapshot_base64"`},
		{"both", "analyze_memory_snapshot", map[string]any{"path": "x", "snapshot_base64": "eA=="}, "give path or snapshot_base64, not both"},
		{"bad base64", "analyze_memory_snapshot", map[string]any{"snapshot_base64": "gASV!!!"},
			"snapshot_base64 is not valid base64 (illegal base64 data at input byte 4): encode the file's bytes with standard base64, e.g. base64 -w0 snapshot.pickle"},
		{"not a snapshot", "analyze_memory_snapshot", map[string]any{"snapshot_base64": b64(readFile(t, "snapshot/testdata/not-a-snapshot.pickle"))},
			`snapshot_base64: byte 33: not a PyTorch memory snapshot: the pickle is a dict without a "segments" key`},
		{"truncated", "analyze_memory_snapshot", map[string]any{"snapshot_base64": b64(snap[:200])},
			"snapshot_base64: byte 199: file ends early: the opcode needs 1 more bytes, 0 left (truncated file?) (opcode SHORT_BINUNICODE)"},
		{"log as snapshot", "analyze_memory_snapshot", map[string]any{"path": abs("examples/ddp-oom.log")},
			abs("examples/ddp-oom.log") + ": byte 0: not a PyTorch memory snapshot: it does not start with a pickle PROTO opcode (first byte 0x57)"},
		{"missing snapshot", "analyze_memory_snapshot", map[string]any{"path": missing}, `path "` + missing + `": no such file or directory`},
		{"bad size", "analyze_memory_snapshot", map[string]any{"snapshot_base64": b64(snap), "request": "lots"}, `request: want a size such as 2GiB, 512MB or a byte count, got "lots"`},
		{"device without request", "analyze_memory_snapshot", map[string]any{"snapshot_base64": b64(snap), "device": 0}, "device applies to request: give request (a size such as 2GiB) too"},
		{"absent device", "analyze_memory_snapshot", map[string]any{"snapshot_base64": b64(snap), "request": "1MiB", "device": 5},
			"device 5: the snapshot has no segments on cuda:5 (devices: 0, 1)"},
		{"top too big", "analyze_memory_snapshot", map[string]any{"snapshot_base64": b64(snap), "top": 101}, "top 101 is out of range: give 1 to 100"},

		{"no database", "report_outcome", map[string]any{"entry_id": "pytorch/cuda-out-of-memory", "kind": "workaround", "index": 0, "worked": true},
			"this server runs without an outcome database, so reports cannot be stored (start gpudx mcp or gpudx serve with a database: drop --no-db, or give --db PATH or a postgres:// URL)"},
		{"bad kind", "report_outcome", map[string]any{"entry_id": "pytorch/cuda-out-of-memory", "kind": "fix", "index": 0, "worked": true},
			`validating "arguments": validating root: validating /properties/kind: enum: fix does not equal any of: [workaround dead_end]`},
		{"index out of range", "report_outcome", map[string]any{"entry_id": "pytorch/cuda-out-of-memory", "kind": "dead_end", "index": 4, "worked": true},
			"pytorch/cuda-out-of-memory has 4 dead_end(s); index 4 is out of range (indexes count from 0)"},
		{"negative index", "report_outcome", map[string]any{"entry_id": "pytorch/cuda-out-of-memory", "kind": "dead_end", "index": -1, "worked": true},
			"index -1 is out of range"},
		{"unknown entry", "report_outcome", map[string]any{"entry_id": "nccl/timeout", "kind": "workaround", "index": 0, "worked": true},
			`no entry "nccl/timeout"; close ids: nccl/…`},
		{"missing worked", "report_outcome", map[string]any{"entry_id": "nccl/timeout", "kind": "workaround", "index": 0},
			`validating "arguments": validating root: required: missing properties: ["worked"]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := callErr(t, cs, tt.tool, tt.args)
			if prefix, ok := strings.CutSuffix(tt.want, "…"); ok {
				if !strings.HasPrefix(got, prefix) {
					t.Errorf("got %q\nwant it to start %q", got, prefix)
				}
			} else if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestFiles reads a log and a snapshot by path, as gpudx mcp lets an
// agent do: a gzip log diagnoses as the plain one, and a path to a
// snapshot analyses as its base64 does.
func TestFiles(t *testing.T) {
	cs := connectMem(t, newService(t, nil), Options{AllowFiles: true})
	log := readFile(t, "examples/ddp-oom.log")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(log)
	zw.Close()
	gzPath := filepath.Join(t.TempDir(), "ddp-oom.log.gz")
	if err := os.WriteFile(gzPath, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var plain, zipped DiagnoseOut
	plainText := call(t, cs, "diagnose_log", map[string]any{"path": filepath.Join("..", "..", "examples", "ddp-oom.log")}, &plain)
	zippedText := call(t, cs, "diagnose_log", map[string]any{"path": gzPath}, &zipped)
	checkDDPOOM(t, &plain, plainText)
	checkDDPOOM(t, &zipped, zippedText)

	var out SnapshotOut
	text := call(t, cs, "analyze_memory_snapshot", map[string]any{"path": filepath.Join("..", "..", "snapshot", "testdata", "hand-p4.pickle.gz")}, &out)
	checkHandP4(t, &out, text)

	// base64 as tools write it: without padding (the file's 2014 bytes
	// leave two '=' off), wrapped at 76 columns with CRLF.
	raw := base64.RawStdEncoding.EncodeToString(readFile(t, "snapshot/testdata/hand-p4.pickle"))
	var wrapped strings.Builder
	for i := 0; i < len(raw); i += 76 {
		wrapped.WriteString(raw[i:min(i+76, len(raw))] + "\r\n")
	}
	var fromB64 SnapshotOut
	text = call(t, cs, "analyze_memory_snapshot", map[string]any{"snapshot_base64": wrapped.String()}, &fromB64)
	checkHandP4(t, &fromB64, text)
}

// TestSnapshotRequest asks about a request size instead of the trace's
// oom event.
func TestSnapshotRequest(t *testing.T) {
	cs := connectMem(t, newService(t, nil), Options{})
	snap := base64.StdEncoding.EncodeToString(readFile(t, "snapshot/testdata/hand-p4.pickle"))
	var fits SnapshotOut
	text := call(t, cs, "analyze_memory_snapshot", map[string]any{"snapshot_base64": snap, "request": "4MiB", "device": 0}, &fits)
	if o := fits.OOM; o == nil || o.Source != "request" || o.Verdict != "fits" || o.RequestedBytes != 4<<20 || o.NotTheFix != "" {
		t.Errorf("fits: %+v", fits.OOM)
	}
	if !strings.HasPrefix(text, "Request on cuda:0: 4.00 MiB requested; largest free block 8.00 MiB; reserved 20.00 MiB, allocated 12.00 MiB.\nVerdict: fits: A 4.00 MiB request on device 0 fits in the cache") {
		t.Errorf("text %q", text)
	}
	// The trace's oom measured 117.74 MiB free on the device: with an 80
	// GB card, 74.37 GiB is held outside PyTorch, and a 1 GiB request
	// does not fit.
	var big SnapshotOut
	call(t, cs, "analyze_memory_snapshot", map[string]any{"snapshot_base64": snap, "request": "1GiB", "capacity": "80GB"}, &big)
	if o := big.OOM; o == nil || o.Verdict != "outside_allocator" || o.CapacityBytes == nil || *o.CapacityBytes != 80e9 ||
		o.DeviceFreeBytes == nil || *o.DeviceFreeBytes != 123456789 {
		t.Errorf("1GiB: %+v", big.OOM)
	}
}

// TestLogLimit: a log over MaxLogBytes is refused with the limit named.
// The handler is called directly: 64 MiB through a transport only slows
// the test.
func TestLogLimit(t *testing.T) {
	h := &handlers{svc: newService(t, nil), opt: Options{}}
	_, _, err := h.diagnose(context.Background(), DiagnoseIn{Log: strings.Repeat("x", MaxLogBytes+1)})
	want := "log is 67108865 bytes, more than the 67108864 (64 MiB) accepted; send the last 64 MiB (the failure is usually near the end)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	_, _, err = h.snapshot(context.Background(), SnapshotIn{SnapshotBase64: strings.Repeat("A", MaxSnapshotBase64+1)})
	if err == nil || !strings.HasPrefix(err.Error(), "snapshot_base64 is 67108865 bytes, more than the 67108864 (64 MiB) accepted") {
		t.Errorf("snapshot: %v", err)
	}
}

// TestPanic: a handler that panics answers a tool error and the session
// goes on.
func TestPanic(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	addTool(s, &mcp.Tool{Name: "boom"}, func(context.Context, DomainsIn) (*DomainsOut, string, error) {
		var m map[string]int
		m["x"] = 1 // a nil-map write: a runtime panic
		return nil, "", nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs := connect(t, ct)
	for range 2 {
		if got, want := callErr(t, cs, "boom", nil), "internal error in boom: assignment to entry in nil map (please report this with the input)"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
