package benchutil

import (
	"os"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1GB": 1e9, "50MB": 50e6, "2GiB": 2 << 30, "100MiB": 100 << 20, "4096": 4096, "1.5GB": 15e8,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GB", "-1MB", "x"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q): no error", in)
		}
	}
}

// Dirs keeps the data directory it was given and removes only its own.
func TestDirs(t *testing.T) {
	keep := t.TempDir() + "/data"
	tmp, data, cleanup, err := Dirs("t", keep)
	if err != nil || data != keep || tmp == keep {
		t.Fatalf("%q %q %v", tmp, data, err)
	}
	cleanup()
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temporary dir left: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("kept dir gone: %v", err)
	}
	tmp, data, cleanup, err = Dirs("t", "")
	if err != nil || data != tmp {
		t.Fatalf("%q %q %v", tmp, data, err)
	}
	cleanup()
}
