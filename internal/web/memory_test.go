package web

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

const snapDir = "../../snapshot/testdata/"

// inlineText is the text inside each element named tag (script, style).
func inlineText(n *html.Node, tag string) []string {
	var out []string
	for _, e := range all(n, tag) {
		var b strings.Builder
		for c := e.FirstChild; c != nil; c = c.NextSibling {
			b.WriteString(c.Data)
		}
		out = append(out, b.String())
	}
	return out
}

func cspHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// A snapshot, plain or gzip, gives memview's page, with a bar back to the
// site and a policy that allows its inline script and style by hash and
// nothing else inline.
func TestSnapshotPage(t *testing.T) {
	h := New(newService(t, nil), Options{})
	for _, tt := range []struct {
		name  string
		parts []part
		h2    string
		lang  string
	}{
		{"plain", []part{{name: "snapshot", file: "hand-p4.pickle", data: readFile(t, snapDir+"hand-p4.pickle")}},
			"Out of memory on cuda:0 at trace event 8 (2023-11-14 22:13:20.000 UTC)", "en"},
		{"gzip", []part{{name: "snapshot", file: "hand-p4.pickle.gz", data: readFile(t, snapDir+"hand-p4.pickle.gz")}},
			"Out of memory on cuda:0 at trace event 8 (2023-11-14 22:13:20.000 UTC)", "en"},
		{"Chinese", []part{{name: "lang", data: []byte("zh")}, {name: "snapshot", file: "hand-p4.pickle", data: readFile(t, snapDir+"hand-p4.pickle")}},
			"显存不足（OOM），设备 cuda:0，跟踪事件 8（2023-11-14 22:13:20.000 UTC）", "zh"},
		// The options may come before the file or after it.
		{"request before the file", []part{{name: "request", data: []byte("1GiB")}, {name: "device", data: []byte("cuda:1")},
			{name: "snapshot", file: "hand-p4.pickle", data: readFile(t, snapDir+"hand-p4.pickle")}},
			"Request of 1.00 GiB on cuda:1 (at snapshot time)", "en"},
		{"request after the file", []part{{name: "snapshot", file: "hand-p4.pickle", data: readFile(t, snapDir+"hand-p4.pickle")},
			{name: "request", data: []byte("1GiB")}, {name: "device", data: []byte("1")}},
			"Request of 1.00 GiB on cuda:1 (at snapshot time)", "en"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, h, "/memory", tt.parts...)
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.raw)
			}
			if got := text(byID(t, r.doc, "oom-h")); got != tt.h2 {
				t.Errorf("heading\n got %q\nwant %q", got, tt.h2)
			}
			if got := attr(one(t, r.doc, "html"), "lang"); got != tt.lang {
				t.Errorf("html lang %q", got)
			}
			csp := r.header.Get("Content-Security-Policy")
			scripts, styles := inlineText(r.doc, "script"), inlineText(r.doc, "style")
			if len(scripts) != 1 || len(styles) != 1 {
				t.Fatalf("%d scripts and %d styles inline, want memview's one of each", len(scripts), len(styles))
			}
			want := pageCSP + "; script-src " + cspHash(scripts[0]) + "; style-src 'self' " + cspHash(styles[0])
			if csp != want {
				t.Errorf("policy\n got %q\nwant %q", csp, want)
			}
			bar := one(t, r.doc, "div.gpudx-bar")
			var hrefs []string
			for _, a := range all(bar, "a") {
				hrefs = append(hrefs, attr(a, "href"))
			}
			if strings.Join(hrefs, " ") != "/ / /memory /entries /memory?lang="+map[string]string{"en": "zh", "zh": "en"}[tt.lang] {
				t.Errorf("bar links %q", hrefs)
			}
			if r.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("no nosniff")
			}
		})
	}
}

// A file that is not a snapshot gets the reader's own message with 422;
// bad options get the form again with what is wrong, with 400.
func TestSnapshotErrors(t *testing.T) {
	h := New(newService(t, nil), Options{})
	snap := readFile(t, snapDir+"hand-p4.pickle")
	for _, tt := range []struct {
		name   string
		parts  []part
		status int
		msg    string
	}{
		{"not a snapshot", []part{{name: "snapshot", file: "not-a-snapshot.pickle", data: readFile(t, snapDir+"not-a-snapshot.pickle")}}, 422,
			`not-a-snapshot.pickle: byte 33: not a PyTorch memory snapshot: the pickle is a dict without a "segments" key`},
		{"a log", []part{{name: "snapshot", file: "ddp-oom.log", data: readFile(t, "../../examples/ddp-oom.log")}}, 422,
			"ddp-oom.log: byte 0: not a PyTorch memory snapshot: it does not start with a pickle PROTO opcode (first byte 0x57)"},
		{"truncated", []part{{name: "snapshot", file: "cut.pickle", data: snap[:len(snap)/2]}}, 422, ""},
		{"no file", []part{{name: "snapshot", file: "", data: nil}}, 400, "Choose a snapshot file first."},
		{"bad size", []part{{name: "request", data: []byte("lots")}, {name: "snapshot", file: "s.pickle", data: snap}}, 400,
			`Would a request of this size fit?: want a size such as 2GiB, 512MB or a byte count, got "lots"`},
		{"an option too long", []part{{name: "request", data: []byte(strings.Repeat("9", 65))}, {name: "snapshot", file: "s.pickle", data: snap}}, 400,
			"The form could not be read: request is over its size limit"},
		{"device without a request", []part{{name: "snapshot", file: "s.pickle", data: snap}, {name: "device", data: []byte("1")}}, 400,
			"The device applies to a request: give the request size too."},
		{"device without segments", []part{{name: "snapshot", file: "s.pickle", data: snap}, {name: "request", data: []byte("1GiB")}, {name: "device", data: []byte("7")}}, 400,
			"The snapshot has no segments on cuda:7 (devices with segments: cuda:0, cuda:1)."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, h, "/memory", tt.parts...)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d", r.status, tt.status)
			}
			got := alert(t, r)
			if tt.msg == "" {
				if !strings.HasPrefix(got, "cut.pickle: ") || len(got) < len("cut.pickle: ")+10 {
					t.Errorf("message %q", got)
				}
				return
			}
			if got != tt.msg {
				t.Errorf("message\n got %q\nwant %q", got, tt.msg)
			}
		})
	}
}

// A snapshot of exactly MaxSnapshotBytes is read; one byte more is 413.
func TestSnapshotSizeLimit(t *testing.T) {
	snap := readFile(t, snapDir+"hand-p4.pickle")
	n := int64(len(snap))
	r := post(t, New(newService(t, nil), Options{MaxSnapshotBytes: n}), "/memory", part{name: "snapshot", file: "s.pickle", data: snap})
	if r.status != http.StatusOK {
		t.Fatalf("exactly the limit: status %d: %s", r.status, r.raw)
	}
	r = post(t, New(newService(t, nil), Options{MaxSnapshotBytes: n - 1}), "/memory", part{name: "snapshot", file: "s.pickle", data: snap})
	if r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("one byte over: status %d", r.status)
	}
	if got, want := alert(t, r), "The snapshot is larger than this server's limit of 1.97 KiB (2,013 bytes). Run gpudx mem on the file where it is."; got != want {
		t.Errorf("message\n got %q\nwant %q", got, want)
	}
	// Bytes after the pickle count too.
	r = post(t, New(newService(t, nil), Options{MaxSnapshotBytes: n}), "/memory", part{name: "snapshot", file: "s.pickle", data: append(snap, 'x')})
	if r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a byte after the pickle, over the limit: status %d", r.status)
	}
	// The limit holds after gzip decoding: the gzip of exactly the limit is
	// read, a small gzip that expands past it is refused.
	r = post(t, New(newService(t, nil), Options{MaxSnapshotBytes: n}), "/memory", part{name: "snapshot", file: "s.pickle.gz", data: gz(t, snap)})
	if r.status != http.StatusOK {
		t.Fatalf("gzip of exactly the limit: status %d", r.status)
	}
	bomb := gz(t, append(append([]byte{}, snap...), make([]byte, 1<<20)...))
	limit := int64(len(bomb)) + 100 // the file itself is within the limit
	r = post(t, New(newService(t, nil), Options{MaxSnapshotBytes: limit}), "/memory", part{name: "snapshot", file: "s.pickle.gz", data: bomb})
	if r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("gzip bomb (%d bytes): status %d", len(bomb), r.status)
	}
}
