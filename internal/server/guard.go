package server

import (
	"crypto/subtle"
	"net"
	"net/http"
	"os"
	"strings"
)

// writeGuard decides whether a request may change state (record an
// outcome, call an MCP tool): not from another site's web page, not through
// a host name that is not this server's (DNS rebinding), only with JSON,
// and with the bearer token when one is set.
type writeGuard struct {
	cop     *http.CrossOriginProtection
	hosts   map[string]bool // allowed Host names, lower case, without port
	anyHost bool
	self    string // this machine's host name, lower case
	token   []byte
}

func newWriteGuard(opt Options) *writeGuard {
	g := &writeGuard{cop: http.NewCrossOriginProtection(), hosts: map[string]bool{"localhost": true}}
	for _, h := range opt.AllowedHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "*" {
			g.anyHost = true
		}
		if h != "" {
			g.hosts[h] = true
		}
	}
	if name, err := os.Hostname(); err == nil {
		g.self = strings.ToLower(name)
	}
	if opt.Token != "" {
		g.token = []byte(opt.Token)
	}
	return g
}

// allow answers a request that may not write and reports false, or true.
// needJSON requires a JSON Content-Type (MCP's transport checks its own).
func (g *writeGuard) allow(w http.ResponseWriter, r *http.Request, needJSON bool) bool {
	if len(g.token) > 0 {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), g.token) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gpudx"`)
			writeError(w, http.StatusUnauthorized, "this server requires a bearer token for %s: send Authorization: Bearer TOKEN (the token gpudx serve was started with)", r.URL.Path)
			return false
		}
	}
	if !g.hostAllowed(r) {
		writeError(w, http.StatusForbidden, "Host %q is not this server's name or address, so writes are refused (a defence against DNS rebinding); start gpudx serve with --allowed-hosts to accept it", r.Host)
		return false
	}
	if err := g.cop.Check(r); err != nil {
		writeError(w, http.StatusForbidden, "cross-site request refused: a web page of another site may not write here (Origin %q, Sec-Fetch-Site %q)", r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site"))
		return false
	}
	if mt := mediaType(r); needJSON && !isJSON(mt) {
		// A page of another site can send a form or text/plain without
		// asking first; application/json it cannot.
		writeError(w, http.StatusUnsupportedMediaType, "Content-Type %q: send the body as application/json", r.Header.Get("Content-Type"))
		return false
	}
	return true
}

// hostAllowed: the Host is an address of this server (loopback, or the
// one the client connected to), localhost, this machine's name, or one of
// Options.AllowedHosts.
func (g *writeGuard) hostAllowed(r *http.Request) bool {
	if g.anyHost {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if g.hosts[host] || (g.self != "" && (host == g.self || strings.HasPrefix(g.self, host+"."))) {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ta, ok := la.(*net.TCPAddr); ok && ta.IP.Equal(ip) {
			return true
		}
	}
	return false
}
