package mirror

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pastenode/pastenode/internal/httpx"
)

// ServeHTTP serves one request from the current archive.
func (m *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &httpx.StatusRecorder{ResponseWriter: w}
	// The archive is a memory mapping of its file: a read of a page that
	// the file no longer has (cut short in place) faults, and the runtime
	// would end the process. Here the fault panics instead (see faulted).
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer m.faulted(rec, r)
	route := m.serve(rec, r)
	m.metrics.count(route, rec.Code())
}

// faulted, deferred by ServeHTTP, ends a request whose read of the
// archive's mapping faulted (a file cut short in place, or a read error
// of the disk): with a 503 if nothing was written yet, else by cutting
// the connection, as the answer is already under way. The watcher stops
// serving a file changed in place within its poll interval (see
// checkInPlace). Either way the metrics count the request as a 503. Any
// other panic goes on.
func (m *Server) faulted(w *httpx.StatusRecorder, r *http.Request) {
	e := recover()
	if e == nil {
		return
	}
	if !isFault(e) {
		panic(e)
	}
	route, _ := mirrorRoute(r.URL.Path, httpx.WantsHTML(r))
	m.metrics.count(route, http.StatusServiceUnavailable)
	if w.Sent() {
		panic(http.ErrAbortHandler)
	}
	clear(w.Header()) // the headers of the answer that failed
	m.fail(w, r, nil, http.StatusServiceUnavailable,
		"the mirror could not read its archive file (cut short or changed in place?); try again shortly")
}

// isFault reports whether e, recovered, is a fault on memory that
// debug.SetPanicOnFault turned into a panic (a nil dereference is not).
func isFault(e any) bool {
	_, ok := e.(interface{ Addr() uintptr })
	return ok
}

// errChanged is the reason given for a 503 while the archive's file is
// changed in place.
const errChanged = "the mirror's archive file changed in place; try again shortly"

// serve answers r and returns its route name for the metrics.
func (m *Server) serve(w http.ResponseWriter, r *http.Request) string {
	now := time.Now()
	html := httpx.WantsHTML(r)
	route, key := mirrorRoute(r.URL.Path, html)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		m.fail(w, r, nil, http.StatusMethodNotAllowed,
			"read-only mirror: "+r.Method+" is not allowed, only GET and HEAD")
		return route
	}
	switch route {
	case "healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
		return route
	case "metrics":
		m.metrics.handler.ServeHTTP(w, r)
		return route
	}

	a := m.acquire()
	if a == nil {
		m.fail(w, r, nil, http.StatusServiceUnavailable, "mirror is shutting down")
		return route
	}
	defer a.release(m.log)
	if a.changed.Load() {
		m.fail(w, r, nil, http.StatusServiceUnavailable, errChanged)
		return route
	}
	if route == "index" && !html {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Add("Vary", "Accept")
		io.WriteString(w, "pastenode read-only mirror: GET /ID for a page, /raw/ID for the bytes\n")
		return route
	}
	if key == "" {
		m.fail(w, r, a, http.StatusNotFound, "not found")
		return route
	}
	res, ok, err := a.lookup(key)
	if err != nil {
		m.log.Error("archive lookup", "path", key, "err", err)
		m.fail(w, r, a, http.StatusInternalServerError, "internal error: the archive is damaged")
		return route
	}
	if !ok || res.status == http.StatusNotFound || res.hasExpires && !now.Before(res.expires) {
		msg := "paste not found"
		if route == "static" || route == "index" {
			msg = "not found"
		}
		m.fail(w, r, a, http.StatusNotFound, msg)
		return route
	}
	if route == "view" || route == "index" {
		w.Header().Add("Vary", "Accept")
	}
	res.write(w, r, now)
	return route
}

// mirrorRoute names the route of path, as the live node's router does,
// and returns the archive path that answers it, "" for none.
func mirrorRoute(path string, html bool) (route, key string) {
	switch {
	case path == "/":
		return "index", "/"
	case path == "/healthz":
		return "healthz", ""
	case path == "/metrics":
		return "metrics", ""
	case strings.HasPrefix(path, "/static/"):
		return "static", path
	case strings.HasPrefix(path, "/api/"):
		if oneSegment(path, "/api/v1/pastes/") {
			return "api_meta", path
		}
		return "api_unknown", ""
	case strings.HasPrefix(path, httpx.RawPrefix):
		if _, ok := httpx.RawID(path); ok {
			return "raw", path
		}
	case oneSegment(path, "/"):
		// curl gets the bytes, as from the live node.
		if !html {
			return "view", httpx.RawPrefix + path[1:]
		}
		return "view", path
	}
	return "unknown", ""
}

// oneSegment reports whether path is prefix followed by one non-empty
// path segment.
func oneSegment(path, prefix string) bool {
	rest, ok := strings.CutPrefix(path, prefix)
	return ok && rest != "" && !strings.Contains(rest, "/")
}

var (
	bufPool  = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	gzipPool sync.Pool // of *gzip.Reader
)

// gunzip decompresses gz into buf, which it resets first.
func gunzip(buf *bytes.Buffer, gz []byte) error {
	buf.Reset()
	var (
		zr  *gzip.Reader
		err error
	)
	if v := gzipPool.Get(); v != nil {
		zr = v.(*gzip.Reader)
		err = zr.Reset(bytes.NewReader(gz))
	} else {
		zr, err = gzip.NewReader(bytes.NewReader(gz))
	}
	if err != nil {
		return fmt.Errorf("gunzip: %w", err)
	}
	defer gzipPool.Put(zr)
	// The trailer holds the decoded size; trust it only as a hint.
	if n := len(gz); n >= 4 {
		size := int(gz[n-4]) | int(gz[n-3])<<8 | int(gz[n-2])<<16 | int(gz[n-1])<<24
		buf.Grow(min(size, 64<<20))
	}
	if _, err := io.Copy(buf, zr); err != nil {
		return fmt.Errorf("gunzip: %w", err)
	}
	return nil
}

// acceptsGzip reports whether the request's Accept-Encoding allows gzip.
func acceptsGzip(r *http.Request) bool {
	return slices.ContainsFunc(r.Header.Values("Accept-Encoding"), gzipAccepted)
}

// gzipAccepted reports whether v, one Accept-Encoding header's value,
// allows gzip.
func gzipAccepted(v string) bool {
	for part := range strings.SplitSeq(v, ",") {
		name, params, _ := strings.Cut(part, ";")
		name = strings.TrimSpace(name)
		if !strings.EqualFold(name, "gzip") && name != "*" {
			continue
		}
		q, ok := strings.CutPrefix(strings.TrimSpace(params), "q=")
		if !ok {
			return true
		}
		if f, err := strconv.ParseFloat(q, 64); err != nil || f > 0 {
			return true
		}
	}
	return false
}

// fail answers with a one-line reason: JSON for API and JSON clients, the
// archive's 404 page for browsers when it has one, else plain text.
func (m *Server) fail(w http.ResponseWriter, r *http.Request, a *mirrorArchive, code int, msg string) {
	httpx.WriteError(w, r, code, msg, func() bool {
		if code != http.StatusNotFound || a == nil || !httpx.WantsHTML(r) {
			return false
		}
		page, ok, err := a.lookup("/*")
		if err != nil || !ok || page.status != http.StatusNotFound {
			return false
		}
		page.write(w, r, time.Now())
		return true
	})
}
