package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// KmsgLine turns a record of /dev/kmsg ("6,1234,5678901,-;NVRM: Xid ...",
// the kernel's format: priority, sequence number, microseconds since
// boot, flags, then the message) into the line dmesg prints
// ("[    5.678901] NVRM: Xid ..."). Continuation lines of a record (" KEY=
// value") are dropped; a line in another format is kept as it is.
func KmsgLine(l []byte) []byte {
	if len(l) > 0 && l[0] == ' ' {
		return nil
	}
	semi := bytes.IndexByte(l, ';')
	if semi < 0 {
		return l
	}
	f := bytes.SplitN(l[:semi], []byte(","), 4)
	if len(f) < 3 {
		return l
	}
	for _, x := range f[:3] {
		if _, err := strconv.ParseUint(string(x), 10, 64); err != nil {
			return l
		}
	}
	us, _ := strconv.ParseUint(string(f[2]), 10, 64)
	return append([]byte(fmt.Sprintf("[%5d.%06d] ", us/1e6, us%1e6)), l[semi+1:]...)
}

// Kmsg follows the kernel log. path "" or "auto" reads /dev/kmsg where it
// can be read, else journalctl -k -f; any other path is a recorded or
// fake kmsg stream (a file, followed as it grows, or a FIFO). Records
// already in the kernel's buffer are read with fromStart, else only new
// ones.
func (f *Follower) Kmsg(ctx context.Context, path string, fromStart bool) error {
	name := "kernel log"
	if path == "" || path == "auto" {
		kf, err := os.Open("/dev/kmsg")
		if err == nil {
			return f.kmsgDevice(ctx, name, kf, fromStart)
		}
		if jc, lerr := exec.LookPath("journalctl"); lerr == nil {
			args := []string{"-k", "-f", "-o", "short-monotonic", "--no-pager"}
			if !fromStart {
				args = append(args, "-n", "0")
			}
			return f.Command(ctx, name+" (journalctl)", exec.CommandContext(ctx, jc, args...))
		}
		return fmt.Errorf("the kernel log: /dev/kmsg: %v, and no journalctl", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.Mode()&os.ModeCharDevice != 0 {
		kf, err := os.Open(path)
		if err != nil {
			return err
		}
		return f.kmsgDevice(ctx, path, kf, fromStart)
	}
	if st.Mode()&os.ModeNamedPipe != 0 {
		kf, err := os.Open(path)
		if err != nil {
			return err
		}
		go func() { <-ctx.Done(); kf.Close() }()
		return f.Reader(ctx, path, kf, KmsgLine)
	}
	return f.File(ctx, path, fromStart, KmsgLine, nil)
}

// kmsgDevice reads /dev/kmsg: each read returns one record; EPIPE says
// records were overwritten before they were read, and reading goes on.
func (f *Follower) kmsgDevice(ctx context.Context, name string, kf *os.File, fromStart bool) error {
	defer kf.Close()
	if !fromStart {
		kf.Seek(0, io.SeekEnd)
	}
	go func() { <-ctx.Done(); kf.Close() }()
	buf := make([]byte, 16<<10)
	for {
		n, err := kf.Read(buf)
		if errors.Is(err, syscall.EPIPE) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		lb := lineBuf{tr: KmsgLine}
		rec := buf[:n]
		if n > 0 && rec[n-1] != '\n' {
			rec = append(rec, '\n')
		}
		if !f.send(ctx, Batch{Source: name, Lines: lb.add(rec)}) {
			return ctx.Err()
		}
	}
}

// Command follows a command's standard output and error, merged, until
// it exits (or ctx ends, which kills it).
func (f *Follower) Command(ctx context.Context, name string, cmd *exec.Cmd) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return err
	}
	pw.Close()
	done := make(chan error, 1)
	var lb lineBuf
	go func() { done <- f.read(ctx, name, pr, &lb) }()
	werr := cmd.Wait()
	// The output is read to its end unless a process the command started
	// holds the pipe; then ctx ends it.
	var rerr error
	select {
	case rerr = <-done:
	case <-ctx.Done():
	}
	pr.Close()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	note := "the command exited with status 0"
	if werr != nil {
		note = "the command " + werr.Error()
	}
	f.send(ctx, Batch{Source: name, Lines: lb.flush(), Note: note, End: true})
	return rerr
}
