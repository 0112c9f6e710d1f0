//go:build !unix

package benchutil

import "os"

// MaxRSS is not available here.
func MaxRSS(*os.ProcessState) int64 { return 0 }
