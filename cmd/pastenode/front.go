package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// front serves a node's plain HTTP connections on fasthttp, on which a raw
// read costs the node much less CPU than on net/http, without moving the
// API off net/http. It routes each connection by the first bytes of its
// first request (route): one that starts like a request fast may answer
// (the API's plain raw reads: api.Server.ServeFast, api.Server.FastStarts)
// goes to the fasthttp server, every other at once to slow, net/http's
// server of the whole API. On fasthttp, fast answers each request it can;
// at the first it cannot, the connection is handed to slow, that request
// included, for the rest of its life (handOff). So everything else
// (creates, pages, errors, conditional answers, the export's progress
// answers) is served by net/http exactly as it is without a front, and a
// client that only reads raw bytes (curl, a script, a cache) never leaves
// fasthttp.
type front struct {
	fast *fasthttp.Server
	slow *http.Server
	// fastConns and handoff are the fast and slow servers' listeners.
	fastConns, handoff *handoffListener
	// fastOpen counts the connections given to the fast server until they
	// close, handed off or not.
	fastOpen connCounter
	// fastStarts are the first bytes of the requests fast may answer.
	fastStarts [][]byte
	// header is how long a new connection has to send its first bytes.
	header time.Duration
}

// newFront returns a front for slow, net/http's server of the whole API. A
// connection that starts with one of fastStarts goes to a fasthttp server
// within l's limits, where fast answers each request it takes (it reports
// whether it did) and the first it does not take hands the connection to
// slow; every other connection goes to slow at once. The fasthttp server
// reads only the headers of a request before the handoff: a body is left
// on the connection (StreamRequestBody) for net/http to read within its
// own limits.
func (l httpLimits) newFront(slow *http.Server, fast func(*fasthttp.RequestCtx) bool, fastStarts []string, log *slog.Logger) *front {
	f := &front{slow: slow, fastConns: newHandoffListener(), handoff: newHandoffListener(), header: l.header}
	for _, s := range fastStarts {
		f.fastStarts = append(f.fastStarts, []byte(s))
	}
	f.fast = &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			if !answerFast(ctx, fast, log) {
				f.handOff(ctx)
			}
		},
		NoDefaultServerHeader:        true,
		NoDefaultContentType:         true,
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		KeepHijackedConns:            true,
		ReadTimeout:                  l.header,
		IdleTimeout:                  l.idle,
		ReadBufferSize:               maxHeader,
		CloseOnShutdown:              true,
		HeaderReceived:               l.bodyTime,
		// A malformed request is answered with its reason and logged only
		// at debug (net/http does not log it): a client could fill the log
		// with them.
		Logger:       slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		ErrorHandler: fastRequestError,
	}
	if !socketStallLimit() {
		f.fast.WriteTimeout = l.stall
	}
	return f
}

// bodyTime gives a request with a body (a length, or chunked) l.body to
// send it once its headers are in, as withBodyDeadline gives it on
// net/http: fasthttp reads up to 8 KiB of it before the handler, and a
// create (api.Server.ServeFast) or a handoff reads the rest. A request
// without one (every read: fasthttp says -2) keeps the deadline it has,
// at no cost.
func (l httpLimits) bodyTime(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	if n := h.ContentLength(); n > 0 || n == -1 {
		return fasthttp.RequestConfig{ReadTimeout: l.body}
	}
	return fasthttp.RequestConfig{}
}

// answerFast reports whether fast answered ctx. A panic in fast (a bug) is
// logged and answered with a 500, and the connection closed, as net/http's
// server would rather than end the process.
func answerFast(ctx *fasthttp.RequestCtx, fast func(*fasthttp.RequestCtx) bool, log *slog.Logger) (answered bool) {
	defer func() {
		if e := recover(); e != nil {
			log.Error("panic serving a request", "path", string(ctx.Path()), "panic", e, "stack", string(debug.Stack()))
			ctx.Response.Reset()
			ctx.Error("internal error\n", http.StatusInternalServerError)
			ctx.SetConnectionClose()
			answered = true
		}
	}()
	return fast(ctx)
}

// handOff gives ctx's connection to the slow server, with the request as it
// was sent: its request line and headers (but an Expect: 100-continue,
// which fasthttp has answered already), then what fasthttp read of its
// body, then the rest of the connection.
func (f *front) handOff(ctx *fasthttp.RequestCtx) {
	h := &ctx.Request.Header
	var head bytes.Buffer
	fmt.Fprintf(&head, "%s %s %s\r\n", h.Method(), h.RequestURI(), h.Protocol())
	if ctx.Request.MayContinue() {
		writeHeaderLines(&head, h.RawHeaders())
	} else {
		head.Write(h.RawHeaders())
	}
	// A body of known length is read from the stream, which hands out what
	// fasthttp read ahead (up to 8 KiB) before what is still on the
	// connection: both are the bytes as sent. A chunked body is still all
	// on the connection.
	if cl := h.ContentLength(); cl > 0 {
		if _, err := io.CopyN(&head, ctx.RequestBodyStream(), int64(min(cl, 8<<10))); err != nil {
			ctx.SetConnectionClose()
			ctx.Error("request body cut short\n", http.StatusBadRequest)
			return
		}
	}
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		f.handoff.hand(&handedConn{Conn: c, r: io.MultiReader(&head, c)})
	})
}

// writeHeaderLines writes the header lines in raw, the header block of a
// request that expects 100-continue, to b, but for Expect: fasthttp has
// sent the 100 Continue, and net/http would send a second one.
func writeHeaderLines(b *bytes.Buffer, raw []byte) {
	for line := range bytes.Lines(raw) {
		name, _, _ := bytes.Cut(line, []byte(":"))
		if bytes.EqualFold(bytes.TrimSpace(name), []byte("Expect")) {
			continue
		}
		b.Write(line)
	}
}

// serveFrontUntil serves f on ln until ctx ends, then lets requests in
// flight on either server finish for up to shutdownGrace.
func serveFrontUntil(ctx context.Context, f *front, ln net.Listener, log *slog.Logger) error {
	serve := func() error {
		errc := make(chan error, 3)
		go func() { errc <- f.fast.Serve(f.fastConns) }()
		go func() { errc <- f.slow.Serve(f.handoff) }()
		go func() { errc <- f.accept(ln, log) }()
		// One ends only once its listener is closed: close all three,
		// so that none serves on; runUntil's shutdown is for a stop.
		err := <-errc
		ln.Close()
		f.fastConns.Close()
		f.handoff.Close()
		return err
	}
	return runUntil(ctx, serve, f.shutdown(ln), log)
}

// shutdown returns the function that stops f, serving on ln: it stops
// accepting, then waits for the connections of both servers to close,
// the idle ones at once.
func (f *front) shutdown(ln net.Listener) func(context.Context) error {
	return func(ctx context.Context) error {
		ln.Close()
		// fasthttp's shutdown closes the idle connections at once but
		// looks for none left only every 100 ms: the front counts its
		// own, so that a stop with nothing in flight takes no such tick.
		go f.fast.ShutdownWithContext(ctx)
		slow := make(chan error, 1)
		go func() { slow <- f.slow.Shutdown(ctx) }()
		return errors.Join(f.fastOpen.wait(ctx), <-slow)
	}
}

// accept accepts the connections of ln and routes each, until ln is
// closed. An error accepting one (out of file descriptors) is logged and
// tried again after a pause, up to a second, as net/http does.
func (f *front) accept(ln net.Listener, log *slog.Logger) error {
	var pause time.Duration
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			log.Warn("http accept", "err", err, "retry_in", pause)
			time.Sleep(pause)
			continue
		}
		pause = 0
		go f.route(c)
	}
}

// route reads the first bytes of c's first request and hands c, those
// bytes first, to the fast server if they start a request it may answer,
// else to net/http's at once, which then parses the request only once. A
// request that starts as a fast one goes to the fast server only if its
// header block is in the plain form both parsers read alike (plainHead);
// the rest, such as bare LF line ends, which fasthttp does not take, goes
// to net/http. A connection that sends nothing, or only part of a fast
// start or of its header block, within the header limit is closed.
func (f *front) route(c net.Conn) {
	buf := make([]byte, 0, 1024)
	c.SetReadDeadline(time.Now().Add(f.header))
	fast := false
	for {
		if !f.undecided(buf) {
			if fast = f.startsFast(buf); !fast || headEnd(buf) >= 0 || len(buf) >= maxHeader {
				break
			}
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil {
			if len(buf) == 0 || isTimeout(err) {
				c.Close()
				return
			}
			fast = false
			break
		}
	}
	c.SetReadDeadline(time.Time{})
	hc := &handedConn{Conn: c, r: io.MultiReader(bytes.NewReader(buf), c)}
	if fast && plainHead(buf) {
		f.fastOpen.add()
		f.fastConns.hand(&countedConn{Conn: hc, counter: &f.fastOpen})
	} else {
		f.handoff.hand(hc)
	}
}

// headEnd returns the length of the header block that b starts with, its
// blank line included, or -1 while b holds no end of it, bare LF line ends
// included.
func headEnd(b []byte) int {
	if i := bytes.Index(b, []byte("\n\r\n")); i >= 0 {
		if j := bytes.Index(b, []byte("\n\n")); j >= 0 && j < i {
			return j + 2
		}
		return i + 3
	}
	if j := bytes.Index(b, []byte("\n\n")); j >= 0 {
		return j + 2
	}
	return -1
}

// plainHead reports whether b starts with a header block of the form
// fasthttp and net/http read alike: an HTTP/1.1 request line and at least
// one header line, every line ended by CRLF.
func plainHead(b []byte) bool {
	end := headEnd(b)
	if end < 0 {
		return false
	}
	head := b[:end]
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	return bytes.HasSuffix(line, []byte(" HTTP/1.1")) && len(rest) > 2 &&
		bytes.Count(head, []byte("\n")) == bytes.Count(head, []byte("\r\n"))
}

// undecided reports whether b, the first bytes of a request, may still
// become one of f.fastStarts but is none yet.
func (f *front) undecided(b []byte) bool {
	return slices.ContainsFunc(f.fastStarts, func(s []byte) bool { return len(b) < len(s) && bytes.HasPrefix(s, b) })
}

// startsFast reports whether b starts with one of f.fastStarts.
func (f *front) startsFast(b []byte) bool {
	return slices.ContainsFunc(f.fastStarts, func(s []byte) bool { return bytes.HasPrefix(b, s) })
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// connCounter counts open connections and tells when none is left.
type connCounter struct {
	mu      sync.Mutex
	n       int
	waiters []chan struct{}
}

func (c *connCounter) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *connCounter) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n--; c.n == 0 {
		for _, w := range c.waiters {
			close(w)
		}
		c.waiters = nil
	}
}

// wait returns once no connection is open, or with ctx's error.
func (c *connCounter) wait(ctx context.Context) error {
	c.mu.Lock()
	if c.n == 0 {
		c.mu.Unlock()
		return nil
	}
	w := make(chan struct{})
	c.waiters = append(c.waiters, w)
	c.mu.Unlock()
	select {
	case <-w:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// countedConn is a connection counted in counter until it is closed.
type countedConn struct {
	net.Conn
	counter *connCounter
	once    sync.Once
}

func (c *countedConn) CloseWrite() error { return closeWrite(c.Conn) }

func (c *countedConn) Close() error {
	c.once.Do(c.counter.done)
	return c.Conn.Close()
}

// handedConn is a connection given to a server with bytes already read
// from it (a request's first bytes, or a request fasthttp read), which its
// reads return first.
type handedConn struct {
	net.Conn
	r io.Reader
}

func (c *handedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *handedConn) CloseWrite() error { return closeWrite(c.Conn) }

// handoffListener is the listener of one of a front's servers: it accepts
// the connections the front gives that server.
type handoffListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newHandoffListener() *handoffListener {
	return &handoffListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// hand gives c to the listener's server; once it is closed, c is closed.
func (l *handoffListener) hand(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return handoffAddr{} }

// handoffAddr is the address of a handoffListener, which has none.
type handoffAddr struct{}

func (handoffAddr) Network() string { return "handoff" }
func (handoffAddr) String() string  { return "handoff" }
