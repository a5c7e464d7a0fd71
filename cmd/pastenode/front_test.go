package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// startFront serves a front on a loopback port whose fast side answers GET
// /fast with "fast" and whose slow side answers every request with who
// served it, its method, path, X-Dup headers and body. It returns the
// address and a function that stops the front and returns serve's error.
func startFront(t *testing.T) (string, func() error) {
	t.Helper()
	return startFrontWith(t, publicLimits, slog.New(slog.DiscardHandler))
}

// startFrontWith is startFront with limits l and the front logging to log;
// its fast side panics on GET /boom, and reads the body of POST /fastbody
// and answers with its length.
func startFrontWith(t *testing.T, l httpLimits, log *slog.Logger) (string, func() error) {
	t.Helper()
	slow := publicLimits.server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/halfclose" {
			halfClose(w)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "slow %s %s %q %d %s", r.Method, r.URL.Path, r.Header["X-Dup"], len(body), body)
	}), slog.New(slog.DiscardHandler))
	fast := func(ctx *fasthttp.RequestCtx) bool {
		if string(ctx.Path()) == "/boom" {
			ctx.SetBodyString("half an answer")
			panic("boom")
		}
		if ctx.IsPost() && string(ctx.Path()) == "/fastbody" {
			body, err := io.ReadAll(ctx.RequestBodyStream())
			if err != nil {
				ctx.SetConnectionClose()
				ctx.Error(err.Error(), http.StatusRequestTimeout)
				return true
			}
			fmt.Fprintf(ctx, "fast %d", len(body))
			return true
		}
		if !strings.HasSuffix(string(ctx.Path()), "/fast") || !ctx.IsGet() {
			return false
		}
		ctx.SetBodyString("fast")
		return true
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveFrontUntil(ctx, l.newFront(slow, fast, []string{"GET /fast", "GET /boom", "GET " + longBase + "/fast", "POST /fastbody"}, log), ln, log)
	}()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(shutdownGrace + 5*time.Second):
			return fmt.Errorf("front still serving %s after its shutdown grace", shutdownGrace)
		}
	}
	t.Cleanup(func() { stop() })
	return ln.Addr().String(), stop
}

// longBase is a base path longer than any fixed buffer a front might peek
// into.
var longBase = "/" + strings.Repeat("p", 100)

// halfClose takes the connection from net/http, writes "half-closed" (or
// why it cannot) and half-closes it, then waits for the client to close.
func halfClose(w http.ResponseWriter) {
	c, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		fmt.Fprintf(c, "%T cannot be half-closed", c)
		return
	}
	io.WriteString(c, "half-closed")
	if err := cw.CloseWrite(); err != nil {
		fmt.Fprintf(c, ": %v", err)
		return
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	io.Copy(io.Discard, c)
}

// frontConn is a client connection to a front that reads answers in turn.
type frontConn struct {
	net.Conn
	br *bufio.Reader
}

func dialFront(t *testing.T, addr string) *frontConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &frontConn{Conn: c, br: bufio.NewReader(c)}
}

// answer reads the next answer and returns its status code and body.
func (c *frontConn) answer(t *testing.T) (int, string) {
	t.Helper()
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("answer cut: %v", err)
	}
	return resp.StatusCode, string(body)
}

// TestFrontHandsOffTheConnection: on one connection, pipelined, the
// front answers a fast read itself; the first request it does not answer,
// with a body longer than fasthttp reads ahead, reaches the slow server
// whole, its repeated headers in order; every request after it on the
// connection, fast reads included, is the slow server's, a chunked body
// among them.
func TestFrontHandsOffTheConnection(t *testing.T) {
	addr, _ := startFront(t)
	c := dialFront(t, addr)
	big := strings.Repeat("0123456789abcdef", 20<<10/16) // 20 KiB
	chunked := "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n"
	io.WriteString(c, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n"+
		"GET /fast HTTP/1.1\r\nHost: x\r\n\r\n"+
		fmt.Sprintf("POST /create HTTP/1.1\r\nHost: x\r\nX-Dup: a\r\nx-dup: b\r\nContent-Length: %d\r\n\r\n%s", len(big), big)+
		"GET /fast HTTP/1.1\r\nHost: x\r\n\r\n"+
		"POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"+chunked+
		"GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	want := []string{
		"fast",
		"fast",
		fmt.Sprintf(`slow POST /create ["a" "b"] %d %s`, len(big), big),
		`slow GET /fast [] 0 `,
		`slow POST /chunked [] 12 hello, world`,
		`slow GET /other [] 0 `,
	}
	for i, w := range want {
		code, body := c.answer(t)
		if code != http.StatusOK || body != w {
			t.Errorf("answer %d: %d %.80q, want 200 %.80q", i, code, body, w)
		}
	}
	if n, err := c.br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("after Connection: close: read %d bytes, %v; want the connection closed", n, err)
	}
}

// TestFrontContinuesOnce: a request that expects 100-continue gets one
// 100 Continue, not a second from net/http, and its body reaches the slow
// server, whether it comes first on its connection (net/http's from the
// start) or after a fast read (handed off from fasthttp, which has
// answered the expectation); any other expectation reaches net/http, which
// refuses it with a 417.
func TestFrontContinuesOnce(t *testing.T) {
	addr, _ := startFront(t)
	for _, first := range []bool{true, false} {
		c := dialFront(t, addr)
		if !first {
			io.WriteString(c, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
			if code, body := c.answer(t); code != http.StatusOK || body != "fast" {
				t.Fatalf("GET /fast: %d %q", code, body)
			}
		}
		io.WriteString(c, "POST /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		line, err := c.br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
			t.Fatalf("first %v: first line %q, %v; want a 100 Continue", first, line, err)
		}
		if blank, _ := c.br.ReadString('\n'); blank != "\r\n" {
			t.Fatalf("first %v: 100 Continue followed by %q", first, blank)
		}
		io.WriteString(c, "hello")
		code, body := c.answer(t)
		if code == http.StatusContinue {
			t.Fatalf("first %v: a second 100 Continue", first)
		}
		if code != http.StatusOK || body != "slow POST /up [] 5 hello" {
			t.Errorf("first %v: answer %d %q, want the slow server's with the body", first, code, body)
		}
	}
	// An expectation fasthttp does not answer reaches net/http with the
	// request handed off, and net/http refuses it.
	c := dialFront(t, addr)
	io.WriteString(c, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n"+
		"POST /up HTTP/1.1\r\nHost: x\r\nExpect: something\r\nContent-Length: 0\r\n\r\n")
	if code, body := c.answer(t); code != http.StatusOK || body != "fast" {
		t.Fatalf("GET /fast: %d %q", code, body)
	}
	if code, _ := c.answer(t); code != http.StatusExpectationFailed {
		t.Errorf("Expect: something, handed off: %d, want 417", code)
	}
}

// TestFrontRoutesByTheFirstBytes: a connection whose first request starts
// otherwise than a fast one goes to the slow server from the start, and
// stays there; a fast request's start longer than 100 bytes, or split
// over several writes, still reaches the fast server; a connection that sends nothing, or only part
// of a start, within the header limit is closed, and one that closes at
// once costs nothing.
func TestFrontRoutesByTheFirstBytes(t *testing.T) {
	l := publicLimits
	l.header = 300 * time.Millisecond
	addr, _ := startFrontWith(t, l, slog.New(slog.DiscardHandler))

	c := dialFront(t, addr)
	io.WriteString(c, "GET /other HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
	for i, want := range []string{"slow GET /other [] 0 ", "slow GET /fast [] 0 "} {
		if code, body := c.answer(t); code != http.StatusOK || body != want {
			t.Errorf("answer %d: %d %q, want 200 %q", i, code, body, want)
		}
	}

	c = dialFront(t, addr)
	io.WriteString(c, "GET "+longBase+"/fast HTTP/1.1\r\nHost: x\r\n\r\n")
	if code, body := c.answer(t); code != http.StatusOK || body != "fast" {
		t.Errorf("a fast start of %d bytes: %d %q, want the fast answer", len(longBase)+10, code, body)
	}

	c = dialFront(t, addr)
	for _, part := range []string{"G", "ET /f", "ast HTTP/1.1\r\nHost: x\r\n\r\n"} {
		io.WriteString(c, part)
		time.Sleep(20 * time.Millisecond) // each part its own read
	}
	if code, body := c.answer(t); code != http.StatusOK || body != "fast" {
		t.Errorf("a start in three writes: %d %q, want the fast answer", code, body)
	}

	for _, sent := range []string{"", "GET /fa"} {
		c = dialFront(t, addr)
		io.WriteString(c, sent)
		start := time.Now()
		n, err := c.br.Read(make([]byte, 1))
		if n != 0 || err == nil || isTimeout(err) {
			t.Errorf("after %q: read %d bytes, %v; want the connection closed", sent, n, err)
		}
		if d := time.Since(start); d > 10*l.header {
			t.Errorf("after %q: closed after %s, the header limit is %s", sent, d, l.header)
		}
	}
	c = dialFront(t, addr)
	c.Close()
	c = dialFront(t, addr)
	io.WriteString(c, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
	if code, body := c.answer(t); code != http.StatusOK || body != "fast" {
		t.Errorf("after a connection closed at once: %d %q", code, body)
	}
}

// TestFrontGivesABodyItsTime: a body the fast side reads has the body's
// limit to come once the headers are in, as a handed-off one has on
// net/http, not the headers' limit, counted from the request's first
// byte; and no more.
func TestFrontGivesABodyItsTime(t *testing.T) {
	l := publicLimits
	l.header, l.body = 300*time.Millisecond, 1500*time.Millisecond
	addr, _ := startFrontWith(t, l, slog.New(slog.DiscardHandler))
	for _, path := range []string{"/fastbody", "/slow"} {
		c := dialFront(t, addr)
		io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")
		for range 2 {
			time.Sleep(2 * l.header)
			io.WriteString(c, "12345")
		}
		code, body := c.answer(t)
		if code != http.StatusOK || !strings.HasSuffix(body, " 10 1234512345") && body != "fast 10" {
			t.Errorf("POST %s, its body in two parts %s apart: %d %q", path, 2*l.header, code, body)
		}
	}
	// The slow side's limits are publicLimits: only the fast side's is l's.
	for _, path := range []string{"/fastbody"} {
		c := dialFront(t, addr)
		io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345")
		start := time.Now()
		if _, err := io.ReadAll(c.br); err != nil {
			t.Errorf("POST %s, half its body: %v", path, err)
		}
		if d := time.Since(start); d < l.body/2 || d > 3*l.body {
			t.Errorf("POST %s, half its body: closed after %s; the body's limit is %s", path, d, l.body)
		}
	}
}

// TestFrontBodyTimeOnlyForBodies: only a request with a body gets the
// body's time; a read, which has none, sets no deadline of its own.
func TestFrontBodyTimeOnlyForBodies(t *testing.T) {
	for req, want := range map[string]time.Duration{
		"GET /raw/x HTTP/1.1\r\nHost: x\r\n\r\n":                           0,
		"HEAD /raw/x HTTP/1.0\r\n\r\n":                                     0,
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n":          0,
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n":         publicLimits.body,
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n": publicLimits.body,
		"GET /raw/x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n":      publicLimits.body,
	} {
		var h fasthttp.RequestHeader
		if err := h.Read(bufio.NewReader(strings.NewReader(req))); err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		if got := publicLimits.bodyTime(&h).ReadTimeout; got != want {
			t.Errorf("%q: read timeout %s, want %s", req, got, want)
		}
	}
}

// TestFrontLimits: request headers over maxHeader get a 431 with a
// one-line reason, malformed requests a 400, and the front keeps serving.
func TestFrontLimits(t *testing.T) {
	addr, _ := startFront(t)
	for _, tc := range []struct {
		req  string
		code int
	}{
		{"GET /fast HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", maxHeader) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
		{"GET /slow HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", maxHeader) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
		{"GET /slow HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 15<<10) + "\r\n\r\n", http.StatusOK},
		{"GET /fast HTTP/1.1\r\n\r\n", http.StatusBadRequest},
		{"BLAH\r\n\r\n", http.StatusBadRequest},
		{"GET /fast HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 15<<10) + "\r\n\r\n", http.StatusOK},
	} {
		c := dialFront(t, addr)
		io.WriteString(c, tc.req)
		code, body := c.answer(t)
		if code != tc.code || strings.Count(body, "\n") > 1 {
			t.Errorf("%.40q: %d %q, want %d with a one-line reason", tc.req, code, body, tc.code)
		}
	}
}

// TestFrontStops: stopping the front with a connection handed off and
// one on fasthttp, both idle, closes both and ends serveFrontUntil at
// once.
func TestFrontStops(t *testing.T) {
	addr, stop := startFront(t)
	slowConn, fastConn := dialFront(t, addr), dialFront(t, addr)
	io.WriteString(slowConn, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\nGET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	if code, body := slowConn.answer(t); code != http.StatusOK || body != "fast" {
		t.Fatalf("fast before the handoff: %d %q", code, body)
	}
	io.WriteString(fastConn, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
	if code, body := slowConn.answer(t); code != http.StatusOK || !strings.HasPrefix(body, "slow ") {
		t.Fatalf("slow: %d %q", code, body)
	}
	if code, body := fastConn.answer(t); code != http.StatusOK || body != "fast" {
		t.Fatalf("fast: %d %q", code, body)
	}
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// Idle connections are closed at once: nothing waits for fasthttp's
	// 100 ms poll of what is open.
	if d := time.Since(start); d > 95*time.Millisecond {
		t.Errorf("stopping with only idle connections took %s", d)
	}
	for name, c := range map[string]*frontConn{"handed off": slowConn, "fast": fastConn} {
		if n, err := c.br.Read(make([]byte, 1)); n != 0 || err == nil || isTimeout(err) {
			t.Errorf("%s connection after the stop: read %d bytes, %v; want it closed", name, n, err)
		}
	}
}

// TestFrontPanicAnswers500: a panic in the fast side is logged with its
// stack and answered with a 500 that closes the connection, none of the
// half-made answer sent; the front keeps serving.
func TestFrontPanicAnswers500(t *testing.T) {
	var logged lockedBuffer
	addr, _ := startFrontWith(t, publicLimits, slog.New(slog.NewTextHandler(&logged, nil)))
	c := dialFront(t, addr)
	io.WriteString(c, "GET /boom HTTP/1.1\r\nHost: x\r\n\r\n")
	if code, body := c.answer(t); code != http.StatusInternalServerError || body != "internal error\n" {
		t.Errorf("GET /boom: %d %q, want 500 \"internal error\"", code, body)
	}
	if n, err := c.br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("after the 500: read %d bytes, %v; want the connection closed", n, err)
	}
	c = dialFront(t, addr)
	io.WriteString(c, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
	if code, body := c.answer(t); code != http.StatusOK || body != "fast" {
		t.Errorf("GET /fast after the panic: %d %q", code, body)
	}
	if s := logged.String(); !strings.Contains(s, "boom") || !strings.Contains(s, "front.go") {
		t.Errorf("the panic was not logged with its stack: %q", s)
	}
}

// TestFrontConnectionsHalfClose: the connection a net/http handler gets,
// net/http's from the start or handed off from fasthttp, half-closes the
// socket beneath when asked, as net/http asks before it closes one whose
// request it did not read whole (a 431, a create over the size limit), so
// that the client reads the answer rather than a reset.
func TestFrontConnectionsHalfClose(t *testing.T) {
	addr, _ := startFront(t)
	for _, first := range []bool{true, false} {
		c := dialFront(t, addr)
		if !first {
			io.WriteString(c, "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
			if code, body := c.answer(t); code != http.StatusOK || body != "fast" {
				t.Fatalf("GET /fast: %d %q", code, body)
			}
		}
		io.WriteString(c, "GET /halfclose HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(c.br)
		if err != nil || string(got) != "half-closed" {
			t.Errorf("first %v: read %q, %v; want \"half-closed\" and the end of the stream", first, got, err)
		}
	}
}
