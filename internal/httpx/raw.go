package httpx

import (
	"bytes"
	"net/http"
	"strings"
	"time"

	"github.com/pastenode/pastenode/fsm"
)

// Header values of every raw read, shared rather than built per request:
// this is the hot path, and net/http never modifies a header's values.
var (
	hvText    = []string{"text/plain; charset=utf-8"}
	hvBinary  = []string{"application/octet-stream"}
	hvNosniff = []string{"nosniff"}
	hvRawCSP  = []string{"default-src 'none'; sandbox"}
	hvNoStore = []string{"no-store"}
	hvNoCache = []string{"no-cache"}
)

// RawPrefix is the path of a raw read up to the paste's id: /raw/{id}.
const RawPrefix = "/raw/"

// RawID returns the id of a raw read's path, as the routers of the live
// node and the mirror see it (decoded, under any base path): RawPrefix
// and one non-empty path segment. It is the one place that decides which
// paths are raw reads, for net/http's routes and the fast path alike.
func RawID(path string) (id string, ok bool) {
	id, ok = strings.CutPrefix(path, RawPrefix)
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

// SetRawHeaders sets the headers of a raw read of p. Pastes never change,
// so the id and creation time make a strong ETag without hashing the
// content. Every value comes from the paste's ReadInfo, computed once when
// it entered the store, so that a read allocates none.
func SetRawHeaders(h http.Header, p *fsm.Paste) {
	ri := p.ReadInfo()
	if ri.Text {
		h["Content-Type"] = hvText
	} else {
		h["Content-Type"] = hvBinary
	}
	h["X-Content-Type-Options"] = hvNosniff
	h["Content-Security-Policy"] = hvRawCSP
	h["Etag"] = ri.ETag()
	switch {
	case p.Burn:
		h["Cache-Control"] = hvNoStore
	case ri.Expires() != nil:
		h["Cache-Control"] = hvNoCache
		h["Expires"] = ri.Expires()
	default:
		h["Cache-Control"] = hvNoCache
	}
}

// ServeRaw writes the raw bytes of the non-burn paste p with its headers.
// A plain GET or HEAD is answered here with one write, with the headers
// http.ServeContent would send (a small body's Content-Length counted by
// net/http: see NetHTTPCounts) but Accept-Ranges: clients may ask for
// ranges without it (RFC 9110, 14.3), and each header costs every read. A
// conditional or Range request goes through http.ServeContent, which
// answers 304, 206 and 412 as it should.
func ServeRaw(w http.ResponseWriter, r *http.Request, p *fsm.Paste) {
	SetRawHeaders(w.Header(), p)
	WriteRaw(w, r, p)
}

// WriteRaw writes p's bytes, or the answer to a conditional or Range
// request for them, under the headers already set, as ServeRaw does.
func WriteRaw(w http.ResponseWriter, r *http.Request, p *fsm.Paste) {
	h := w.Header()
	if Conditional(r.Header) {
		http.ServeContent(w, r, "", time.Unix(0, p.CreatedAt), bytes.NewReader(p.Content))
		return
	}
	h["Last-Modified"] = p.ReadInfo().LastModified()
	if r.Method == http.MethodHead || !NetHTTPCounts(len(p.Content)) {
		h["Content-Length"] = p.ReadInfo().Size()
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(p.Content)
	}
}

// NetHTTPCounts reports whether net/http sends the Content-Length of an
// answer's body of n bytes, written by a handler that then returns: of one
// that fits the buffer net/http holds a body in until the handler returns
// or the buffer fills (not of a HEAD's, which has no body). Left to
// net/http, the header is written without a header map entry, which a
// read would otherwise clone, sort and escape.
func NetHTTPCounts(n int) bool { return n <= netHTTPBuffer }

// netHTTPBuffer is the size of net/http's buffer before it chunks a body.
const netHTTPBuffer = 2048

// ConditionalHeaders are the request headers, in canonical form, that ask
// for a conditional or partial answer.
var ConditionalHeaders = [...]string{"Range", "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range"}

// Conditional reports whether h asks for a conditional or partial answer,
// which http.ServeContent handles; a plain one can be written at once.
func Conditional(h http.Header) bool {
	for _, k := range ConditionalHeaders {
		if h[k] != nil {
			return true
		}
	}
	return false
}
