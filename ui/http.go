package ui

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/fsm"
)

// This file holds what the live node (api) and the static mirror (mirror)
// both send for a paste besides its page: the headers of a page and of the
// raw bytes, the metadata document, and the one-line error answer. Both
// packages call these, so a mirror answers exactly as the node does.

// PasteOf is what the pages show of p; the content only with withContent.
func PasteOf(p *fsm.Paste, withContent bool) Paste {
	up := Paste{
		ID:        p.ID,
		Title:     p.Title,
		Lang:      p.Lang,
		CreatedAt: time.Unix(0, p.CreatedAt),
		Burn:      p.Burn,
		Encrypted: p.Encrypted,
	}
	if withContent {
		up.Content = p.Content
	}
	if p.ExpiresAt != 0 {
		up.ExpiresAt = time.Unix(0, p.ExpiresAt)
	}
	return up
}

// MetaOf is the metadata of p, with its URLs under base ("" for paths).
func MetaOf(p *fsm.Paste, base string) pastenode.Meta {
	m := pastenode.Meta{
		ID:        p.ID,
		URL:       base + "/" + p.ID,
		RawURL:    base + "/raw/" + p.ID,
		Title:     p.Title,
		Lang:      p.Lang,
		Size:      len(p.Content),
		CreatedAt: time.Unix(0, p.CreatedAt).UTC(),
		Burn:      p.Burn,
		Encrypted: p.Encrypted,
	}
	if p.ExpiresAt != 0 {
		t := time.Unix(0, p.ExpiresAt).UTC()
		m.ExpiresAt = &t
	}
	return m
}

// SetPageHeaders sets the headers of an HTML page, live or exported.
func SetPageHeaders(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", CSP())
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
}

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
	writeRaw(w, r, p)
}

// ServeDownload is ServeRaw with the headers of a download
// (SetDownloadHeaders).
func ServeDownload(w http.ResponseWriter, r *http.Request, p *fsm.Paste) {
	SetDownloadHeaders(w.Header(), p)
	writeRaw(w, r, p)
}

// SetDownloadHeaders sets the headers of a download of p (/download/ID):
// a raw read's, but application/octet-stream whatever the paste holds and
// an attachment named DownloadName, as the old Rust pastebin sent it, so
// that a browser saves the file rather than showing it.
func SetDownloadHeaders(h http.Header, p *fsm.Paste) {
	SetRawHeaders(h, p)
	h["Content-Type"] = hvBinary
	// Ids and extensions hold no quote or backslash: the plain quoted
	// form, as the old pastebin sent it.
	h.Set("Content-Disposition", `attachment; filename="`+DownloadName(PasteOf(p, false))+`"`)
}

// writeRaw writes p's bytes, or the answer to a conditional or Range
// request for them, under the headers already set.
func writeRaw(w http.ResponseWriter, r *http.Request, p *fsm.Paste) {
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

// WriteError answers with code and a one-line reason: JSON for JSON
// clients, else the page that page writes (when page is not nil and
// reports that it wrote one), else plain text. The live node and the
// mirror both answer errors this way.
func WriteError(w http.ResponseWriter, r *http.Request, code int, msg string, page func() bool) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	if (code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests) && h.Get("Retry-After") == "" {
		h.Set("Retry-After", "1")
	}
	if WantsJSON(r) {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(pastenode.ErrorBody{Error: msg})
		return
	}
	if page != nil && page() {
		return
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	io.WriteString(w, msg+"\n")
}

// WantsJSON reports whether the client should get JSON: every /api/ call,
// and clients that accept application/json before text/html.
func WantsJSON(r *http.Request) bool {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		return true
	}
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

// WantsHTML reports whether the client is a browser asking for a page.
func WantsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// StatusRecorder is a ResponseWriter that remembers the status code sent
// through it, for the request metrics of api and mirror.
type StatusRecorder struct {
	http.ResponseWriter
	code int
}

// WriteHeader records the first final code and sends it; informational
// 1xx answers (an export's progress) go out unrecorded.
func (r *StatusRecorder) WriteHeader(code int) {
	if r.code == 0 && (code < 100 || code > 199) {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200 and sends b.
func (r *StatusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// ReadFrom records an implicit 200 and copies src to the ResponseWriter
// underneath, through its own ReadFrom when it has one (net/http's does),
// so that io.Copy into a StatusRecorder needs no buffer of its own.
func (r *StatusRecorder) ReadFrom(src io.Reader) (int64, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	if rf, ok := r.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(r.ResponseWriter, src)
}

// Unwrap returns the ResponseWriter underneath, for http.ResponseController.
func (r *StatusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Sent reports whether r was given a final status code or body bytes: the
// answer is under way, and a handler can no longer send another.
func (r *StatusRecorder) Sent() bool { return r.code != 0 }

// Code returns the status code sent: 200 if the handler sent none, as
// net/http then does.
func (r *StatusRecorder) Code() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}
