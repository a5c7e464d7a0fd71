package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/cluster"
	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/internal/httpx"
	"github.com/pastenode/pastenode/node"
)

// httpError is an error with the status code it answers with.
type httpError struct {
	code       int
	msg        string
	retryAfter time.Duration // 0: the default for its code
}

func (e *httpError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) error {
	return &httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

// busyRetryAfter is the Retry-After of a write that a busy cluster did not
// confirm in time (node.ErrTimeout).
const busyRetryAfter = time.Second

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
	case errors.Is(err, fsm.ErrExists):
		return http.StatusConflict, "paste id already taken"
	case errors.Is(err, node.ErrBadID):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, node.ErrNoLeader):
		return http.StatusServiceUnavailable, "no quorum: the cluster cannot accept writes right now, retry later"
	case errors.Is(err, node.ErrNoCluster):
		return http.StatusServiceUnavailable, err.Error()
	case errors.Is(err, node.ErrTimeout):
		return http.StatusServiceUnavailable, "write not confirmed in time: the cluster is busy; it may still be applied, retry later"
	case errors.Is(err, node.ErrStorageFull):
		return http.StatusInsufficientStorage, err.Error()
	case errors.Is(err, node.ErrUnavailable):
		return http.StatusServiceUnavailable, "cannot confirm the read with the cluster right now, retry later (or ask for ?stale=true)"
	case errors.Is(err, node.ErrOldPeer):
		return http.StatusServiceUnavailable, "a cluster member runs an older pastenode that cannot apply this write: upgrade every node, then retry"
	case errors.Is(err, node.ErrClosed):
		return http.StatusServiceUnavailable, "node is shutting down, retry on another node"
	case errors.Is(err, cluster.ErrUnknownNode):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, cluster.ErrJoin):
		return http.StatusBadGateway, err.Error()
	case errors.Is(err, node.ErrForeignCluster):
		return http.StatusConflict, err.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable, "request timed out, retry later"
	}
	return http.StatusInternalServerError, "internal error"
}

// error writes err as one line: JSON for API and JSON clients, the error
// page for browsers, plain text otherwise.
func (s *Server) error(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := statusOf(err)
	var he *httpError
	switch {
	case errors.As(err, &he) && he.retryAfter > 0:
		w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(he.retryAfter)))
	case errors.Is(err, node.ErrNoLeader), errors.Is(err, node.ErrNoCluster):
		w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(s.cfg.NoQuorumWait)))
	case errors.Is(err, node.ErrTimeout):
		w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(busyRetryAfter)))
	}
	if outcomeUnknown(r, err) {
		w.Header().Set(pastenode.OutcomeHeader, "unknown")
	}
	switch {
	case code == http.StatusInsufficientStorage:
		s.log.Debug("create refused", "err", err) // the node logs the change of state
	case code == http.StatusServiceUnavailable:
		s.log.Debug("unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
	case code >= 500:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", code, "err", err)
	}
	httpx.WriteError(w, r, code, msg, func() bool {
		if !httpx.WantsHTML(r) || r.Method == http.MethodHead {
			return false
		}
		s.htmlHeaders(w)
		w.WriteHeader(code)
		_ = s.cfg.UI.Error(w, code, msg)
		return true
	})
}

// outcomeUnknown reports whether err leaves r, a write, perhaps applied:
// it timed out waiting for the cluster rather than being refused.
func outcomeUnknown(r *http.Request, err error) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return false
	}
	return errors.Is(err, node.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
