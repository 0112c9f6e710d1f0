package server

import (
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/gpudx/gpudx/facts"
)

// errTooLarge ends a read past a body's limit. The service may turn it
// into a message (service.Snapshot does), so handlers ask the body whether
// its limit was hit rather than look for this error.
var errTooLarge = errors.New("request body too large")

// limited reads at most limit bytes of r and records whether the body
// went on beyond them, and the first error r returned.
type limited struct {
	r     io.Reader
	left  int64
	n     int64
	over  bool
	err   error
	limit int64
}

func newLimited(r io.Reader, limit int64) *limited {
	return &limited{r: r, left: limit, limit: limit}
}

func (l *limited) Read(p []byte) (int, error) {
	if l.over {
		return 0, errTooLarge
	}
	if l.left <= 0 {
		// Exactly limit bytes is allowed: only a byte beyond it is too many.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			l.over = true
			return 0, errTooLarge
		}
		l.note(err)
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	l.n += int64(n)
	l.note(err)
	return n, err
}

func (l *limited) note(err error) {
	if err != nil && err != io.EOF && l.err == nil {
		l.err = err
	}
}

// body is a request body as a handler reads it: capped on the wire,
// gzip-decoded when the request says so (or, for logs, when it starts
// with gzip's magic bytes), and capped again after decoding.
type body struct {
	*bufio.Reader
	what    string // "log", "snapshot", "outcome report": for messages
	wire    *limited
	decoded *limited // nil when the body is not compressed
	sniffed bool     // gzip found by its magic bytes, not by Content-Encoding: the file itself is gzip
}

// bytes is how many decoded bytes the handler read.
func (b *body) bytes() int64 {
	if b.decoded != nil {
		return b.decoded.n
	}
	return b.wire.n
}

// openBody prepares r's body for reading, or answers the request itself
// (413, 415, 400) and returns nil. sniffGzip decodes a body that starts
// with gzip's magic bytes even without Content-Encoding, as `gpudx
// diagnose` reads a gzip file.
func (s *Server) openBody(w http.ResponseWriter, r *http.Request, what string, limit int64, sniffGzip bool) *body {
	if r.ContentLength > limit {
		tooLarge(w, what, limit, "")
		return nil
	}
	b := &body{what: what, wire: newLimited(r.Body, limit)}
	gz := false
	switch ce := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); ce {
	case "", "identity":
	case "gzip", "x-gzip":
		gz = true
	default:
		writeError(w, http.StatusUnsupportedMediaType, "Content-Encoding %q is not supported: send the %s as it is, or gzip-compressed with Content-Encoding: gzip", ce, what)
		return nil
	}
	br := bufio.NewReaderSize(b.wire, 64<<10)
	if !gz && sniffGzip {
		head, _ := br.Peek(2)
		gz = len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b
		b.sniffed = gz
	}
	if !gz {
		b.Reader = br
		return b
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		if !s.bodyFailed(w, b) {
			writeError(w, http.StatusBadRequest, "the %s is not valid gzip data: %v", what, err)
		}
		return nil
	}
	b.decoded = newLimited(zr, limit)
	b.Reader = bufio.NewReaderSize(b.decoded, 64<<10)
	return b
}

// bodyFailed answers for a request whose body could not be read and
// reports whether it did: 413 past a limit, 408 on a read timeout, 400 for
// a truncated body or corrupt gzip data.
func (s *Server) bodyFailed(w http.ResponseWriter, b *body) bool {
	var ne net.Error
	switch {
	case b.wire.over:
		tooLarge(w, b.what, b.wire.limit, "")
	case b.decoded != nil && b.decoded.over:
		tooLarge(w, b.what, b.decoded.limit, " once decompressed")
	case b.wire.err != nil && errors.As(b.wire.err, &ne) && ne.Timeout():
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestTimeout, "reading the %s timed out: it must start within %v and then arrive at %s/s at least", b.what, s.opt.BodyTimeout, facts.FormatBytes(float64(s.opt.MinBodyRate)))
	case b.wire.err != nil:
		writeError(w, http.StatusBadRequest, "reading the %s: %v", b.what, b.wire.err)
	case b.decoded != nil && b.decoded.err != nil:
		writeError(w, http.StatusBadRequest, "the %s is not valid gzip data: %v", b.what, b.decoded.err)
	default:
		return false
	}
	return true
}

func tooLarge(w http.ResponseWriter, what string, limit int64, how string) {
	// The rest of the body is not read: end the connection rather than
	// have net/http drain it.
	w.Header().Set("Connection", "close")
	writeError(w, http.StatusRequestEntityTooLarge, "the %s is larger%s than this server's limit of %s (%d bytes)",
		what, how, facts.FormatBytes(float64(limit)), limit)
}

// mediaType is the request's Content-Type without parameters, lower case
// ("" when absent or unparsable).
func mediaType(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

// isJSON reports whether a media type is JSON (application/json or a
// +json type).
func isJSON(mt string) bool { return mt == "application/json" || strings.HasSuffix(mt, "+json") }
