package mirror

import (
	"bytes"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/pastenode/pastenode/internal/httpx"
)

// FastHandler returns the mirror's handler for a fasthttp server, which
// `pastenode mirror` runs: a read costs it less CPU than on net/http's
// server. A plain GET or HEAD of a resource whose answer does not depend on
// Accept (raw bytes, metadata, static files), found and alive, is answered
// here with the headers and bytes ServeHTTP would send. Every other
// request, errors, pages, conditional and Range requests among them, goes
// to ServeHTTP through fasthttp's net/http adaptor, so that the rules of
// those answers live in one place.
func (m *Server) FastHandler() fasthttp.RequestHandler {
	slow := fasthttpadaptor.NewFastHTTPHandler(abortOnPanic(m, m.log.Error))
	return func(ctx *fasthttp.RequestCtx) {
		if !m.serveFast(ctx) {
			slow(ctx)
		}
	}
}

// FastServer returns a fasthttp server of FastHandler whose answers carry
// the headers net/http's would: no Server, and no Content-Type that the
// mirror did not set. The caller sets its limits and serves it.
func (m *Server) FastServer() *fasthttp.Server {
	return &fasthttp.Server{
		Handler:               m.FastHandler(),
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
	}
}

// abortOnPanic makes a panic in h (a bug) end the request's connection
// with the panic logged, as net/http's server does; the adaptor would
// otherwise re-panic it in the connection's goroutine and end the process.
func abortOnPanic(h http.Handler, logError func(msg string, args ...any)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if e := recover(); e != nil {
				if e != http.ErrAbortHandler {
					logError("panic serving a request", "path", r.URL.Path, "panic", e, "stack", string(debug.Stack()))
				}
				panic(http.ErrAbortHandler)
			}
		}()
		h.ServeHTTP(w, r)
	})
}

// serveFast answers ctx if it is a plain read of a resource the archive
// has, alive, on a route whose answer does not depend on Accept, and
// reports whether it did. It leaves everything else, unanswered, to
// ServeHTTP, which also answers a read whose bytes fault (a file cut short
// in place): nothing has been written then.
func (m *Server) serveFast(ctx *fasthttp.RequestCtx) (served bool) {
	if !ctx.IsGet() && !ctx.IsHead() {
		return false
	}
	// The URI as sent is the path ServeHTTP sees when it has no escapes
	// and no query.
	uri := ctx.RequestURI()
	if len(uri) == 0 || uri[0] != '/' || bytes.IndexAny(uri, "%?#") >= 0 {
		return false
	}
	h := &ctx.Request.Header
	for _, k := range httpx.ConditionalHeaders {
		if h.Peek(k) != nil {
			return false
		}
	}
	route, key := mirrorRoute(string(uri), false)
	if route != "raw" && route != "api_meta" && route != "static" {
		return false
	}
	a := m.acquire()
	if a == nil {
		return false
	}
	defer a.release(m.log)
	if a.changed.Load() {
		return false
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if e := recover(); e != nil {
			ctx.Response.Reset()
			if isFault(e) {
				served = false
				return
			}
			// A bug: answer and close, as net/http's server would
			// rather than end the process.
			m.log.Error("panic serving a request", "path", string(uri), "panic", e, "stack", string(debug.Stack()))
			ctx.Error("internal error\n", http.StatusInternalServerError)
			ctx.SetConnectionClose()
			m.metrics.count(route, http.StatusInternalServerError)
			served = true
		}
	}()
	res, ok, err := a.lookup(key)
	now := time.Now()
	if err != nil || !ok || res.status != http.StatusOK || res.sniff || res.hasExpires && !now.Before(res.expires) {
		return false
	}
	res.writeFast(ctx, now)
	m.metrics.count(route, http.StatusOK)
	return true
}

// headerField is one response header, as writeFast sends it.
type headerField struct{ name, value string }

// fastFields returns the fields of h that writeFast sends, in net/http's
// order: by name, then as h lists them. fasthttp writes Content-Length
// itself, and a resource that expires gets its Cache-Control per request.
func fastFields(h http.Header, expires bool) []headerField {
	var fs []headerField
	for k, vs := range h {
		if k == "Content-Length" || expires && k == "Cache-Control" {
			continue
		}
		for _, v := range vs {
			fs = append(fs, headerField{k, v})
		}
	}
	slices.SortStableFunc(fs, func(a, b headerField) int { return strings.Compare(a.name, b.name) })
	return fs
}

// writeFast answers a plain GET or HEAD of p, a 200, as write would. The
// body is copied into the answer while the request holds the archive, so
// that nothing reads the mapping once the handler has returned.
func (p *prepared) writeFast(ctx *fasthttp.RequestCtx, now time.Time) {
	fields, body := p.fields, p.body
	if p.encoded != nil && (p.enc != "gzip" || slices.ContainsFunc(ctx.Request.Header.PeekAll("Accept-Encoding"), acceptedBytes)) {
		fields, body = p.encFields, p.encoded
	}
	rh := &ctx.Response.Header
	for _, f := range fields {
		rh.Add(f.name, f.value)
	}
	if p.enc == "gzip" {
		rh.Add("Vary", "Accept-Encoding")
	}
	if p.hasExpires {
		rh.Set("Cache-Control", maxAge(p.expires.Sub(now)))
	}
	if ctx.IsHead() {
		rh.SetContentLength(len(body))
		return
	}
	ctx.SetBody(body)
}

// acceptedBytes is gzipAccepted of an Accept-Encoding value as fasthttp
// holds it.
func acceptedBytes(v []byte) bool { return gzipAccepted(string(v)) }
