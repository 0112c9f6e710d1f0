package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// The API's diagnosis is the CLI's, byte for byte, however the log is
// sent: raw, as JSON, gzip with Content-Encoding, a .gz file as it is.
func TestDiagnoseEqualsCLI(t *testing.T) {
	s, _ := newServer(t, nil, Options{})
	for _, name := range exampleLogs(t) {
		log := readFile(t, examples+name+".log")
		want := readFile(t, goldens+name+".json")
		js, _ := json.Marshal(map[string]string{"log": string(log)})
		for _, tt := range []req{
			{body: log},
			{body: log, header: map[string]string{"Content-Type": "text/plain; charset=utf-8"}},
			{body: js, header: map[string]string{"Content-Type": "application/json"}},
			{body: gzipped(t, log), header: map[string]string{"Content-Encoding": "gzip"}},
			{body: gzipped(t, log)},
		} {
			tt.method, tt.target = "POST", "/api/v1/diagnose"
			w := do(t, s, tt)
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("%s %v: %d %s", name, tt.header, w.Code, w.Body)
			}
			if !bytes.Equal(w.Body.Bytes(), want) {
				t.Errorf("%s %v: the answer differs from `gpudx diagnose --format json` (%d vs %d bytes)", name, tt.header, w.Body.Len(), len(want))
			}
		}
	}
}

// env text in the JSON form adds the versions, as --env does.
func TestDiagnoseEnv(t *testing.T) {
	s, _ := newServer(t, nil, Options{})
	js, _ := json.Marshal(map[string]string{
		"log": string(readFile(t, examples+"ddp-oom.log")),
		"env": string(readFile(t, goldens+"collect_env.txt")),
	})
	w := do(t, s, req{method: "POST", target: "/api/v1/diagnose", body: js, header: map[string]string{"Content-Type": "application/json"}})
	var rep struct {
		Environment map[string]any `json:"environment"`
		Diagnoses   []struct {
			ID   string `json:"id"`
			Root bool   `json:"root"`
		} `json:"diagnoses"`
		Stats struct{ Bytes, Lines int }
	}
	decode(t, w, &rep)
	e := rep.Environment
	// NCCL from the log's own line, torch, driver and os from the env text.
	if e["nccl"] != "2.21.5" || e["torch"] != "2.5.1+cu124" || e["driver"] != "550.54.15" || e["os"] != "linux" {
		t.Errorf("environment %v", e)
	}
	if rep.Stats.Bytes != 3848 || rep.Stats.Lines != 29 || len(rep.Diagnoses) != 4 ||
		rep.Diagnoses[0].ID != "pytorch/cuda-out-of-memory" || !rep.Diagnoses[0].Root {
		t.Errorf("stats %+v, diagnoses %+v", rep.Stats, rep.Diagnoses)
	}
}

// Bodies that are not a log, or not a well-formed request, get a clear
// message and the right status.
func TestDiagnoseBadBodies(t *testing.T) {
	s, _ := newServer(t, nil, Options{})
	log := readFile(t, examples+"device-assert.log")
	z := gzipped(t, log)
	binary := append([]byte("step 1 loss 0.5\n"), 0, 1, 2)
	jsonCT := map[string]string{"Content-Type": "application/json"}
	for _, tt := range []struct {
		name   string
		r      req
		status int
		msg    string
	}{
		{"empty", req{}, 400, "the request body is empty"},
		{"NUL bytes", req{body: binary}, 415, "the body is binary (NUL bytes in its first 8 KiB), not a log"},
		{"NUL after 8 KiB is text", req{body: append(bytes.Repeat([]byte("x\n"), 5000), 0)}, 200, ""},
		{"gzip of binary", req{body: gzipped(t, binary)}, 415, "the body is binary"},
		{"pickle", req{body: readFile(t, snapshots+"hand-p4.pickle")}, 415, "the body is a Python pickle, not a log; if it is a PyTorch memory snapshot, POST it to /api/v1/snapshots"},
		{"truncated gzip", req{body: z[:len(z)/2], header: map[string]string{"Content-Encoding": "gzip"}}, 400, "the log is not valid gzip data: unexpected EOF"},
		{"truncated gzip sniffed", req{body: z[:len(z)/2]}, 400, "the log is not valid gzip data: unexpected EOF"},
		{"not gzip", req{body: log, header: map[string]string{"Content-Encoding": "gzip"}}, 400, "the log is not valid gzip data: gzip: invalid header"},
		{"brotli", req{body: log, header: map[string]string{"Content-Encoding": "br"}}, 415, `Content-Encoding "br" is not supported`},
		{"bad JSON", req{body: []byte(`{"log": `), header: jsonCT}, 400, "invalid JSON body: unexpected EOF"},
		{"JSON of wrong type", req{body: []byte(`{"log": 42}`), header: jsonCT}, 400, "invalid JSON body: json: cannot unmarshal number into Go struct field diagnoseRequest.log of type string"},
		{"unknown JSON field", req{body: []byte(`{"log": "x", "logs": "y"}`), header: jsonCT}, 400, `invalid JSON body: json: unknown field "logs"`},
		{"JSON without log", req{body: []byte(`{"env": "x"}`), header: jsonCT}, 400, `the JSON body has no "log" field`},
		{"JSON empty log", req{body: []byte(`{"log": ""}`), header: jsonCT}, 400, `"log" is empty`},
		{"JSON then more", req{body: []byte(`{"log": "x"} {"log": "y"}`), header: jsonCT}, 400, "unexpected data after the JSON object"},
		{"JSON binary log", req{body: []byte(`{"log": "a\u0000b"}`), header: jsonCT}, 415, "the body is binary"},
		{"env too long", req{body: []byte(`{"log": "x", "env": "` + strings.Repeat("a", 1<<20+1) + `"}`), header: jsonCT}, 400, "env is longer than 1048576 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.method, tt.r.target = "POST", "/api/v1/diagnose"
			w := do(t, s, tt.r)
			if tt.status == 200 {
				if w.Code != 200 {
					t.Fatalf("%d %s", w.Code, w.Body)
				}
				return
			}
			if msg := apiError(t, w, tt.status); !strings.Contains(msg, tt.msg) {
				t.Errorf("message %q, want %q in it", msg, tt.msg)
			}
		})
	}
}
