package mcpserver

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// openPath opens a file an agent named, for a tool argument called arg.
// Paths are refused unless files are allowed (stdio); a relative path is
// taken from gpudx's working directory, and "~/" from $HOME.
func (h *handlers) openPath(arg, path string) (*os.File, string, error) {
	if !h.opt.AllowFiles {
		return nil, "", fmt.Errorf("%s: this server does not read files (it is reached over HTTP and cannot see your disk); send the content instead", arg)
	}
	p := path
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, rest)
		}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, "", fmt.Errorf("%s %q: %v", arg, path, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, "", fmt.Errorf("%s %q: %v", arg, abs, pathErr(err))
	}
	if st.IsDir() {
		return nil, "", fmt.Errorf("%s %q: is a directory; give one file", arg, abs)
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, "", fmt.Errorf("%s %q: %v", arg, abs, pathErr(err))
	}
	return f, abs, nil
}

// pathErr drops the path from an *fs.PathError: the message names it.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// logReader reads a log file: gzip is decompressed; a pickle or binary
// file is refused with what to do instead.
func logReader(f io.Reader, name string) (io.Reader, error) {
	br := bufio.NewReaderSize(f, 64<<10)
	head, err := br.Peek(8 << 10)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: not a valid gzip file: %v", name, err)
		}
		return zr, nil
	case len(head) >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5:
		return nil, fmt.Errorf("%s: a Python pickle, not a log; if it is a PyTorch memory snapshot, call analyze_memory_snapshot with it", name)
	case bytes.IndexByte(head, 0) >= 0:
		return nil, fmt.Errorf("%s: a binary file (NUL bytes in its first 8 KiB), not a log", name)
	}
	return br, nil
}
