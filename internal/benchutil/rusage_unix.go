//go:build unix

package benchutil

import (
	"os"
	"runtime"
	"syscall"
)

// MaxRSS is the child's peak resident set size in bytes.
func MaxRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss) // bytes
	}
	return int64(ru.Maxrss) * 1024 // KiB elsewhere
}
