package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/pastenode/pastenode"

	"github.com/pastenode/pastenode/cluster"
	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/node"
)

// httpError is an error with the status code it answers with.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) error {
	return &httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

// statusOf maps an error to its HTTP status and the one-line reason shown to
// the client. It is the only place that knows this mapping.
func statusOf(err error) (int, string) {
	var he *httpError
	switch {
	case errors.As(err, &he):
		return he.code, he.msg
	case errors.Is(err, fsm.ErrNotFound):
		return http.StatusNotFound, "paste not found"
	case errors.Is(err, fsm.ErrForbidden):
		return http.StatusForbidden, "wrong delete token"
	case errors.Is(err, node.ErrNoLeader):
		return http.StatusServiceUnavailable, "no quorum: the cluster cannot accept writes right now, retry later"
	case errors.Is(err, node.ErrClosed):
		return http.StatusServiceUnavailable, "node is shutting down, retry on another node"
	case errors.Is(err, cluster.ErrUnknownNode):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, cluster.ErrJoin):
		return http.StatusBadGateway, err.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, "request timed out, retry later"
	}
	return http.StatusInternalServerError, "internal error"
}

// error writes err as one line: JSON for API and JSON clients, the error
// page for browsers, plain text otherwise.
func (s *Server) error(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := statusOf(err)
	switch {
	case code == http.StatusServiceUnavailable:
		s.log.Debug("unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
	case code >= 500:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", code, "err", err)
	}
	writeError(w, r, code, msg, func() bool {
		if !wantsHTML(r) || r.Method == http.MethodHead {
			return false
		}
		s.htmlHeaders(w)
		w.WriteHeader(code)
		_ = s.cfg.UI.Error(w, code, msg)
		return true
	})
}

// writeError answers with code and a one-line reason: JSON for JSON
// clients, else the page that page writes (when page is not nil and
// reports that it wrote one), else plain text. The live node and the
// mirror both answer errors this way.
func writeError(w http.ResponseWriter, r *http.Request, code int, msg string, page func() bool) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	if code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests {
		h.Set("Retry-After", "1")
	}
	if wantsJSON(r) {
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

// wantsJSON reports whether the client should get JSON: every /api/ call,
// and clients that accept application/json before text/html.
func wantsJSON(r *http.Request) bool {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		return true
	}
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

// wantsHTML reports whether the client is a browser asking for a page.
func wantsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
