package web

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"log"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gpudx/gpudx/facts"
	"github.com/gpudx/gpudx/internal/memview"
	"github.com/gpudx/gpudx/internal/service"
	"github.com/gpudx/gpudx/memory"
	"github.com/gpudx/gpudx/snapshot"
)

// memoryBody is the snapshot form.
type memoryBody struct {
	Limit                     string
	Request, Capacity, Device string
	Error                     string
}

// Form fields of the snapshot form.
const (
	fieldSnapshot = "snapshot"
	fieldRequest  = "request"
	fieldCapacity = "capacity"
	fieldDevice   = "device"
)

func (h *handler) memoryForm(w http.ResponseWriter, r *http.Request) {
	l := chooseLang(w, r, "")
	h.renderMemoryForm(w, r, l, http.StatusOK, memoryBody{})
}

func (h *handler) renderMemoryForm(w http.ResponseWriter, r *http.Request, l string, status int, b memoryBody) {
	p := h.newPage(r, l, tr(l, "mem_title"), "mem")
	b.Limit = limitText(l, h.opt.MaxSnapshotBytes)
	p.Body = b
	h.render(w, status, "memory", p)
}

// snapForm is a posted snapshot form. The snapshot is read as its part
// streams in, so the options may arrive before or after it.
type snapForm struct {
	memoryBody
	lang  string
	name  string
	snap  *snapshot.Snapshot
	rep   *memory.Report
	asked memory.Options // the options rep was analyzed with
}

func (h *handler) memory(w http.ResponseWriter, r *http.Request) {
	maxBody := h.opt.MaxSnapshotBytes + formSlack
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	f, err := h.readSnapForm(r)
	l := chooseLang(w, r, f.lang)
	if err != nil {
		if r.Context().Err() != nil {
			return
		}
		h.snapError(w, r, l, err, f.name, maxBody)
		return
	}
	opt, msg := memOptions(f.memoryBody, l)
	if msg == "" && f.snap == nil {
		msg = tr(l, "err_nosnap")
	}
	if msg == "" && opt.Request > 0 && opt.RequestDevice >= 0 && !hasDevice(f.snap, opt.RequestDevice) {
		msg = tr(l, "err_nodev", opt.RequestDevice, devicesOf(f.snap))
	}
	if msg != "" {
		b := f.memoryBody
		b.Error = msg
		h.renderMemoryForm(w, r, l, http.StatusBadRequest, b)
		return
	}
	rep := f.rep
	if opt != f.asked {
		// The options came after the file.
		rep = memory.Analyze(f.snap, opt)
	}
	var page bytes.Buffer
	if err := safely(func() error {
		return memview.HTML(&page, rep, f.snap, memview.Options{Lang: l, Name: f.name})
	}); err != nil {
		log.Printf("web: memory page: %v", err)
		h.fail(w, r, l, http.StatusInternalServerError, "mem", tr(l, "e500_title"), tr(l, "e500", err.Error()), nil)
		return
	}
	h.writeMemoryPage(w, r, l, page.Bytes())
}

// safely turns a panic of the memory view into an error: a hostile
// snapshot must not take the server down.
func safely(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errors.New("internal error writing the memory page")
			log.Printf("web: memory page panicked: %v", p)
		}
	}()
	return f()
}

// readSnapForm reads the snapshot form, handing the snapshot part to the
// service as it streams in.
func (h *handler) readSnapForm(r *http.Request) (snapForm, error) {
	f := snapForm{}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return f, errMedia
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return f, err
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return f, nil
		}
		if err != nil {
			return f, err
		}
		var b []byte
		switch part.FormName() {
		case fieldSnapshot:
			f.name = baseName(part.FileName())
			err = h.readSnapshot(r, part, &f)
		case fieldRequest:
			b, err = readField(part, fieldRequest, 64)
			f.Request = strings.TrimSpace(string(b))
		case fieldCapacity:
			b, err = readField(part, fieldCapacity, 64)
			f.Capacity = strings.TrimSpace(string(b))
		case fieldDevice:
			b, err = readField(part, fieldDevice, 64)
			f.Device = strings.TrimSpace(string(b))
		case fieldLang:
			b, err = readField(part, fieldLang, 16)
			f.lang = string(b)
		}
		part.Close()
		if err != nil {
			return f, err
		}
	}
}

// readSnapshot reads the snapshot part, analyzed with the options read so
// far. An empty file input (no file chosen) leaves f.snap nil.
func (h *handler) readSnapshot(r *http.Request, part io.Reader, f *snapForm) error {
	lr := &limitedReader{r: part, left: h.opt.MaxSnapshotBytes}
	br := bufio.NewReaderSize(lr, 64<<10)
	head, err := br.Peek(2)
	if len(head) == 0 {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		return err
	}
	// A gzip file is decoded here, not by the snapshot reader, so that the
	// limit holds after decompression too: a small file could expand
	// without bound.
	in, dec := io.Reader(br), (*limitedReader)(nil)
	gz := len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b
	if gz {
		zr, err := gzip.NewReader(br)
		if err != nil {
			if lr.over {
				return &errTooLarge{fieldSnapshot}
			}
			return err
		}
		dec = &limitedReader{r: zr, left: h.opt.MaxSnapshotBytes}
		in = dec
	}
	over := func() bool { return lr.over || (dec != nil && dec.over) }
	opt, _ := memOptions(f.memoryBody, "en") // a bad option is reported after the read
	snap, rep, err := h.svc.Snapshot(r.Context(), in, opt)
	if over() {
		return &errTooLarge{fieldSnapshot}
	}
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return mb
	}
	if err != nil {
		return err
	}
	// Whatever follows the pickle counts against the limit too.
	if _, err := io.Copy(io.Discard, in); over() {
		return &errTooLarge{fieldSnapshot}
	} else if err != nil {
		return err
	}
	if gz {
		rep.Info.Format += ", gzip" // as gpudx mem says of a gzip file
	}
	f.snap, f.rep, f.asked = snap, rep, opt
	return nil
}

// limitedReader fails past left bytes and remembers that it did: the
// snapshot reader folds read errors into its own message.
type limitedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells a file of exactly the limit from a longer one.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			l.over = true
			return 0, &errTooLarge{fieldSnapshot}
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// memOptions parses the form's options as gpudx mem parses its flags; msg
// says what is wrong in language l.
func memOptions(b memoryBody, l string) (opt memory.Options, msg string) {
	opt.RequestDevice = -1
	size := func(label, v string) (uint64, string) {
		if v == "" {
			return 0, ""
		}
		n, ok := facts.ParseSize(v)
		if !ok || n < 1 || n > 1<<62 {
			return 0, tr(l, "err_size", tr(l, label), v)
		}
		return uint64(n), ""
	}
	if opt.Request, msg = size("req_label", b.Request); msg != "" {
		return opt, msg
	}
	if opt.Capacity, msg = size("cap_label", b.Capacity); msg != "" {
		return opt, msg
	}
	if b.Device != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(b.Device, "cuda:"))
		if err != nil || n < 0 {
			return opt, tr(l, "err_device", b.Device)
		}
		if opt.Request == 0 {
			return opt, tr(l, "err_devreq")
		}
		opt.RequestDevice = n
	}
	return opt, ""
}

func hasDevice(s *snapshot.Snapshot, dev int) bool {
	for i := range s.Segments {
		if s.Segments[i].Device == dev {
			return true
		}
	}
	return false
}

func devicesOf(s *snapshot.Snapshot) string {
	var ds []int
	for i := range s.Segments {
		if d := s.Segments[i].Device; !slices.Contains(ds, d) {
			ds = append(ds, d)
		}
	}
	slices.Sort(ds)
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = "cuda:" + strconv.Itoa(d)
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, ", ")
}

// snapError answers a snapshot form that could not be read.
func (h *handler) snapError(w http.ResponseWriter, r *http.Request, l string, err error, name string, maxBody int64) {
	var big *errTooLarge
	var mb *http.MaxBytesError
	var inv *service.InvalidError
	switch {
	case errors.As(err, &big) && big.which == fieldSnapshot:
		h.fail(w, r, l, http.StatusRequestEntityTooLarge, "mem", tr(l, "e413_title"), tr(l, "e413_snap", limitText(l, h.opt.MaxSnapshotBytes)), nil)
	case errors.As(err, &mb):
		h.fail(w, r, l, http.StatusRequestEntityTooLarge, "mem", tr(l, "e413_title"), tr(l, "e413_form", limitText(l, maxBody)), nil)
	case errors.As(err, &inv):
		h.fail(w, r, l, http.StatusUnprocessableEntity, "mem", tr(l, "esnap_title"), name+tr(l, "colon")+inv.Msg, &link{Href: "/memory", Text: tr(l, "bar_new")})
	case errors.Is(err, errMedia):
		h.fail(w, r, l, http.StatusUnsupportedMediaType, "mem", tr(l, "ebad_title"), tr(l, "emedia"), nil)
	default:
		log.Printf("web: snapshot: %v", err)
		h.fail(w, r, l, http.StatusBadRequest, "mem", tr(l, "ebad_title"), tr(l, "eform", err.Error()), nil)
	}
}

// writeMemoryPage sends memview's page with a bar back to the rest of the
// site. memview writes its style and script inline; the page's policy
// allows exactly those by hash, and nothing else inline.
func (h *handler) writeMemoryPage(w http.ResponseWriter, r *http.Request, l string, pg []byte) {
	var bar bytes.Buffer
	p := h.newPage(r, l, "", "mem")
	if err := pages[l]["membar"].ExecuteTemplate(&bar, "membar", p); err != nil {
		log.Printf("web: memory bar: %v", err)
	} else {
		pg = insertAfter(pg, "<body>", bar.Bytes())
		pg = insertBefore(pg, "</head>", []byte(`<link rel="stylesheet" href="`+staticURL("bar.css")+`">`+"\n"))
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", memoryCSP(pg))
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(pg)
}

// memoryCSP is the page policy plus the hashes of pg's inline scripts and
// styles. memview's template puts its data into the script as JSON, which
// html/template escapes so that "</script" cannot appear before the end.
func memoryCSP(pg []byte) string {
	scripts := inlineHashes(pg, "<script>", "</script>")
	if len(scripts) == 0 {
		scripts = []string{"'none'"}
	}
	styles := append([]string{"'self'"}, inlineHashes(pg, "<style>", "</style>")...)
	return pageCSP + "; script-src " + strings.Join(scripts, " ") + "; style-src " + strings.Join(styles, " ")
}

// inlineHashes are the CSP hashes of the text between each open and end.
func inlineHashes(pg []byte, open, end string) []string {
	var out []string
	rest := pg
	for {
		i := bytes.Index(rest, []byte(open))
		if i < 0 {
			break
		}
		rest = rest[i+len(open):]
		j := bytes.Index(rest, []byte(end))
		if j < 0 {
			break
		}
		sum := sha256.Sum256(rest[:j])
		out = append(out, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
		rest = rest[j+len(end):]
	}
	return out
}

func insertAfter(pg []byte, mark string, add []byte) []byte {
	i := bytes.Index(pg, []byte(mark))
	if i < 0 {
		return pg
	}
	i += len(mark)
	return slices.Concat(pg[:i], []byte("\n"), add, pg[i:])
}

func insertBefore(pg []byte, mark string, add []byte) []byte {
	i := bytes.Index(pg, []byte(mark))
	if i < 0 {
		return pg
	}
	return slices.Concat(pg[:i], add, pg[i:])
}
