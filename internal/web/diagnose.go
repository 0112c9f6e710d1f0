package web

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"log"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"

	"github.com/gpudx/gpudx/diagnose"
	"github.com/gpudx/gpudx/internal/service"
)

// formBody is the log form: empty on the start page, holding what was sent
// on a form that failed or under a diagnosis.
type formBody struct {
	ID    string // the form's id ("diag", or "again" under a result)
	Log   string
	Env   string
	Limit string
	Error string
	Big   bool // the log came from a file and is not echoed
}

func (h *handler) index(w http.ResponseWriter, r *http.Request) {
	l := chooseLang(w, r, "")
	p := h.newPage(r, l, tr(l, "diag_title"), "diag")
	p.Body = formBody{ID: "diag", Limit: limitText(l, h.opt.MaxLogBytes)}
	h.render(w, http.StatusOK, "index", p)
}

// Form fields of the log form.
const (
	fieldLog     = "log"
	fieldLogFile = "logfile"
	fieldEnv     = "env"
	fieldLang    = "lang"
)

// formSlack is what a form may carry besides the log and the environment
// text: multipart headers, the language, field names.
const formSlack = 64 << 10

// maxEcho is the largest pasted log a result page sends back in its form
// (to edit and resend, and to switch language without losing the result).
const maxEcho = 1 << 20

// logForm is a posted log form.
type logForm struct {
	text     []byte // the textarea
	file     []byte // the file input's content
	fileName string
	env      string
	lang     string
}

// errTooLarge marks a field over its limit; which says which.
type errTooLarge struct{ which string }

func (e *errTooLarge) Error() string { return e.which + " is over its size limit" }

func (h *handler) diagnose(w http.ResponseWriter, r *http.Request) {
	maxBody := h.opt.MaxLogBytes + service.MaxEnvText + formSlack
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	f, err := h.readLogForm(r)
	l := chooseLang(w, r, f.lang)
	if err != nil {
		h.formError(w, r, l, err, maxBody)
		return
	}
	name, raw := f.fileName, f.file
	fromFile := len(raw) > 0
	if !fromFile {
		// Browsers send a textarea's line ends as CRLF; the log had LF.
		name, raw = tr(l, "pasted"), bytes.ReplaceAll(f.text, []byte("\r\n"), []byte("\n"))
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		p := h.newPage(r, l, tr(l, "diag_title"), "diag")
		p.Body = formBody{ID: "diag", Env: f.env, Limit: limitText(l, h.opt.MaxLogBytes), Error: tr(l, "err_nolog")}
		h.render(w, http.StatusBadRequest, "index", p)
		return
	}
	logR, err := h.openLog(raw, name, l)
	var rep *diagnose.Report
	if err == nil {
		rep, err = h.svc.Diagnose(r.Context(), logR, strings.ReplaceAll(f.env, "\r\n", "\n"))
	}
	if err != nil {
		if r.Context().Err() != nil {
			return // the client went away; nobody reads the answer
		}
		h.logError(w, r, l, err)
		return
	}
	body := resultView(rep, l)
	if fromFile {
		body.Source = tr(l, "from_file", f.fileName)
		body.Ignored = len(bytes.TrimSpace(f.text)) > 0
	} else {
		body.Source = tr(l, "from_text")
	}
	body.Form = formBody{ID: "again", Env: f.env, Limit: limitText(l, h.opt.MaxLogBytes)}
	if !fromFile && len(raw) <= maxEcho {
		body.Form.Log = string(raw)
	} else {
		body.Form.Big = true
	}
	p := h.newPage(r, l, body.Headline+" — "+tr(l, "res_title"), "diag")
	if !body.Form.Big {
		p.SwitchForm = "again"
	}
	p.Body = body
	h.render(w, http.StatusOK, "result", p)
}

// logError answers a log that could not be diagnosed: refused as it is
// (binary, a pickle, bad gzip), too large once decompressed, or a failure
// of the server's own.
func (h *handler) logError(w http.ResponseWriter, r *http.Request, l string, err error) {
	var ref *refusal
	var big *errTooLarge
	var inv *service.InvalidError
	switch {
	case errors.As(err, &ref):
		h.fail(w, r, l, http.StatusUnprocessableEntity, "diag", tr(l, "ebin_title"), ref.msg, ref.next)
	case errors.As(err, &big):
		h.fail(w, r, l, http.StatusRequestEntityTooLarge, "diag", tr(l, "e413_title"), tr(l, "e413_logz", limitText(l, h.opt.MaxLogBytes)), nil)
	case errors.As(err, &inv):
		h.fail(w, r, l, http.StatusBadRequest, "diag", tr(l, "ebad_title"), inv.Msg, nil)
	default:
		log.Printf("web: diagnose: %v", err)
		h.fail(w, r, l, http.StatusInternalServerError, "diag", tr(l, "e500_title"), tr(l, "e500", err.Error()), nil)
	}
}

// refusal is an input that is not a log.
type refusal struct {
	msg  string
	next *link // where it may belong instead
}

func (e *refusal) Error() string { return e.msg }

// formError answers a form that could not be read.
func (h *handler) formError(w http.ResponseWriter, r *http.Request, l string, err error, maxBody int64) {
	var big *errTooLarge
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &big) && (big.which == fieldLog || big.which == fieldLogFile):
		h.fail(w, r, l, http.StatusRequestEntityTooLarge, "diag", tr(l, "e413_title"), tr(l, "e413_log", limitText(l, h.opt.MaxLogBytes)), nil)
	case errors.As(err, &big) && big.which == fieldEnv:
		h.fail(w, r, l, http.StatusRequestEntityTooLarge, "diag", tr(l, "e413_title"), tr(l, "e413_env", limitText(l, service.MaxEnvText)), nil)
	case errors.As(err, &mb):
		h.fail(w, r, l, http.StatusRequestEntityTooLarge, "diag", tr(l, "e413_title"), tr(l, "e413_form", limitText(l, maxBody)), nil)
	case errors.Is(err, errMedia):
		h.fail(w, r, l, http.StatusUnsupportedMediaType, "diag", tr(l, "ebad_title"), tr(l, "emedia"), nil)
	default:
		h.fail(w, r, l, http.StatusBadRequest, "diag", tr(l, "ebad_title"), tr(l, "eform", err.Error()), nil)
	}
}

var errMedia = errors.New("unsupported form encoding")

// readLogForm reads a multipart or URL-encoded log form, holding each
// field to its limit: the log (text or file) to MaxLogBytes, the
// environment text to service.MaxEnvText.
func (h *handler) readLogForm(r *http.Request) (logForm, error) {
	var f logForm
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "multipart/form-data":
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return f, err
		}
		f.text, f.env, f.lang = []byte(r.PostForm.Get(fieldLog)), r.PostForm.Get(fieldEnv), r.PostForm.Get(fieldLang)
		if int64(len(f.text)) > h.opt.MaxLogBytes {
			return f, &errTooLarge{fieldLog}
		}
		if len(f.env) > service.MaxEnvText {
			return f, &errTooLarge{fieldEnv}
		}
		return f, nil
	default:
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
		switch part.FormName() {
		case fieldLog:
			f.text, err = readField(part, fieldLog, h.opt.MaxLogBytes)
		case fieldLogFile:
			f.fileName = baseName(part.FileName())
			f.file, err = readField(part, fieldLogFile, h.opt.MaxLogBytes)
		case fieldEnv:
			var b []byte
			b, err = readField(part, fieldEnv, service.MaxEnvText)
			f.env = string(b)
		case fieldLang:
			var b []byte
			b, err = readField(part, fieldLang, 16)
			f.lang = string(b)
		}
		part.Close()
		if err != nil {
			return f, err
		}
	}
}

// readField reads one part of at most limit bytes.
func readField(p *multipart.Part, name string, limit int64) ([]byte, error) {
	var b bytes.Buffer
	n, err := io.Copy(&b, io.LimitReader(p, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, &errTooLarge{name}
	}
	return b.Bytes(), nil
}

// baseName keeps the last element of a file name a browser sent (old ones
// send the whole path).
func baseName(s string) string {
	if i := strings.LastIndexAny(s, `/\`); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "-"
	}
	return s
}

// openLog checks what was sent and returns a reader over the log text,
// decompressing gzip; a gzip log is held to MaxLogBytes once decompressed
// too. What is not a log is a *refusal.
func (h *handler) openLog(raw []byte, name, l string) (io.Reader, error) {
	var rd io.Reader = bytes.NewReader(raw)
	if len(raw) >= 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return nil, &refusal{msg: tr(l, "egzip", name, err.Error())}
		}
		rd = &capReader{r: &gzipErr{zr, name, l}, left: h.opt.MaxLogBytes}
	}
	br := bufio.NewReaderSize(rd, 64<<10)
	head, err := br.Peek(8 << 10)
	if err != nil && err != io.EOF {
		return nil, err
	}
	switch {
	case len(head) > 0 && head[0] == 0x80: // a pickle starts with PROTO
		return nil, &refusal{msg: tr(l, "epickle", name), next: &link{Href: "/memory", Text: tr(l, "nav_mem")}}
	case service.LooksBinary(head):
		return nil, &refusal{msg: tr(l, "ebin", name)}
	}
	return br, nil
}

// capReader fails once more than left bytes were read.
type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, &errTooLarge{fieldLogFile}
	}
	return n, err
}

// gzipErr names the file in a decompression error.
type gzipErr struct {
	r    io.Reader
	name string
	l    string
}

func (g *gzipErr) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF {
		err = &refusal{msg: tr(g.l, "egzip", g.name, err.Error())}
	}
	return n, err
}
