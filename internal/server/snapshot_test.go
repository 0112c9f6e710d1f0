package server

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// The API's snapshot analysis is `gpudx mem --format json`'s, byte for
// byte, sent plain or with Content-Encoding: gzip.
func TestSnapshotEqualsCLI(t *testing.T) {
	s, _ := newServer(t, nil, Options{})
	snap := readFile(t, snapshots+"hand-p4.pickle")
	want := readFile(t, goldens+"mem-hand.json")
	for _, r := range []req{
		{body: snap},
		{body: snap, header: map[string]string{"Content-Type": "application/octet-stream"}},
		{body: gzipped(t, snap), header: map[string]string{"Content-Encoding": "gzip"}},
	} {
		r.method, r.target = "POST", "/api/v1/snapshots"
		w := do(t, s, r)
		if w.Code != 200 || !bytes.Equal(w.Body.Bytes(), want) {
			t.Errorf("%v: %d, the answer differs from `gpudx mem --format json` (%d vs %d bytes)", r.header, w.Code, w.Body.Len(), len(want))
		}
	}
}

// A gzip file sent as it is is read by the snapshot reader, which says so;
// the query asks what the CLI's flags ask.
func TestSnapshotFigures(t *testing.T) {
	s, _ := newServer(t, nil, Options{})
	type oom struct {
		Device         int     `json:"device"`
		RequestedBytes uint64  `json:"requested_bytes"`
		DeviceFree     *uint64 `json:"device_free_bytes"`
		LargestFree    uint64  `json:"largest_free_block_bytes"`
		CapacityBytes  *uint64 `json:"capacity_bytes"`
		Verdict        string  `json:"verdict"`
		Source         string  `json:"source"`
	}
	type report struct {
		Devices []struct {
			Device   int    `json:"device"`
			Reserved uint64 `json:"reserved_bytes"`
		} `json:"devices"`
		OOM      *oom `json:"oom"`
		TopSites []struct {
			Site string `json:"site"`
		} `json:"top_sites"`
		Info struct {
			Format string `json:"format"`
		} `json:"info"`
	}
	free := uint64(123456789)
	for _, tt := range []struct {
		file, query string
		format      string
		oom         oom
		sites       int
	}{
		{"hand-p4.pickle.gz", "", "dict, pickle protocol 4, gzip",
			oom{Device: 0, RequestedBytes: 41943040, DeviceFree: &free, LargestFree: 8388608, Verdict: "live_tensors", Source: "trace"}, 2},
		{"hand-p2.pickle", "?top=1", "dict, pickle protocol 2",
			oom{Device: 0, RequestedBytes: 41943040, DeviceFree: &free, LargestFree: 8388608, Verdict: "live_tensors", Source: "trace"}, 1},
		{"hand-p4.pickle", "?request=6MiB&device=cuda:0&capacity=80GB", "dict, pickle protocol 4",
			oom{Device: 0, RequestedBytes: 6291456, DeviceFree: &free, LargestFree: 8388608, Verdict: "fits", Source: "request"}, 2},
	} {
		w := do(t, s, req{method: "POST", target: "/api/v1/snapshots" + tt.query, body: readFile(t, snapshots+tt.file)})
		var got report
		decode(t, w, &got)
		if w.Code != 200 || got.OOM == nil {
			t.Fatalf("%s%s: %d %s", tt.file, tt.query, w.Code, w.Body)
		}
		o := *got.OOM
		o.CapacityBytes = nil
		if (o.DeviceFree == nil) != (tt.oom.DeviceFree == nil) || (o.DeviceFree != nil && *o.DeviceFree != *tt.oom.DeviceFree) {
			t.Errorf("%s%s: device free %v", tt.file, tt.query, o.DeviceFree)
		}
		o.DeviceFree, tt.oom.DeviceFree = nil, nil
		if o != tt.oom || got.Info.Format != tt.format || len(got.TopSites) != tt.sites ||
			len(got.Devices) != 2 || got.Devices[0].Reserved != 20971520 || got.Devices[1].Reserved != 2097152 {
			t.Errorf("%s%s: oom %+v format %q, %d sites, devices %+v", tt.file, tt.query, o, got.Info.Format, len(got.TopSites), got.Devices)
		}
		if strings.Contains(tt.query, "capacity") && (got.OOM.CapacityBytes == nil || *got.OOM.CapacityBytes != 80e9) {
			t.Errorf("capacity %v", got.OOM.CapacityBytes)
		}
	}
}

// Files that are not snapshots get the reader's message (as `gpudx mem`
// prints it) with 422; bad query values get 400.
func TestSnapshotBad(t *testing.T) {
	s, _ := newServer(t, nil, Options{})
	hand := readFile(t, snapshots+"hand-p4.pickle")
	z := gzipped(t, hand)
	for _, tt := range []struct {
		name, query string
		body        []byte
		header      map[string]string
		status      int
		msg         string
	}{
		{"not a snapshot", "", readFile(t, snapshots+"not-a-snapshot.pickle"), nil, 422,
			`not a readable PyTorch memory snapshot: byte 33: not a PyTorch memory snapshot: the pickle is a dict without a "segments" key`},
		{"refused opcode", "", readFile(t, snapshots+"ordereddict.pickle"), nil, 422,
			"not a readable PyTorch memory snapshot: byte 39: the pickle asks to import a Python name (STACK_GLOBAL); a memory snapshot holds only plain data, so gpudx refuses it (opcode STACK_GLOBAL)"},
		{"blocks do not tile", "", readFile(t, snapshots+"bad-total.pickle"), nil, 422,
			"not a readable PyTorch memory snapshot: byte 261: segments[0] (device 0, address 0x100000): its blocks add up to 512 bytes but total_size is 1024"},
		{"truncated", "", hand[:1000], nil, 422,
			"not a readable PyTorch memory snapshot: byte 999: file ends early: the opcode needs 1 more bytes, 0 left (truncated file?) (opcode BINGET)"},
		{"empty", "", nil, nil, 422, "not a readable PyTorch memory snapshot: byte 0: the file is empty"},
		{"a log", "", readFile(t, examples+"ddp-oom.log"), nil, 422, "not a PyTorch memory snapshot: it does not start with a pickle PROTO opcode (first byte 0x57)"},
		{"truncated gzip", "", z[:len(z)-20], map[string]string{"Content-Encoding": "gzip"}, 400, "the snapshot is not valid gzip data: unexpected EOF"},
		{"device on no segment", "?request=1MiB&device=5", hand, nil, 422, "device 5: the snapshot has no segments on cuda:5 (devices with segments: 0, 1)"},
		{"bad request size", "?request=lots", hand, nil, 400, `request: want a size such as 2GiB, 512MB or a byte count, got "lots"`},
		{"bad capacity", "?capacity=-1GB", hand, nil, 400, `capacity: want a size such as 2GiB, 512MB or a byte count, got "-1GB"`},
		{"device without request", "?device=0", hand, nil, 400, "device applies to request: give request=SIZE too"},
		{"bad device", "?request=1MiB&device=gpu1", hand, nil, 400, `device: want a device ordinal such as 0 or cuda:1, got "gpu1"`},
		{"bad top", "?top=0", hand, nil, 400, `top: want a number from 1 to 10000, got "0"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := do(t, s, req{method: "POST", target: "/api/v1/snapshots" + tt.query, body: tt.body, header: tt.header})
			if msg := apiError(t, w, tt.status); !strings.Contains(msg, tt.msg) {
				t.Errorf("%q, want %q in it", msg, tt.msg)
			}
		})
	}
	if w := do(t, s, req{method: "GET", target: "/api/v1/snapshots"}); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST" {
		t.Errorf("GET: %d Allow %q", w.Code, w.Header().Get("Allow"))
	}
}
