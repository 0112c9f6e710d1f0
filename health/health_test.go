package health

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpudx/gpudx/kb"
	"github.com/gpudx/gpudx/knowledge"
)

var (
	kbOnce  sync.Once
	kbAll   []*kb.Entry
	kbError error
)

func entries(t *testing.T) []*kb.Entry {
	t.Helper()
	kbOnce.Do(func() {
		kbAll, kbError = kb.LoadFS(knowledge.FS, ".", "knowledge/")
	})
	if kbError != nil {
		t.Fatal(kbError)
	}
	return kbAll
}

// found is a finding reduced to what the verdict rests on.
type found struct {
	id, gpu       string
	count, events int
	drain         bool
}

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		file    string
		since   string
		repeats int
		drain   bool
		want    []found
		skipped int
	}{
		{file: "healthy.dmesg", want: nil},
		// Xid 79 twice for one event (the Xid line and the "GPU 0000:3b:00.0"
		// line): one finding on one GPU; Xid 43 is info, no drain.
		{file: "xid79.dmesg", drain: true, want: []found{
			{"driver/xid-79-fallen-off-bus", "0000:3b:00", 2, 1, true},
			{"driver/xid-43-channel-stopped", "0000:86:00", 1, 1, false}}},
		// Xid 13's two lines of one event (same timestamp) are one event.
		{file: "xid13-once.dmesg", want: []found{
			{"driver/xid-13-graphics-engine-exception", "0000:cb:00", 2, 1, false}}},
		// Recurs on cb:00, once on 4b:00: only cb:00 drains.
		{file: "xid13-twice.dmesg", drain: true, want: []found{
			{"driver/xid-13-graphics-engine-exception", "0000:cb:00", 2, 2, true},
			{"driver/xid-13-graphics-engine-exception", "0000:4b:00", 1, 1, false}}},
		{file: "xid13-twice.dmesg", repeats: 3, want: []found{
			{"driver/xid-13-graphics-engine-exception", "0000:cb:00", 2, 2, false},
			{"driver/xid-13-graphics-engine-exception", "0000:4b:00", 1, 1, false}}},
		{file: "xid48-journal.log", drain: true, want: []found{
			{"driver/xid-48-double-bit-ecc", "0000:07:00", 1, 1, true},
			{"driver/xid-63-row-remap-recorded", "0000:07:00", 1, 1, false}}},
		// The Xid 48 at 03:41 is before --since: only the Xid 63 is left.
		{file: "xid48-journal.log", since: "2026-11-27T08:00:00Z", skipped: 1, want: []found{
			{"driver/xid-63-row-remap-recorded", "0000:07:00", 1, 1, false}}},
	} {
		t.Run(tt.file+tt.since, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var opt Options
			opt.Repeats = tt.repeats
			if tt.since != "" {
				opt.Since, _ = time.Parse(time.RFC3339, tt.since)
			}
			res, err := Check(entries(t), f, opt)
			if err != nil {
				t.Fatal(err)
			}
			var got []found
			for _, f := range res.Findings {
				got = append(got, found{f.ID, f.GPU, f.Count, f.Events, f.Drain})
			}
			if res.Drain != tt.drain || !slices.Equal(got, tt.want) || res.Skipped != tt.skipped {
				t.Errorf("drain %v skipped %d findings %+v\nwant drain %v skipped %d findings %+v", res.Drain, res.Skipped, got, tt.drain, tt.skipped, tt.want)
			}
		})
	}
}

// TestUnjudged lists Xid numbers no entry covers, without draining.
func TestUnjudged(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "xid-unknown.dmesg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := Check(entries(t), f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Unjudged{{Xid: "8", GPU: "0000:01:00", Count: 2, FirstLine: 2,
		Text: "[20418.551203] NVRM: Xid (PCI:0000:01:00): 8, pid=30112, name=python, Channel 00000010"}}
	if res.Drain || len(res.Findings) != 1 || res.Findings[0].ID != "driver/xid-43-channel-stopped" || !slices.Equal(res.Unjudged, want) {
		t.Errorf("drain %v findings %+v unjudged %+v", res.Drain, res.Findings, res.Unjudged)
	}
}

func TestKmsgRecord(t *testing.T) {
	line, at, err := KmsgRecord([]byte("4,2211,93011003425,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=51877, name=python, GPU has fallen off the bus.\n SUBSYSTEM=pci\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "[93011.003425] NVRM: Xid (PCI:0000:3b:00): 79, pid=51877, name=python, GPU has fallen off the bus.\n"; string(line) != want || at != 93011003425*time.Microsecond {
		t.Errorf("got %q %v", line, at)
	}
	for _, bad := range []string{"no separator", "4,12;text", "4,12,x,-;text"} {
		if _, _, err := KmsgRecord([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestReadKmsg reads a recorded /dev/kmsg stream (records with their
// dictionary lines) as the device would be read.
func TestReadKmsg(t *testing.T) {
	b, err := ReadKmsg(filepath.Join("testdata", "xid79.kmsg"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := "[    4.260475] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024\n" +
		"[93011.003425] NVRM: Xid (PCI:0000:3b:00): 79, pid=51877, name=python, GPU has fallen off the bus.\n" +
		"[93011.003433] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n"
	if string(b) != want {
		t.Errorf("got\n%s\nwant\n%s", b, want)
	}
	if _, err := ReadKmsg(filepath.Join("testdata", "absent"), time.Time{}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("absent file: %v", err)
	}
}

func TestStamp(t *testing.T) {
	for _, tt := range []struct {
		line string
		want string
	}{
		{"2026-11-27T03:41:58+0000 host kernel: NVRM: Xid", "2026-11-27T03:41:58Z"},
		{"2026-11-27T03:41:58.123456+0100 host kernel: x", "2026-11-27T02:41:58.123456Z"},
		{"2026-11-27T03:41:58Z host", "2026-11-27T03:41:58Z"},
		{"[93011.003425] NVRM: Xid", ""},
		{"Nov 27 03:41:58 host kernel: NVRM", ""},
	} {
		got, ok := Stamp([]byte(tt.line))
		if s := got.UTC().Format(time.RFC3339Nano); (ok && s != tt.want) || (!ok && tt.want != "") {
			t.Errorf("%q: %v %v, want %q", tt.line, s, ok, tt.want)
		}
	}
}
