// Package jobrun runs a job under gpudx: its output passes through to
// gpudx's own streams unchanged and as it comes, while a copy, merged line
// by line, is diagnosed as it streams (memory bounded by the knowledge
// base, not by the output), kept in a bounded tail, and optionally written
// whole to a log file.
package jobrun

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Options say what to run and where its output goes.
type Options struct {
	Args   []string  // the command and its arguments
	Stdin  io.Reader // given to the command as it is (nil: no input)
	Stdout io.Writer // the command's standard output, passed through
	Stderr io.Writer // and its standard error
	// Lines, when not nil, receives the merged output as whole lines
	// (each ending in '\n'), one stream's lines in their order; a line
	// is never split by the other stream's. It is written from one
	// goroutine at a time.
	Lines io.Writer
	// TailBytes bounds the tail kept in memory (0: DefaultTail).
	TailBytes int
	// Signals are forwarded to the command (to its process group) as they
	// arrive; the caller decides which (signal.Notify).
	Signals <-chan os.Signal
	// Foreground keeps the command in gpudx's process group, for a
	// command whose standard input is a terminal: in a group of its own
	// it would be stopped (SIGTTIN) when it read from it. The signals a
	// terminal or a shell sends the whole group (SIGINT, SIGQUIT, SIGHUP)
	// then reach the command directly and are not forwarded again; only
	// SIGTERM, which is sent to one process, is.
	Foreground bool
	// WaitDelay bounds how long output is still read after the command
	// exits, when a process it started keeps the pipes open (0: 5s).
	WaitDelay time.Duration
}

// DefaultTail is the tail kept when Options.TailBytes is 0.
const DefaultTail = 64 << 10

// maxPending bounds a line still without its '\n' (a progress bar that
// redraws with '\r'): past it, the piece is passed on as a line of its own.
const maxPending = 64 << 10

// Result is how the command ended and what it printed.
type Result struct {
	ExitCode int    // the exit status, or 128+signal when killed by one
	Signal   string // the signal's name when killed by one ("killed")
	// Stdout and Stderr count the bytes each stream passed through.
	Stdout, Stderr int64
	Tail           []byte // the last TailBytes bytes of merged output, from a line start
	Duration       time.Duration
}

// StartError is a command that could not be started; Code is the status
// shells use: 127 for a command not found, 126 for one found but not
// runnable.
type StartError struct {
	Code int
	Err  error
}

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Run runs the command to its end. The error is a *StartError when it
// could not be started, or a write error of Lines (the command is then
// still run to its end, its output still passed through).
func Run(o Options) (*Result, error) {
	if len(o.Args) == 0 {
		return nil, &StartError{127, errors.New("no command given")}
	}
	tailMax := o.TailBytes
	if tailMax <= 0 {
		tailMax = DefaultTail
	}
	m := &merger{lines: o.Lines, tail: newRing(tailMax)}
	outW := &stream{pass: o.Stdout, m: m}
	errW := &stream{pass: o.Stderr, m: m}
	cmd := exec.Command(o.Args[0], o.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, outW, errW
	if !o.Foreground {
		setGroup(cmd)
	}
	cmd.WaitDelay = o.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 5 * time.Second
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		return nil, &StartError{code, err}
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-o.Signals:
				if !o.Foreground {
					signalGroup(cmd.Process, s)
				} else if s == syscall.SIGTERM {
					cmd.Process.Signal(s)
				}
			case <-done:
				return
			}
		}
	}()
	waitErr := cmd.Wait()
	close(done)
	outW.flush()
	errW.flush()
	res := &Result{Stdout: outW.n, Stderr: errW.n, Tail: m.tail.bytes(), Duration: time.Since(start)}
	res.ExitCode, res.Signal = status(cmd.ProcessState)
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return res, waitErr
	}
	return res, m.err
}

// status is the exit status a shell would give: the code, or 128+signal.
func status(ps *os.ProcessState) (int, string) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal().String()
	}
	return ps.ExitCode(), ""
}

// stream is one of the command's output streams: every write passes
// through at once, and its complete lines go to the merger.
type stream struct {
	pass    io.Writer
	m       *merger
	pending []byte
	n       int64
	passErr error
}

func (s *stream) Write(p []byte) (int, error) {
	n := len(p)
	s.n += int64(n)
	if s.pass != nil && s.passErr == nil {
		// A closed terminal must not kill the job: the output is still
		// diagnosed and logged.
		_, s.passErr = s.pass.Write(p)
	}
	if len(s.pending) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.hold(p)
			return n, nil
		}
		s.pending = append(s.pending, p[:i+1]...)
		s.m.line(s.pending)
		s.pending = s.pending[:0]
		p = p[i+1:]
	}
	// Every whole line of the write at once: lines of one stream stay
	// whole and in order, and the merger is not called per line.
	if j := bytes.LastIndexByte(p, '\n'); j >= 0 {
		s.m.line(p[:j+1])
		p = p[j+1:]
	}
	s.hold(p)
	return n, nil
}

// hold keeps the start of a line until its end comes.
func (s *stream) hold(p []byte) {
	s.pending = append(s.pending, p...)
	if len(s.pending) >= maxPending {
		s.flush()
	}
}

// flush passes on a last line without '\n', ending it.
func (s *stream) flush() {
	if len(s.pending) == 0 {
		return
	}
	s.pending = append(s.pending, '\n')
	s.m.line(s.pending)
	s.pending = s.pending[:0]
}

// merger takes whole lines from both streams, one at a time.
type merger struct {
	mu    sync.Mutex
	lines io.Writer
	tail  *ring
	err   error
}

// line takes one or more whole lines.
func (m *merger) line(l []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tail.write(l)
	if m.lines != nil && m.err == nil {
		_, m.err = m.lines.Write(l)
	}
}

// ring keeps the last n bytes written.
type ring struct {
	buf  []byte
	at   int  // where the next byte goes
	full bool // buf has wrapped
}

func newRing(n int) *ring { return &ring{buf: make([]byte, n)} }

func (r *ring) write(p []byte) {
	if len(p) >= len(r.buf) {
		copy(r.buf, p[len(p)-len(r.buf):])
		r.at, r.full = 0, true
		return
	}
	n := copy(r.buf[r.at:], p)
	if n < len(p) {
		copy(r.buf, p[n:])
		r.full = true
	}
	r.at = (r.at + len(p)) % len(r.buf)
	if r.at == 0 && len(p) > 0 {
		r.full = true
	}
}

// bytes returns the kept bytes from the first whole line on.
func (r *ring) bytes() []byte {
	if !r.full {
		return append([]byte(nil), r.buf[:r.at]...)
	}
	out := append(append([]byte(nil), r.buf[r.at:]...), r.buf[:r.at]...)
	if i := bytes.IndexByte(out, '\n'); i >= 0 && i+1 < len(out) {
		out = out[i+1:]
	}
	return out
}
