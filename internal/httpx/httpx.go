// Package httpx is the HTTP plumbing that the live node (package api) and
// the static mirror (package mirror) share, so that both answer alike: a
// paste's raw read with its headers, the one-line error answer, which
// answer a client wants, and the StatusRecorder that their request
// metrics count with. What a page shows stays in package ui; routes and
// status codes stay with api and mirror.
package httpx

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/pastenode/pastenode"
)

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
