package cli

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// input is one log to scan.
type input struct {
	name string // as shown in reports; "-" is standard input
	path string // "" for standard input
}

// expandInputs turns the command line into inputs: "-" is standard input,
// a directory stands for every regular file below it (hidden ones skipped),
// in name order.
func expandInputs(args []string) ([]input, error) {
	var out []input
	for _, a := range args {
		if a == "-" {
			out = append(out, input{name: "-"})
			continue
		}
		st, err := os.Stat(a)
		if err != nil {
			return nil, usageErr("%s: %v", a, unwrapPath(err))
		}
		if !st.IsDir() {
			out = append(out, input{name: a, path: a})
			continue
		}
		var files []string
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p != a && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, usageErr("%s: %v", a, unwrapPath(err))
		}
		sort.Strings(files)
		if len(files) == 0 {
			return nil, usageErr("%s: directory holds no files", a)
		}
		for _, f := range files {
			out = append(out, input{name: f, path: f})
		}
	}
	return out, nil
}

func unwrapPath(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}

// openInput opens one input, decompressing gzip transparently. Unless
// allowBinary, a file whose first 8 KiB hold a NUL byte is refused: it is
// not a log, and scanning it would only produce noise.
func openInput(in input, stdin io.Reader, allowBinary bool, prog *progress) (io.Reader, func() error, error) {
	var r io.Reader = stdin
	closeFn := func() error { return nil }
	if in.path != "" {
		f, err := os.Open(in.path)
		if err != nil {
			return nil, nil, usageErr("%s: %v", in.name, unwrapPath(err))
		}
		r, closeFn = prog.reader(f), f.Close
	}
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := peekHead(br)
	if err != nil {
		closeFn()
		return nil, nil, usageErr("%s: %v", in.name, err)
	}
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			closeFn()
			return nil, nil, usageErr("%s: not a valid gzip file: %v", in.name, err)
		}
		return nulSpace{&gzipErrReader{zr, in.name}}, closeFn, nil
	}
	if !allowBinary && looksPickle(head) {
		closeFn()
		return nil, nil, usageErr("%s: a Python pickle, not a log; if it is a PyTorch memory snapshot, read it with: gpudx mem %s", in.name, in.name)
	}
	if !allowBinary && looksBinary(head) {
		closeFn()
		return nil, nil, usageErr("%s: looks like a binary file (NUL bytes in its first 8 KiB), not a log; use --binary to scan it anyway", in.name)
	}
	return nulSpace{br}, closeFn, nil
}

// nulSpace reads NUL bytes as spaces: a binary file scanned with --binary
// (or a log with NULs past its first 8 KiB, or a gzip one) must not put
// them into the text it prints, and no pattern looks for them.
type nulSpace struct{ r io.Reader }

func (n nulSpace) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	for b := p[:k]; ; {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			break
		}
		b[i] = ' '
		b = b[i+1:]
	}
	return k, err
}

// gzipErrReader names the file in decompression errors.
type gzipErrReader struct {
	r    io.Reader
	name string
}

func (g *gzipErrReader) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: corrupt gzip data: %w", g.name, err)
	}
	return n, err
}

// peekHead returns the first 8 KiB of br (less for a shorter input)
// without consuming them.
func peekHead(br *bufio.Reader) ([]byte, error) {
	head, err := br.Peek(8 << 10)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, err
	}
	return head, nil
}

// looksPickle: pickles of protocol 2 and later start with PROTO (0x80) and
// the protocol number.
func looksPickle(head []byte) bool {
	return len(head) >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5
}

// looksBinary: a NUL byte in the head means the input is not text.
func looksBinary(head []byte) bool { return bytes.IndexByte(head, 0) >= 0 }
