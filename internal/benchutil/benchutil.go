// Package benchutil holds what the benchmark programs under bench/ share:
// reading a size argument and a child process's peak memory.
package benchutil

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ParseSize reads "1GB", "50MB", "2GiB", "100MiB", "4096" (bytes); K, M and
// G alone are powers of 1024.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
	}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("bad size %q (want e.g. 50MB, 1GB, 2GiB)", s)
	}
	return int64(v * mult), nil
}

// Dirs makes a temporary directory for a benchmark's scratch files (the
// built binary) and returns it with the directory for its data: keep when
// given (created if needed, kept afterwards), else the temporary one.
// cleanup removes the temporary directory.
func Dirs(name, keep string) (tmp, data string, cleanup func(), err error) {
	tmp, err = os.MkdirTemp("", "gpudx-bench-"+name+"-")
	if err != nil {
		return "", "", nil, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	if keep == "" {
		return tmp, tmp, cleanup, nil
	}
	if err := os.MkdirAll(keep, 0o755); err != nil {
		cleanup()
		return "", "", nil, err
	}
	return tmp, keep, cleanup, nil
}
