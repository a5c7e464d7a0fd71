package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"

	"github.com/valyala/fasthttp"
)

// A create on fasthttp. Under wrk's creates through a follower, net/http's
// serving was 47% of that node's CPU, its handlers 17% of it
// (BENCHMARKS.md). ServeFast takes the plain creates (fastCreate) and runs
// Handler on them, through an http.Request made of the fasthttp one and a
// ResponseWriter that answers on it, so that every rule of a create
// (options, forms, tokens, rate limits, errors, metrics, headers) is the
// one Handler applies on net/http. fasthttp's own adaptor, which the
// mirror uses for its rare slow answers, runs each request's handler on a
// goroutine of its own and reads the body first: a create took 14-20 µs
// through it against 10-14 µs here, in a Go benchmark of both
// (BENCHMARKS.md).

// fastCreate reports whether ServeFast takes ctx as a create: a POST of
// Config.BasePath + "/", with or without a query, whose body's length is
// known and within the paste size limit. Everything else (a chunked body,
// a larger one, which net/http refuses as it reads) is left to Handler.
func (s *Server) fastCreate(ctx *fasthttp.RequestCtx) bool {
	if !ctx.IsPost() {
		return false
	}
	if path, _, _ := bytes.Cut(ctx.RequestURI(), []byte("?")); !bytes.Equal(path, s.createPath) {
		return false
	}
	n := ctx.Request.Header.ContentLength()
	return n > 0 && int64(n) <= s.cfg.MaxPasteSize
}

// serveCreate runs the whole API's handler on ctx, a request fastCreate
// took, and reports whether it did. The handler reads the body from the
// connection, as on net/http, in the same time (the front's limit,
// cmd/pastenode); fasthttp then discards what it left unread up to 256
// KiB, as net/http does, and closes the connection after the answer when
// more is left. A URI net/url cannot parse (fasthttp refuses those it
// knows of first) is left to net/http, which answers it as it does.
func (s *Server) serveCreate(ctx *fasthttp.RequestCtx) bool {
	h := &ctx.Request.Header
	u, err := url.ParseRequestURI(string(ctx.RequestURI()))
	if err != nil {
		return false
	}
	header := make(http.Header, 8)
	for k, v := range h.All() {
		if string(k) != fasthttp.HeaderHost {
			header.Add(string(k), string(v))
		}
	}
	// The front streams bodies; a server that does not has read it.
	var src io.Reader = ctx.RequestBodyStream()
	if src == nil {
		src = bytes.NewReader(ctx.Request.Body())
	}
	r := &http.Request{
		Method:        http.MethodPost,
		URL:           u,
		Proto:         string(h.Protocol()),
		ProtoMajor:    1,
		Header:        header,
		Body:          io.NopCloser(src),
		ContentLength: int64(h.ContentLength()),
		Host:          string(h.Host()),
		RemoteAddr:    ctx.RemoteAddr().String(),
		RequestURI:    string(ctx.RequestURI()),
	}
	if h.IsHTTP11() {
		r.ProtoMinor = 1
	}
	w := &fastResponse{ctx: ctx, header: make(http.Header, 8)}
	s.whole.ServeHTTP(w, r.WithContext(s.fastContext(ctx.Done())))
	w.finish()
	return true
}

// fastContext returns the context of a create on the fasthttp server whose
// shutdown closes done (what its RequestCtx's Done returns): one that
// ends when done closes, made once per server. The RequestCtx itself is
// a context that ends then too, but not one of the context package's
// own, so that every context derived from it (node.Node's deadline for
// the create's proposal) started a goroutine to watch it: 4-5 µs of a
// create's CPU on the follower that took wrk's creates (BENCHMARKS.md).
// Derived from this one, they start none.
func (s *Server) fastContext(done <-chan struct{}) context.Context {
	if done == nil {
		return context.Background()
	}
	if ctx, ok := s.fastDone.Load(done); ok {
		return ctx.(context.Context)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if prior, loaded := s.fastDone.LoadOrStore(done, ctx); loaded {
		cancel()
		return prior.(context.Context)
	}
	go func() {
		<-done
		cancel()
		s.fastDone.Delete(done)
	}()
	return ctx
}

// fastResponse is an http.ResponseWriter that answers a fasthttp request
// as net/http's server would answer it: the headers as they were when the
// status was written, a Content-Type sniffed from the first bytes when the
// handler set none, 200 when it wrote nothing.
type fastResponse struct {
	ctx    *fasthttp.RequestCtx
	header http.Header
	wrote  bool
}

func (w *fastResponse) Header() http.Header { return w.header }

func (w *fastResponse) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	rh := &w.ctx.Response.Header
	for k, vs := range w.header {
		for _, v := range vs {
			rh.Add(k, v)
		}
	}
	w.ctx.SetStatusCode(code)
}

func (w *fastResponse) Write(p []byte) (int, error) {
	if !w.wrote {
		if _, ok := w.header["Content-Type"]; !ok && len(p) > 0 {
			w.header.Set("Content-Type", http.DetectContentType(p))
		}
		w.WriteHeader(http.StatusOK)
	}
	return w.ctx.Write(p)
}

// finish writes the status if the handler wrote nothing.
func (w *fastResponse) finish() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
}
