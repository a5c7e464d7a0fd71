package api

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pastenode/pastenode/internal/httpx"
)

// ServeFast answers ctx, on a fasthttp server, if it is a plain read of a
// paste's raw bytes (fastRawID) and the paste is there and does not burn,
// with the answer Handler would give: the same headers and bytes, counted
// in the raw route's metrics. It reports whether it answered. It leaves
// everything else unanswered for Handler, a missing paste among them, so
// that the rules of errors, burns and conditional answers live in one
// place.
func (s *Server) ServeFast(ctx *fasthttp.RequestCtx) bool {
	if !ctx.IsGet() && !ctx.IsHead() {
		return false
	}
	id, ok := s.fastRawID(ctx)
	if !ok {
		return false
	}
	start := time.Now()
	stale := staleRead("", string(ctx.Request.Header.Peek(staleHeader)))
	p, err := s.cfg.Store.Read(ctx, id, stale)
	if err != nil || p.Burn {
		return false
	}
	h := rawHeaderPool.Get().(http.Header)
	httpx.SetRawHeaders(h, p)
	h["Last-Modified"] = p.ReadInfo().LastModified()
	rh := &ctx.Response.Header
	for k, vs := range h {
		for _, v := range vs {
			rh.Add(k, v)
		}
	}
	clear(h) // holds no paste's strings while pooled
	rawHeaderPool.Put(h)
	if ctx.IsHead() {
		rh.SetContentLength(len(p.Content))
	} else {
		// Not copied: a paste's record is never changed once written
		// (fsm's arena), and the answer holds it until it is sent.
		ctx.Response.SetBodyRaw(p.Content)
	}
	method := http.MethodGet
	if ctx.IsHead() {
		method = http.MethodHead
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

// rawHeaderPool holds the header maps ServeFast fills.
var rawHeaderPool = sync.Pool{New: func() any { return http.Header{} }}

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
