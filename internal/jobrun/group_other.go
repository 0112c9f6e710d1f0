//go:build !unix

package jobrun

import (
	"os"
	"os/exec"
)

func setGroup(*exec.Cmd) {}

func signalGroup(p *os.Process, s os.Signal) { p.Signal(s) }
