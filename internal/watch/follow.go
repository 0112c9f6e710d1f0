package watch

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Batch is what a source read: whole lines, each ending in '\n'.
type Batch struct {
	Source string
	Lines  []byte
	Reset  bool   // the source starts over (rotated, truncated) before Lines
	End    bool   // the source has ended
	Note   string // something to tell the user (rotated, truncated, exited)
}

// Follower reads sources and sends what they read on Out.
type Follower struct {
	Out  chan<- Batch
	Poll time.Duration // how often files and directories are looked at
}

// maxLine bounds a line still without its '\n': past it, the piece is
// passed on as a line of its own.
const maxLine = 64 << 10

// lineBuf cuts reads into whole lines.
type lineBuf struct {
	pending []byte
	tr      func([]byte) []byte // per line, may drop it (nil)
}

// add returns the whole lines of p with what came before it.
func (b *lineBuf) add(p []byte) []byte {
	var out []byte
	if len(b.pending) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b.hold(p)
			if len(b.pending) >= maxLine {
				return b.flush()
			}
			return nil
		}
		out = append(b.pending, p[:i+1]...)
		b.pending = nil
		p = p[i+1:]
	}
	if j := bytes.LastIndexByte(p, '\n'); j >= 0 {
		out = append(out, p[:j+1]...)
		p = p[j+1:]
	}
	b.hold(p)
	if len(b.pending) >= maxLine {
		out = append(out, b.flush()...)
	}
	return b.transform(out)
}

func (b *lineBuf) hold(p []byte) { b.pending = append(b.pending, p...) }

// flush ends the line being held.
func (b *lineBuf) flush() []byte {
	if len(b.pending) == 0 {
		return nil
	}
	out := append(b.pending, '\n')
	b.pending = nil
	return b.transform(out)
}

func (b *lineBuf) transform(lines []byte) []byte {
	if b.tr == nil || len(lines) == 0 {
		return lines
	}
	var out []byte
	for len(lines) > 0 {
		i := bytes.IndexByte(lines, '\n')
		if l := b.tr(lines[:i]); l != nil {
			out = append(append(out, l...), '\n')
		}
		lines = lines[i+1:]
	}
	return out
}

func (f *Follower) send(ctx context.Context, b Batch) bool {
	if len(b.Lines) == 0 && !b.Reset && !b.End && b.Note == "" {
		return true
	}
	select {
	case f.Out <- b:
		return true
	case <-ctx.Done():
		return false
	}
}

// Reader follows r (standard input, a command's output, a FIFO) to its
// end, sending what it reads as it comes.
func (f *Follower) Reader(ctx context.Context, name string, r io.Reader, tr func([]byte) []byte) error {
	lb := lineBuf{tr: tr}
	err := f.read(ctx, name, r, &lb)
	f.send(ctx, Batch{Source: name, Lines: lb.flush(), End: true})
	return err
}

// read sends what r holds, whole lines, until its end; a last line
// without '\n' is left in lb.
func (f *Follower) read(ctx context.Context, name string, r io.Reader, lb *lineBuf) error {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 && !f.send(ctx, Batch{Source: name, Lines: lb.add(buf[:n])}) {
			return ctx.Err()
		}
		if err != nil {
			if err == io.EOF || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return err
		}
	}
}

// File follows the file at path as tail -F does: from its end (or its
// start with fromStart) and on as it grows; when the path names another
// file (rotated: renamed or removed and created again) the old file is
// read to its end and the new one from its start; when the file shrinks
// (truncated) it is read again from its start. A path that does not exist
// yet is waited for. onOpen, if not nil, is told each file opened.
func (f *Follower) File(ctx context.Context, path string, fromStart bool, tr func([]byte) []byte, onOpen func(os.FileInfo)) error {
	var (
		cur   *os.File
		curFi os.FileInfo
		off   int64
		lb    = lineBuf{tr: tr}
		buf   = make([]byte, 64<<10)
		first = true
	)
	defer func() {
		if cur != nil {
			cur.Close()
		}
	}()
	drain := func() bool {
		for cur != nil {
			n, err := cur.ReadAt(buf, off)
			off += int64(n)
			if n > 0 && !f.send(ctx, Batch{Source: path, Lines: lb.add(buf[:n])}) {
				return false
			}
			if err != nil || n == 0 {
				return true
			}
		}
		return true
	}
	open := func(atEnd bool, note string) bool {
		fh, err := os.Open(path)
		if err != nil {
			return true // gone again: looked for on the next round
		}
		fi, err := fh.Stat()
		if err != nil {
			fh.Close()
			return true
		}
		cur, curFi, off = fh, fi, 0
		if atEnd {
			off = fi.Size()
		}
		if onOpen != nil {
			onOpen(fi)
		}
		return f.send(ctx, Batch{Source: path, Reset: !first, Note: note})
	}
	tick := time.NewTicker(f.Poll)
	defer tick.Stop()
	for {
		if cur == nil {
			if !open(first && !fromStart, "") {
				return ctx.Err()
			}
			if cur != nil {
				first = false
			}
		}
		if !drain() {
			return ctx.Err()
		}
		if fi, err := os.Stat(path); err == nil && cur != nil {
			switch {
			case !os.SameFile(fi, curFi):
				// Rotated: what the old file still got, then the new one.
				if !drain() || !f.send(ctx, Batch{Source: path, Lines: lb.flush()}) {
					return ctx.Err()
				}
				cur.Close()
				cur = nil
				if !open(false, "rotated: following the new file") {
					return ctx.Err()
				}
				if !drain() {
					return ctx.Err()
				}
			case fi.Size() < off:
				off, lb.pending = 0, nil
				if !f.send(ctx, Batch{Source: path, Reset: true, Note: "truncated: reading it again from its start"}) {
					return ctx.Err()
				}
				if !drain() {
					return ctx.Err()
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// maxDirFiles bounds the files followed in one directory.
const maxDirFiles = 1024

// Dir follows every regular file in dir (not in its subdirectories;
// hidden files skipped): those there at the start from their end (or
// start with fromStart), those created later from their start. A name
// that turns out to be a file already followed (rotated into a new name)
// is not read again.
func (f *Follower) Dir(ctx context.Context, dir string, fromStart bool) error {
	if st, err := os.Stat(dir); err != nil {
		return err
	} else if !st.IsDir() {
		return &fs.PathError{Op: "watch", Path: dir, Err: errors.New("not a directory")}
	}
	var (
		mu      sync.Mutex
		known   = map[string][]os.FileInfo{} // name -> the files it named, latest last
		absent  = map[string]int{}           // name -> rounds it has been missing
		cancels = map[string]context.CancelFunc{}
		wg      sync.WaitGroup
	)
	defer func() {
		for _, c := range cancels {
			c()
		}
		wg.Wait()
	}()
	first := true
	tick := time.NewTicker(f.Poll)
	defer tick.Stop()
	for {
		des, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		present := map[string]bool{}
		for _, de := range des {
			if strings.HasPrefix(de.Name(), ".") || !de.Type().IsRegular() {
				continue
			}
			p := filepath.Join(dir, de.Name())
			present[p] = true
			if _, ok := cancels[p]; ok || len(cancels) >= maxDirFiles {
				continue
			}
			fi, err := os.Stat(p)
			if err != nil {
				continue
			}
			mu.Lock()
			dup := false
			for _, ks := range known {
				for _, k := range ks {
					dup = dup || os.SameFile(k, fi)
				}
			}
			remember(known, p, fi)
			mu.Unlock()
			if dup {
				cancels[p] = func() {}
				continue
			}
			fctx, cancel := context.WithCancel(ctx)
			cancels[p] = cancel
			wg.Add(1)
			go func(p string, fromStart bool) {
				defer wg.Done()
				f.File(fctx, p, fromStart, nil, func(fi os.FileInfo) {
					mu.Lock()
					remember(known, p, fi)
					mu.Unlock()
				})
			}(p, fromStart || !first)
		}
		for p, c := range cancels {
			if present[p] {
				delete(absent, p)
				continue
			}
			// A rotated name is gone only for a moment; one gone for
			// longer stops being followed, so that memory stays bounded.
			if absent[p]++; absent[p] >= 20 {
				delete(absent, p)
				c()
				delete(cancels, p)
				mu.Lock()
				delete(known, p)
				mu.Unlock()
			}
		}
		first = false
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// remember keeps the last few files a name stood for: a file rotated to
// another name is recognised even after its old name names a new file.
func remember(known map[string][]os.FileInfo, name string, fi os.FileInfo) {
	ks := append(known[name], fi)
	if len(ks) > 4 {
		ks = ks[len(ks)-4:]
	}
	known[name] = ks
}
