//go:build unix

package jobrun

import (
	"os"
	"os/exec"
	"syscall"
)

// setGroup puts the command in a process group of its own: a signal from
// the terminal then reaches gpudx alone, and is forwarded once, to the
// command and the processes it started (as the terminal would).
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func signalGroup(p *os.Process, s os.Signal) {
	if ss, ok := s.(syscall.Signal); ok {
		if syscall.Kill(-p.Pid, ss) == nil {
			return
		}
	}
	p.Signal(s)
}
