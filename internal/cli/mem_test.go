package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"github.com/gpudx/gpudx/internal/sharedtest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// The snapshot package's hand-made fixture: two devices, an oom event on
// device 0, a private pool, an expandable segment (snapshot/testdata/make.py).
const (
	handSnap   = "../../snapshot/testdata/hand-p4.pickle"
	legacySnap = "../../snapshot/testdata/legacy-p4.pickle"
	realSnaps  = "../../../shared/fixtures/snapshots"
)

func needFile(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not here: %v", p, err)
	}
}

func TestMemGolden(t *testing.T) {
	needFile(t, handSnap)
	needFile(t, legacySnap)
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"mem-hand.txt", []string{"mem", handSnap}},
		{"mem-hand.zh.txt", []string{"mem", "--lang", "zh", handSnap}},
		{"mem-hand.stacks.txt", []string{"mem", "--stacks", "--top", "3", handSnap}},
		{"mem-hand.json", []string{"mem", "--format", "json", handSnap}},
		{"mem-request.txt", []string{"mem", "--request", "6MiB", "--device", "0", "--capacity", "80GB", handSnap}},
		{"mem-diff.txt", []string{"mem", "diff", legacySnap, handSnap}},
		{"mem-diff.json", []string{"mem", "diff", "-f", "json", legacySnap, handSnap}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", nil, tt.args...)
			if r.code != 0 || r.err != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.err)
			}
			golden(t, tt.name, r.out)
		})
	}
}

// TestMemJSONContract: the fields the issue names, with those names.
func TestMemJSONContract(t *testing.T) {
	needFile(t, handSnap)
	r := run(t, "", nil, "mem", "-f", "json", handSnap)
	var rep map[string]any
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	has := func(what string, m map[string]any, keys ...string) {
		t.Helper()
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				t.Errorf("%s lacks %q", what, k)
			}
		}
	}
	has("report", rep, "devices", "oom", "top_sites", "peak")
	figs := []string{"reserved_bytes", "allocated_bytes", "active_bytes", "inactive_bytes", "requested_bytes",
		"largest_free_block_bytes", "fragmentation", "segments", "blocks"}
	devs := rep["devices"].([]any)
	if len(devs) != 2 {
		t.Fatalf("%d devices", len(devs))
	}
	for _, d := range devs {
		dm := d.(map[string]any)
		has("device", dm, append(figs, "device", "pools")...)
		for _, p := range dm["pools"].([]any) {
			has("pool", p.(map[string]any), figs...)
		}
	}
	has("oom", rep["oom"].(map[string]any), "device", "requested_bytes", "device_free_bytes", "largest_free_block_bytes", "verdict", "frames")
	for _, s := range rep["top_sites"].([]any) {
		has("site", s.(map[string]any), "site", "bytes", "count", "frames")
	}
	has("peak", rep["peak"].(map[string]any), "bytes", "time_us")
}

func TestMemOutputs(t *testing.T) {
	needFile(t, handSnap)
	dir := t.TempDir()
	// HTML to a file.
	page := filepath.Join(dir, "mem.html")
	if r := run(t, "", nil, "mem", "--format", "html", "-o", page, handSnap); r.code != 0 || r.out != "" {
		t.Fatalf("html: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
	b, err := os.ReadFile(page)
	if err != nil || !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) || !bytes.Contains(b, []byte("<svg")) {
		t.Fatalf("html page: %v %.100q", err, b)
	}
	// pprof to a file and to a pipe; refused on a terminal without -o.
	prof := filepath.Join(dir, "mem.pb.gz")
	if r := run(t, "", map[string]string{"TTY": "1"}, "mem", "--format", "pprof", "-o", prof, handSnap); r.code != 0 {
		t.Fatalf("pprof: exit %d, stderr %q", r.code, r.err)
	}
	f, err := os.Open(prof)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, s := range p.Sample {
		total += s.Value[0]
	}
	// Live blocks of hand-p4: 10 MiB + 2 MiB on device 0, 512 B on device 1.
	if total != 12<<20+512 {
		t.Errorf("profile holds %d bytes", total)
	}
	if r := run(t, "", nil, "mem", "-f", "pprof", handSnap); r.code != 0 || !strings.HasPrefix(r.out, "\x1f\x8b") {
		t.Errorf("pprof to a pipe: exit %d, stderr %q", r.code, r.err)
	}
	// Standard input, gzip-compressed.
	raw, _ := os.ReadFile(handSnap)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	zw.Close()
	if r := run(t, gz.String(), nil, "mem", "-"); r.code != 0 || !strings.Contains(r.out, "OUT OF MEMORY on cuda:0") {
		t.Errorf("stdin: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
}

func TestMemErrors(t *testing.T) {
	needFile(t, handSnap)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	junk := make([]byte, 4096)
	for i := range junk {
		junk[i] = byte(i*7919 + i/13) // fixed, not pickle-like
	}
	junk[0] = 0x42
	rnd := write("random.bin", junk)
	raw, _ := os.ReadFile(handSnap)
	trunc := write("truncated.pickle", raw[:len(raw)/2])
	// PROTO 4, then a STACK_GLOBAL import of os.system, then REDUCE.
	evil := write("evil.pickle", []byte("\x80\x04\x95\x1a\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x94\x8c\x06system\x94\x93\x94\x8c\x02id\x94\x85\x94R\x94."))
	empty := write("empty.pickle", nil)

	tests := []struct {
		name  string
		stdin string
		env   map[string]string
		args  []string
		inErr string
	}{
		{"missing file", "", nil, []string{"mem", "/nonexistent/s.pickle"}, "/nonexistent/s.pickle: no such file or directory"},
		{"directory", "", nil, []string{"mem", dir}, "is a directory"},
		{"random bytes", "", nil, []string{"mem", rnd}, "not a PyTorch memory snapshot"},
		{"text on stdin", "Traceback (most recent call last):\n", nil, []string{"mem", "-"}, "not a PyTorch memory snapshot"},
		{"truncated", "", nil, []string{"mem", trunc}, "byte "},
		{"refused opcode", "", nil, []string{"mem", evil}, "refuses"},
		{"empty", "", nil, []string{"mem", empty}, "empty"},
		{"no argument", "", nil, []string{"mem"}, "no snapshot"},
		{"bad format", "", nil, []string{"mem", "-f", "yaml", handSnap}, `--format: want text, json, html, pprof, got "yaml"`},
		{"bad lang", "", nil, []string{"mem", "--lang", "fr", handSnap}, `--lang: want en or zh`},
		{"bad request", "", nil, []string{"mem", "--request", "lots", handSnap}, `--request: want a size`},
		{"zero capacity", "", nil, []string{"mem", "--capacity", "0", handSnap}, `--capacity: want a size`},
		{"device without request", "", nil, []string{"mem", "--device", "1", handSnap}, "--device applies to --request"},
		{"bad device", "", nil, []string{"mem", "--request", "1MiB", "--device", "gpu0", handSnap}, "--device: want a device ordinal"},
		{"absent device", "", nil, []string{"mem", "--request", "1MiB", "--device", "cuda:7", handSnap}, "no segments on cuda:7 (devices with segments: 0, 1)"},
		{"bad top", "", nil, []string{"mem", "--top", "0", handSnap}, "--top"},
		{"pprof on a terminal", "", map[string]string{"TTY": "1"}, []string{"mem", "-f", "pprof", handSnap}, "give -o FILE"},
		{"unwritable output", "", nil, []string{"mem", "-o", filepath.Join(dir, "no", "such", "dir.txt"), handSnap}, "-o "},
		{"diff needs two", "", nil, []string{"mem", "diff", handSnap}, "needs two snapshots"},
		{"diff two stdin", "", nil, []string{"mem", "diff", "-", "-"}, "only one of BEFORE and AFTER"},
		{"diff bad after", "", nil, []string{"mem", "diff", handSnap, rnd}, "random.bin: "},
		{"diff html", "", nil, []string{"mem", "diff", "-f", "html", handSnap, handSnap}, "--format: want text, json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.stdin, tt.env, tt.args...)
			if r.code != ExitUsage || !strings.Contains(r.err, tt.inErr) || r.out != "" {
				t.Errorf("exit %d (want %d)\nstdout: %.200s\nstderr: %s", r.code, ExitUsage, r.out, r.err)
			}
			// One clear line (usage errors add the line saying where help is).
			if lines := strings.Count(strings.TrimSpace(r.err), "\n") + 1; lines > 2 || strings.Contains(r.err, "goroutine") {
				t.Errorf("stderr is %d lines:\n%s", lines, r.err)
			}
		})
	}
	// Every prefix of a snapshot is refused cleanly, with the offset.
	for n := 0; n < len(raw); n += 37 {
		p := write("prefix.pickle", raw[:n])
		r := run(t, "", nil, "mem", p)
		if r.code != ExitUsage || (n > 0 && !strings.Contains(r.err, "byte ")) {
			t.Fatalf("prefix of %d bytes: exit %d, stderr %q", n, r.code, r.err)
		}
	}
}

// TestMemRealSnapshots runs every format on the real PyTorch snapshots: all
// read, the text lines fit 100 columns, the JSON parses.
func TestMemRealSnapshots(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(realSnaps, "*.p*"))
	if len(files) == 0 {
		sharedtest.Missing(t, "fixtures/snapshots")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := run(t, "", nil, "mem", f)
			if r.code != 0 || r.err != "" {
				t.Fatalf("text: exit %d, stderr %q", r.code, r.err)
			}
			for i, l := range strings.Split(r.out, "\n") {
				if i > 0 && len([]rune(l)) > 100 { // the header names the file, whatever its length
					t.Errorf("line %d is %d columns: %q", i+1, len([]rune(l)), l)
				}
			}
			r = run(t, "", nil, "mem", "-f", "json", f)
			var v map[string]any
			if r.code != 0 || json.Unmarshal([]byte(r.out), &v) != nil {
				t.Fatalf("json: exit %d, stderr %q", r.code, r.err)
			}
			for _, format := range []string{"html", "pprof"} {
				if r := run(t, "", nil, "mem", "-f", format, "-o", filepath.Join(t.TempDir(), "out"), f); r.code != 0 {
					t.Errorf("%s: exit %d, stderr %q", format, r.code, r.err)
				}
			}
		})
	}
}

// TestMemHTMLLang: --lang applies to --format html: the Chinese page says
// lang="zh", has the Chinese headings and the report's reason_zh and
// fix_zh, and none of the English headings.
func TestMemHTMLLang(t *testing.T) {
	needFile(t, handSnap)
	dir := t.TempDir()
	r := run(t, "", nil, "mem", "-f", "json", handSnap)
	var rep struct {
		OOM struct {
			ReasonZH string `json:"reason_zh"`
			FixZH    string `json:"fix_zh"`
		} `json:"oom"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || rep.OOM.ReasonZH == "" || rep.OOM.FixZH == "" {
		t.Fatalf("json: %v, oom %+v", err, rep.OOM)
	}
	page := func(lang string) string {
		t.Helper()
		p := filepath.Join(dir, lang+".html")
		if r := run(t, "", nil, "mem", "--format", "html", "--lang", lang, "-o", p, handSnap); r.code != 0 || r.out != "" || r.err != "" {
			t.Fatalf("html --lang %s: exit %d, stdout %q, stderr %q", lang, r.code, r.out, r.err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	en, zh := page("en"), page("zh")
	esc := func(s string) string {
		return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
	}
	for _, want := range []string{`<html lang="zh">`, ">谁占着显存</h2>", ">段分布图</h2>", ">峰值</h2>", ">各项数据</h2>",
		"显存不足（OOM），设备 cuda:0", esc(rep.OOM.ReasonZH), esc(rep.OOM.FixZH)} {
		if !strings.Contains(zh, want) {
			t.Errorf("zh page lacks %q", want)
		}
	}
	for _, h := range []string{`<html lang="en">`, ">Who holds the memory</h2>", ">Segment map</h2>", ">Peak</h2>", ">Figures</h2>",
		">Out of memory on cuda:0", "Verdict: "} {
		if !strings.Contains(en, h) {
			t.Errorf("en page lacks %q", h)
		}
		if strings.Contains(zh, h) {
			t.Errorf("zh page holds the English %q", h)
		}
	}
	// Standard output too, and the language does not change the drawing.
	out := run(t, "", nil, "mem", "-f", "html", "--lang", "zh", handSnap)
	if out.code != 0 || out.out != zh {
		t.Errorf("zh page to standard output differs from the file (exit %d)", out.code)
	}
	if strings.Count(zh, "<rect ")+strings.Count(zh, "<path ") != strings.Count(en, "<rect ")+strings.Count(en, "<path ") {
		t.Error("the zh page draws other blocks than the en page")
	}
}

// --max-memory caps what reading the snapshot may hold; a file that needs
// more is refused with the byte where it went over.
func TestMemMaxMemory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bomb.pickle")
	if err := os.WriteFile(p, memoBomb(1000), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, "", nil, "mem", "--max-memory", "1MiB", p)
	if r.code != 2 || !strings.Contains(r.err, "bomb.pickle: byte ") || !strings.Contains(r.err, "more than the memory cap of 1.0 MiB set for this read (opcode APPENDS)") {
		t.Errorf("exit %d, stderr %q", r.code, r.err)
	}
	r = run(t, "", nil, "mem", "diff", "--max-memory", "1MiB", p, p)
	if r.code != 2 || !strings.Contains(r.err, "more than the memory cap of 1.0 MiB") {
		t.Errorf("diff: exit %d, stderr %q", r.code, r.err)
	}
	r = run(t, "", nil, "mem", "--max-memory", "0", p)
	if r.code != 2 || !strings.Contains(r.err, `--max-memory: want a size such as 2GiB, 512MB or a byte count, got "0"`) {
		t.Errorf("exit %d, stderr %q", r.code, r.err)
	}
}
