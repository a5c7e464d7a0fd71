package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"
)

// httpLimits are the time limits of the public HTTP server of a node or a
// mirror, so that slow or hostile clients cannot hold connections open.
type httpLimits struct {
	// header is how long a client has to send a request's headers, from
	// its first byte (slowloris); idle how long a kept-alive connection
	// may wait for its next request.
	header, idle time.Duration
	// body is how long a client has to send a request's body once its
	// headers are in.
	body time.Duration
	// stall is how long a client may take none of the bytes sent to it
	// before its connection is closed.
	stall time.Duration
}

// publicLimits are the limits of every public server. The body's is a
// paste of the largest default size (1 MiB) at a slow 35 KB/s.
var publicLimits = httpLimits{header: 10 * time.Second, idle: 2 * time.Minute, body: 30 * time.Second, stall: 2 * time.Minute}

// server returns an HTTP server for h within l. Of net/http's timeouts it
// uses only those it needs on every request anyway (headers, idle): its
// ReadTimeout and WriteTimeout would set two more deadlines on every
// request, a timer each, to limit what reads hardly have.
// The body's limit is set by the requests that have one (withBodyDeadline)
// and a stalled client is cut off by its socket (listen); where the socket
// cannot do that, and over TLS (withTLS), WriteTimeout limits every answer
// to l.stall instead.
func (l httpLimits) server(h http.Handler, log *slog.Logger) *http.Server {
	srv := &http.Server{
		Handler:           withBodyDeadline(h, l.body),
		ReadHeaderTimeout: l.header,
		IdleTimeout:       l.idle,
		// net/http reads 4 KiB beyond MaxHeaderBytes before it answers
		// 431: the request line and headers together stay within
		// maxHeader, as on fasthttp.
		MaxHeaderBytes: maxHeader - 4<<10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if !socketStallLimit() {
		srv.WriteTimeout = l.stall
	}
	return srv
}

// limitFast sets the limits of srv, a fasthttp server (the mirror's). Its
// ReadTimeout runs from a request's first byte (from the accept for a
// connection's first request) to its last, headers and body, like
// ReadHeaderTimeout for the requests the mirror gets: a mirror reads no
// body, and one over mirrorMaxBody gets a 413. IdleTimeout is net/http's.
// Its read buffer bounds a request's headers (larger ones get a 431). A
// stalled client is cut off by its socket, as in server.
func (l httpLimits) limitFast(srv *fasthttp.Server, log *slog.Logger) *fasthttp.Server {
	srv.ReadTimeout = l.header
	srv.IdleTimeout = l.idle
	srv.ReadBufferSize = maxHeader
	srv.MaxRequestBodySize = mirrorMaxBody
	srv.CloseOnShutdown = true
	srv.Logger = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	srv.ErrorHandler = fastRequestError
	if !socketStallLimit() {
		srv.WriteTimeout = l.stall
	}
	return srv
}

// fastRequestError answers a request that a fasthttp server could not
// read, with a one-line reason; the server then closes the connection.
// Only the mirror reads bodies whole (a node's front streams them), so a
// body too large is the mirror's.
func fastRequestError(ctx *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.As(err, &small):
		ctx.Error(fmt.Sprintf("request headers over %d bytes\n", maxHeader), http.StatusRequestHeaderFieldsTooLarge)
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		ctx.Error(fmt.Sprintf("request body over %d bytes: the mirror is read-only\n", mirrorMaxBody), http.StatusRequestEntityTooLarge)
	case isTimeout(err):
		ctx.Error("request not sent in time\n", http.StatusRequestTimeout)
	default:
		ctx.Error("malformed HTTP request\n", http.StatusBadRequest)
	}
	ctx.Response.Header.Set("X-Content-Type-Options", "nosniff")
}

// maxHeader bounds a request's line and headers on every public server:
// nginx's default four times over. Larger ones get a 431.
const maxHeader = 16 << 10

// mirrorMaxBody is the largest request body the mirror reads; its
// requests have none.
const mirrorMaxBody = 64 << 10

// withTLS makes srv serve TLS with cfg. A TLS client may speak HTTP/2,
// whose flow control can hold an answer back while the socket stays alive,
// out of the socket's stall limit's sight: over TLS, WriteTimeout limits
// every answer to l.stall.
func (l httpLimits) withTLS(srv *http.Server, cfg *tls.Config) {
	srv.TLSConfig = cfg
	srv.WriteTimeout = l.stall
}

// withBodyDeadline gives a request with a body d to send it, from when its
// handler starts; a request without one (every read) costs nothing.
func withBodyDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != http.NoBody {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
		}
		h.ServeHTTP(w, r)
	})
}

// listen listens on addr; every connection it accepts is closed by the
// kernel once its peer has taken none of the bytes sent to it for
// l.stall, where the platform allows it (see setStallLimit).
func (l httpLimits) listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil || !socketStallLimit() {
		return ln, err
	}
	return &stallListener{Listener: ln, stall: l.stall}, nil
}

// stallListener sets the stall limit of every connection it accepts.
type stallListener struct {
	net.Listener
	stall time.Duration
}

// Accept returns the next connection with its stall limit set. One whose
// limit cannot be set is closed rather than served unguarded.
func (l *stallListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if err := setStallLimit(c, l.stall); err != nil {
			c.Close()
			continue
		}
		return c, nil
	}
}

// serveUntil serves srv on ln (with TLS when srv has a TLS config) until
// ctx ends, then lets requests in flight finish for up to shutdownGrace.
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener, log *slog.Logger) error {
	serve := func() error { return srv.Serve(ln) }
	if srv.TLSConfig != nil {
		serve = func() error { return srv.ServeTLS(ln, "", "") }
	}
	return runUntil(ctx, serve, srv.Shutdown, log)
}

// runUntil runs serve until it fails or ctx ends; then it calls shutdown
// with shutdownGrace for the requests in flight.
func runUntil(ctx context.Context, serve func() error, shutdown func(context.Context) error, log *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("http shutdown", "err", err)
	}
	return nil
}

// shutdownGrace is how long a server stopping lets requests in flight
// finish.
const shutdownGrace = 10 * time.Second

// serveFastUntil is serveUntil for a fasthttp server, without TLS.
func serveFastUntil(ctx context.Context, srv *fasthttp.Server, ln net.Listener, log *slog.Logger) error {
	return runUntil(ctx, func() error { return srv.Serve(ln) }, srv.ShutdownWithContext, log)
}
