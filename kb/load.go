package kb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// MaxEntryFileSize bounds one entry file; anything larger is not an entry.
const MaxEntryFileSize = 4 << 20

// Base is a set of entries with unique ids, kept sorted by id.
type Base struct {
	entries []*Entry
	byID    map[string]int
}

// NewBase returns an empty Base.
func NewBase() *Base { return &Base{byID: map[string]int{}} }

// Add puts e into the base. If an entry with the same id was there, e
// replaces it and the old entry is returned.
func (b *Base) Add(e *Entry) (replaced *Entry) {
	if i, ok := b.byID[e.ID]; ok {
		old := b.entries[i]
		b.entries[i] = e
		return old
	}
	i := sort.Search(len(b.entries), func(i int) bool { return b.entries[i].ID >= e.ID })
	b.entries = append(b.entries, nil)
	copy(b.entries[i+1:], b.entries[i:])
	b.entries[i] = e
	for j := i; j < len(b.entries); j++ {
		b.byID[b.entries[j].ID] = j
	}
	return nil
}

// Entries returns the entries sorted by id. The slice must not be modified.
func (b *Base) Entries() []*Entry { return b.entries }

// Len returns the number of entries.
func (b *Base) Len() int { return len(b.entries) }

// Get returns the entry with the given id, or nil.
func (b *Base) Get(id string) *Entry {
	if i, ok := b.byID[id]; ok {
		return b.entries[i]
	}
	return nil
}

// LoadError is a file that could not be read as an entry.
type LoadError struct {
	Path string
	Err  error
}

func (e *LoadError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *LoadError) Unwrap() error { return e.Err }

// Parse decodes one entry file, detecting its format: gpudx's own, or a
// deadends.dev canon. origin is recorded in the entry.
func Parse(origin string, data []byte) (*Entry, error) {
	if len(data) > MaxEntryFileSize {
		return nil, fmt.Errorf("file is %d bytes, more than the %d an entry may have", len(data), MaxEntryFileSize)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", jsonErr(data, err))
	}
	var e *Entry
	if isCanon(top) {
		var err error
		if e, err = fromCanon(data); err != nil {
			return nil, err
		}
	} else {
		e = &Entry{}
		if err := json.Unmarshal(data, e); err != nil {
			return nil, jsonErr(data, err)
		}
		e.Format = FormatGpudx
		e.inlineZh()
	}
	if e.ID == "" {
		return nil, errors.New("entry has no id")
	}
	e.Origin = origin
	return e, nil
}

// jsonErr adds a line number to JSON syntax errors.
func jsonErr(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Errorf("line %d: %w", line, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%s: want %s, got JSON %s", te.Field, te.Type, te.Value)
	}
	return err
}

// skipDir reports whether a directory is not part of the entry tree: hidden
// ones and those starting with '_' (the registry lives in _registry).
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// ReadFS reads every *.json entry file below root in fsys, skipping
// hidden directories and those starting with '_'. Paths are prefix+path.
// A file that cannot be read, or is larger than MaxEntryFileSize, is
// reported in the ErrorList err holds; the others are read.
func ReadFS(fsys fs.FS, root, prefix string) (files []File, err error) {
	var errs ErrorList
	err = fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, &LoadError{prefix + p, err})
			return nil
		}
		if d.IsDir() {
			if p != root && skipDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		if path.Ext(p) != ".json" {
			return nil
		}
		data, err := readLimited(fsys, p)
		if err != nil {
			errs = append(errs, &LoadError{prefix + p, err})
			return nil
		}
		files = append(files, File{Path: prefix + p, Data: data})
		return nil
	})
	if err != nil {
		errs = append(errs, &LoadError{prefix + root, err})
	}
	return files, errs.Err()
}

// LoadFS reads every entry file below root in fsys (see ReadFS). Files
// that cannot be read or parsed are reported in the ErrorList err holds;
// the rest load.
func LoadFS(fsys fs.FS, root, prefix string) ([]*Entry, error) {
	return parseAll(ReadFS(fsys, root, prefix))
}

func parseAll(files []File, err error) ([]*Entry, error) {
	var errs ErrorList
	if err != nil {
		errs = err.(ErrorList)
	}
	out := make([]*Entry, 0, len(files))
	for _, f := range files {
		e, err := Parse(f.Path, f.Data)
		if err != nil {
			errs = append(errs, &LoadError{f.Path, err})
			continue
		}
		out = append(out, e)
	}
	return out, errs.Err()
}

func readLimited(fsys fs.FS, p string) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > MaxEntryFileSize {
		return nil, fmt.Errorf("file is %d bytes, more than the %d an entry may have", st.Size(), MaxEntryFileSize)
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(f)
	return buf.Bytes(), err
}

// ReadPath reads one entry file (any extension: the seed entry is a .txt)
// or, for a directory, every entry file below it (see ReadFS).
func ReadPath(p string) ([]File, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, ErrorList{&LoadError{p, err}}
	}
	if st.IsDir() {
		return ReadFS(os.DirFS(p), ".", dirPrefix(p))
	}
	data, err := readLimited(os.DirFS(filepath.Dir(p)), filepath.Base(p))
	if err != nil {
		return nil, ErrorList{&LoadError{p, err}}
	}
	return []File{{Path: p, Data: data}}, nil
}

// LoadPath reads entries from a file or a directory (see ReadPath); err
// is an ErrorList.
func LoadPath(p string) ([]*Entry, error) {
	return parseAll(ReadPath(p))
}

// dirPrefix is what a directory's name contributes to the paths of the
// files below it.
func dirPrefix(dir string) string {
	dir = filepath.ToSlash(filepath.Clean(dir))
	if dir == "." {
		return ""
	}
	return strings.TrimSuffix(dir, "/") + "/"
}
