package api

import (
	"bytes"
	"net/http"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pastenode/pastenode/internal/httpx"
)

// ServeFast answers ctx, on a fasthttp server, if it is a plain read of a
// paste's raw bytes (fastRawID) and the paste is there and does not burn,
// with the answer Handler would give: the same headers (httpx.RawHeaders)
// and bytes, counted in the raw route's metrics. It reports whether it
// answered. It leaves everything else unanswered for Handler, a missing
// paste among them, so that the rules of errors, burns and conditional
// answers live in one place.
func (s *Server) ServeFast(ctx *fasthttp.RequestCtx) bool {
	if !ctx.IsGet() && !ctx.IsHead() {
		return false
	}
	id, ok := s.fastRawID(ctx)
	if !ok {
		return false
	}
	start := time.Now()
	// No query: fastRawID takes none, so the header alone can ask.
	stale := staleRead("", string(ctx.Request.Header.Peek(staleHeader)))
	rr, err := s.readRaw(ctx, id, stale)
	if err != nil {
		return false
	}
	defer rr.done()
	// A large paste is net/http's, which sends it from its file with
	// sendfile; fasthttp would take it into memory.
	p := &rr.p
	if rr.c != nil || p.Burn {
		return false
	}
	rh := &ctx.Response.Header
	// fasthttp counts a GET's body itself, from SetBodyRaw.
	httpx.RawHeaders(p, ctx.IsHead(), func(name string, value []string) { rh.Set(name, value[0]) })
	method := http.MethodHead
	if ctx.IsGet() {
		method = http.MethodGet
		// Copied: rr goes back to rawReads when this returns.
		ctx.Response.SetBody(p.Content)
	}
	s.rawMetrics.observe(method, http.StatusOK, start)
	return true
}

// FastStarts are the first bytes of the requests ServeFast may answer
// (raw reads), as they come on the wire: a front may send a connection
// whose first request starts otherwise straight to Handler.
func (s *Server) FastStarts() []string {
	prefix := s.cfg.BasePath + httpx.RawPrefix
	return []string{"GET " + prefix, "HEAD " + prefix}
}

// fastRawID is the paste id of a request ServeFast may answer, and whether
// it is one: it has no body, its URI as sent is the path the router would
// see (no escapes, no query) and a raw read's (httpx.RawID) under
// Config.BasePath, and it asks for no conditional or partial answer.
// (fasthttp, like net/http, refuses an HTTP/1.1 request without Host
// before it gets here.)
func (s *Server) fastRawID(ctx *fasthttp.RequestCtx) (string, bool) {
	h := &ctx.Request.Header
	if cl := h.ContentLength(); cl > 0 || cl == -1 { // -1: chunked
		return "", false
	}
	uri := ctx.RequestURI()
	if bytes.IndexAny(uri, "%?#") >= 0 {
		return "", false
	}
	for _, k := range httpx.ConditionalHeaders {
		if h.Peek(k) != nil {
			return "", false
		}
	}
	path, ok := strings.CutPrefix(string(uri), s.cfg.BasePath)
	if !ok {
		return "", false
	}
	return httpx.RawID(path)
}
