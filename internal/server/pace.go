package server

import (
	"bytes"
	"io"
	"net/http"
	"time"
)

// preReadMax is the largest body read before a request takes a slot: a
// client that sends it slowly then holds a connection, not a slot that
// other requests need. Larger bodies take an upload slot (Options.MaxUploads).
const preReadMax = 1 << 20

// pacedBody is a request body that must arrive at Options.MinBodyRate: after
// n bytes, the read deadline is BodyTimeout plus n/MinBodyRate from the
// request's start (never past ReadTimeout), so a client that trickles bytes
// gives up its connection in seconds while a large upload at any usable
// rate goes on.
type pacedBody struct {
	io.ReadCloser
	rc    *http.ResponseController
	start time.Time
	grace time.Duration
	rate  float64 // bytes per second
	hard  time.Time
	n     int64
	set   time.Time // the deadline in force
}

func (s *Server) pace(w http.ResponseWriter, r *http.Request, start time.Time) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	r.Body = &pacedBody{
		ReadCloser: r.Body,
		rc:         http.NewResponseController(w),
		start:      start,
		grace:      s.opt.BodyTimeout,
		rate:       float64(s.opt.MinBodyRate),
		hard:       start.Add(s.opt.ReadTimeout),
	}
}

func (p *pacedBody) Read(b []byte) (int, error) {
	d := p.start.Add(p.grace + time.Duration(float64(p.n)/p.rate*float64(time.Second)))
	if d.After(p.hard) {
		d = p.hard
	}
	if !d.Equal(p.set) {
		// Not every ResponseWriter can (httptest's cannot); then the
		// http.Server's ReadTimeout alone bounds the read.
		_ = p.rc.SetReadDeadline(d)
		p.set = d
	}
	n, err := p.ReadCloser.Read(b)
	p.n += int64(n)
	if err == io.EOF && !p.set.Equal(p.hard) {
		// The body is whole: net/http now reads the connection in the
		// background to see the client leave, and a deadline there would
		// cancel the request's context while the handler still works.
		_ = p.rc.SetReadDeadline(p.hard)
		p.set = p.hard
	}
	return n, err
}

// preRead reads up to preReadMax bytes of r's body before the request takes
// a slot, and reports whether that was the whole body (or it failed: the
// handler then meets the same error, after the bytes that came). When it
// was not, r's body goes on with the bytes read.
func preRead(r *http.Request) (whole bool) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return true
	}
	if r.ContentLength > preReadMax {
		return false
	}
	// Read as the bytes come (io.ReadAll grows its buffer), so a client
	// that claims a length and sends nothing costs no memory.
	data, err := io.ReadAll(io.LimitReader(r.Body, preReadMax+1))
	if err != nil || len(data) <= preReadMax {
		r.Body = &replay{r: bytes.NewReader(data), err: err, c: r.Body}
		return true
	}
	r.Body = &replay{r: io.MultiReader(bytes.NewReader(data), r.Body), c: r.Body}
	return false
}

// replay is a body whose start was read already: its bytes, then err (or
// the rest of the body when err is nil).
type replay struct {
	r   io.Reader
	err error
	c   io.Closer
}

func (p *replay) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err == io.EOF && p.err != nil {
		if n > 0 {
			return n, nil
		}
		return 0, p.err
	}
	return n, err
}

func (p *replay) Close() error { return p.c.Close() }
