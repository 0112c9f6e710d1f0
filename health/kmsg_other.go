//go:build !linux

package health

import (
	"errors"
	"time"
)

// ReadKmsg is Linux only.
func ReadKmsg(path string, since time.Time) ([]byte, error) {
	return nil, errors.New(path + ": the kernel log device is read on Linux only")
}
