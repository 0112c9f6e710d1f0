package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The bar appears only for a terminal and inputs of 100 MiB or more, and
// says how much was read, how fast, and how long is left.
func TestProgress(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.log")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(200 << 20) // sparse: a size, not 200 MiB of disk
	f.Close()
	small := filepath.Join(dir, "small.log")
	os.WriteFile(small, []byte("x\n"), 0o644)

	var errOut bytes.Buffer
	tty := &IO{Err: &errOut, Terminal: func(any) bool { return true }}
	notty := &IO{Err: &errOut, Terminal: func(any) bool { return false }}
	if newProgress(notty, []input{{big, big}}) != nil {
		t.Error("a bar on a stderr that is not a terminal")
	}
	if newProgress(tty, []input{{small, small}}) != nil {
		t.Error("a bar for a 2-byte input")
	}
	if newProgress(tty, []input{{"-", ""}, {big, big}}) != nil {
		t.Error("a bar with standard input among the inputs (no size)")
	}
	p := newProgress(tty, []input{{big, big}, {small, small}})
	if p == nil || p.total != 200<<20+2 {
		t.Fatalf("progress %+v", p)
	}
	start := time.Unix(1000, 0)
	p.start, p.now = start, func() time.Time { return start.Add(2 * time.Second) }
	if _, err := io.Copy(io.Discard, io.LimitReader(p.reader(bytes.NewReader(make([]byte, 50<<20))), 50<<20)); err != nil {
		t.Fatal(err)
	}
	want := "[#######-----------------------] 50.00 MiB / 200.00 MiB  25.00 MiB/s  ETA 6s"
	if got := p.line(); got != want {
		t.Errorf("line\n got %q\nwant %q", got, want)
	}
	p.run(time.Hour) // the ticker is not what is tested; draw once by hand
	p.draw()
	p.finish()
	out := errOut.String()
	if !strings.Contains(out, "\r"+want) || !strings.HasSuffix(out, "\r"+strings.Repeat(" ", len([]rune(want)))+"\r") {
		t.Errorf("stderr %q: no redraw, or the line was not cleared", out)
	}
}
