package health

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ReadKmsg reads what the kernel ring buffer holds now from path
// (/dev/kmsg) and returns it as dmesg-style lines; records older than
// since (when set) are left out. The device is read without blocking, so
// it returns at the end of the buffer instead of waiting for new
// records. Reading /dev/kmsg needs CAP_SYSLOG where
// kernel.dmesg_restrict=1.
func ReadKmsg(path string, since time.Time) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var boot time.Time
	if !since.IsZero() {
		if boot, err = bootTime(); err != nil {
			return nil, err
		}
	}
	var out bytes.Buffer
	add := func(rec []byte) {
		line, at, err := KmsgRecord(rec)
		if err != nil || (!since.IsZero() && boot.Add(at).Before(since)) {
			return
		}
		out.Write(line)
	}
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG {
		// A recorded kmsg (a test, a copy): records follow each other.
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		for len(b) > 0 {
			var rec []byte
			rec, b = nextRecord(b)
			add(rec)
		}
		return out.Bytes(), nil
	}
	buf := make([]byte, 16<<10) // the device returns one record per read, at most about 8 KiB
	for {
		n, err := syscall.Read(fd, buf)
		switch {
		case errors.Is(err, syscall.EAGAIN):
			return out.Bytes(), nil
		case errors.Is(err, syscall.EPIPE):
			continue // the ring overwrote the record we were at; go on from the next
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return out.Bytes(), nil
		}
		add(buf[:n])
	}
}

// nextRecord splits off one record and its continuation lines.
func nextRecord(b []byte) (rec, rest []byte) {
	i := 0
	for {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return b, nil
		}
		i += j + 1
		if i >= len(b) || b[i] != ' ' {
			return b[:i], b[i:]
		}
	}
}

// bootTime reads the boot time from /proc/stat's btime.
func bootTime() (time.Time, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, err
			}
			return time.Unix(s, 0), nil
		}
	}
	return time.Time{}, errors.New("/proc/stat has no btime")
}
