package web

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gpudx/gpudx/internal/service"
)

// logOf returns the bundled log padded with plain lines to exactly n bytes.
func logOf(t *testing.T, n int) []byte {
	t.Helper()
	b := readFile(t, "../../examples/ddp-oom.log")
	for len(b) < n {
		line := []byte("step 400/5000 | loss 1.7001 | lr 3.00e-04 | 1.93 it/s\n")
		if rest := n - len(b); rest < len(line) {
			line = append(bytes.Repeat([]byte("."), rest-1), '\n')
		}
		b = append(b, line...)
	}
	if len(b) != n {
		t.Fatalf("log of %d bytes, want %d", len(b), n)
	}
	return b
}

// truncatedGzip is a gzip log cut off after several hundred KiB of text,
// so that the error comes while the log is scanned, not at its head.
func truncatedGzip(t *testing.T) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < 4<<20; i++ {
		// Varied lines, so that the compressed stream is long.
		b.WriteString("step " + strings.Repeat(string(rune('a'+i%26)), i%97) + " " + url.QueryEscape(string(rune(i))) + "\n")
	}
	z := gz(t, b.Bytes())
	return z[:len(z)/2]
}

// alert is the error page's message.
func alert(t *testing.T, r *response) string {
	t.Helper()
	return text(one(t, r.doc, "p.alert"))
}

// A log of exactly MaxLogBytes is read; one byte more is refused with 413
// and a page that names the limit, however it is sent.
func TestLogSizeLimit(t *testing.T) {
	const limit = 5000
	h := New(newService(t, nil), Options{MaxLogBytes: limit})
	const tooLarge = "The log is larger than this server's limit of 4.88 KiB (5,000 bytes). Send the part around the failure (the last few thousand lines), or run gpudx diagnose on the file where it is."
	urlencoded := func(b []byte) *response {
		req := httptest.NewRequest(http.MethodPost, "/diagnose", strings.NewReader(url.Values{"log": {string(b)}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return do(t, h, req)
	}
	for _, tt := range []struct {
		name string
		send func([]byte) *response
	}{
		{"file", func(b []byte) *response {
			return post(t, h, "/diagnose", part{name: "logfile", file: "x.log", data: b})
		}},
		{"pasted", func(b []byte) *response { return post(t, h, "/diagnose", part{name: "log", data: b}) }},
		{"url-encoded", urlencoded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.send(logOf(t, limit))
			if r.status != http.StatusOK {
				t.Fatalf("exactly the limit: status %d: %s", r.status, alert(t, r))
			}
			if got := attr(one(t, r.doc, "article.card.root"), "data-id"); got != "pytorch/cuda-out-of-memory" {
				t.Errorf("root cause %q", got)
			}
			r = tt.send(logOf(t, limit+1))
			if r.status != http.StatusRequestEntityTooLarge {
				t.Fatalf("one byte over: status %d", r.status)
			}
			if got := alert(t, r); got != tooLarge {
				t.Errorf("message\n got %q\nwant %q", got, tooLarge)
			}
		})
	}

	t.Run("gzip over the limit once decompressed", func(t *testing.T) {
		z := gz(t, logOf(t, limit+1))
		if len(z) > limit {
			t.Fatalf("the compressed log (%d bytes) is itself over the limit", len(z))
		}
		r := post(t, h, "/diagnose", part{name: "logfile", file: "x.log.gz", data: z})
		if r.status != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d", r.status)
		}
		if got := alert(t, r); !strings.HasPrefix(got, "The log is larger than this server's limit of 4.88 KiB (5,000 bytes) once decompressed.") {
			t.Errorf("message %q", got)
		}
		if r := post(t, h, "/diagnose", part{name: "logfile", file: "x.log.gz", data: gz(t, logOf(t, limit))}); r.status != http.StatusOK {
			t.Errorf("gzip of exactly the limit: status %d", r.status)
		}
	})
	t.Run("environment text", func(t *testing.T) {
		env := bytes.Repeat([]byte("x\n"), service.MaxEnvText/2+1)
		r := post(t, h, "/diagnose", part{name: "log", data: readFile(t, "../../examples/ddp-oom.log")}, part{name: "env", data: env})
		if r.status != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d", r.status)
		}
		if got := alert(t, r); got != "The environment text is larger than 1.00 MiB (1,048,576 bytes)." {
			t.Errorf("message %q", got)
		}
	})
	t.Run("whole request", func(t *testing.T) {
		// Fields the form does not have still count against the body.
		r := post(t, h, "/diagnose", part{name: "log", data: readFile(t, "../../examples/ddp-oom.log")}, part{name: "junk", data: bytes.Repeat([]byte("j"), 2<<20)})
		if r.status != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d", r.status)
		}
		if got := alert(t, r); !strings.HasPrefix(got, "The request is larger than this server accepts (") {
			t.Errorf("message %q", got)
		}
	})
}

// What is not a log gets a page that says what it is, with 422.
func TestNotALog(t *testing.T) {
	h := New(newService(t, nil), Options{})
	for _, tt := range []struct {
		name, file string
		data       []byte
		status     int
		msg        string
		next       string
	}{
		{"binary", "core.bin", append([]byte("ELF"), 0, 0, 1, 2), 422,
			"core.bin looks like a binary file (NUL bytes in its first 8 KiB), not a log.", ""},
		{"binary in gzip", "core.bin.gz", gz(t, []byte{0, 1, 2, 3}), 422,
			"core.bin.gz looks like a binary file (NUL bytes in its first 8 KiB), not a log.", ""},
		{"a memory snapshot", "hand-p4.pickle", readFile(t, "../../snapshot/testdata/hand-p4.pickle"), 422,
			"hand-p4.pickle is a Python pickle, not a log. If it is a PyTorch memory snapshot, read it on the memory page.", "/memory"},
		{"broken gzip", "x.log.gz", []byte{0x1f, 0x8b, 9, 9, 9}, 422,
			"x.log.gz is not a valid gzip file: unexpected EOF", ""},
		{"truncated gzip", "x.log.gz", gz(t, logOf(t, 4000))[:200], 422,
			"x.log.gz is not a valid gzip file: unexpected EOF", ""},
		{"gzip truncated past its head", "x.log.gz", truncatedGzip(t), 422,
			"x.log.gz is not a valid gzip file: unexpected EOF", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, h, "/diagnose", part{name: "logfile", file: tt.file, data: tt.data})
			if r.status != tt.status {
				t.Fatalf("status %d, want %d", r.status, tt.status)
			}
			if got := text(one(t, r.doc, "h1")); got != "Not a log" {
				t.Errorf("title %q", got)
			}
			if got := alert(t, r); got != tt.msg {
				t.Errorf("message\n got %q\nwant %q", got, tt.msg)
			}
			if tt.next != "" {
				if got := attr(first(t, one(t, r.doc, "main"), "a"), "href"); got != tt.next {
					t.Errorf("link on %q, want %q", got, tt.next)
				}
			}
		})
	}
	t.Run("nothing sent", func(t *testing.T) {
		r := post(t, h, "/diagnose", part{name: "log", data: []byte(" \r\n")}, part{name: "logfile", file: "", data: nil})
		if r.status != http.StatusBadRequest {
			t.Fatalf("status %d", r.status)
		}
		if got := alert(t, r); got != "Paste a log or choose a file first." {
			t.Errorf("message %q", got)
		}
		if len(all(r.doc, "form.form")) != 1 {
			t.Errorf("the form is not shown again")
		}
	})
	t.Run("a field too long", func(t *testing.T) {
		r := post(t, h, "/diagnose", part{name: "lang", data: []byte(strings.Repeat("z", 17))}, part{name: "log", data: []byte("x\n")})
		if r.status != http.StatusBadRequest {
			t.Fatalf("status %d", r.status)
		}
		if got := alert(t, r); got != "The form could not be read: lang is over its size limit" {
			t.Errorf("message %q", got)
		}
	})
	t.Run("not a form", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodPost, "/diagnose", strings.NewReader("CUDA error"))
		req.Header.Set("Content-Type", "text/plain")
		r := do(t, h, req)
		if r.status != http.StatusUnsupportedMediaType {
			t.Fatalf("status %d", r.status)
		}
		if got := alert(t, r); got != "Send the form as multipart/form-data or application/x-www-form-urlencoded." {
			t.Errorf("message %q", got)
		}
	})
}
