//go:build !unix

package main

import "os"

// maxRSS is not available here.
func maxRSS(*os.ProcessState) int64 { return 0 }
