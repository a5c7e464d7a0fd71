package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pastenode/pastenode/internal/freeport"
)

// TestAdminTokenGenerated: a node without --admin-token makes one on its
// first start into DATA_DIR/admin-token (0600), logs the file's path but
// never the token, keeps it across restarts, and admin calls need it.
func TestAdminTokenGenerated(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	token := ""
	// Raft keeps its address in its configuration: the same on restart.
	raftAddr := freeport.Addr(t)
	for start := range 2 {
		httpAddr := freeport.Addr(t)
		cfg, err := parseFlags([]string{"--node-id", "a1", "--data-dir", dir, "--http-addr", httpAddr,
			"--raft-addr", raftAddr, "--gossip-addr", freeport.Addr(t), "--raft-time-scale", "0.2"},
			func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- serve(ctx, cfg, slog.New(slog.NewTextHandler(syncWriter(&logs), nil))) }()
		stopped := false
		t.Cleanup(func() {
			if !stopped {
				cancel()
				<-done
			}
		})
		base := "http://" + httpAddr
		waitReady(t, base, done)
		path := filepath.Join(dir, "admin-token")
		// The node writes the cluster's token once it has given its new
		// cluster an identity, just after it first leads.
		var st os.FileInfo
		poll(t, 10*time.Second, "the admin token file", func() (err error) {
			st, err = os.Stat(path)
			return err
		})
		if st.Mode().Perm() != 0o600 {
			t.Errorf("admin-token mode: got %s, want 0600", st.Mode().Perm())
		}
		b, _ := os.ReadFile(path)
		got := strings.TrimSpace(string(b))
		if len(got) < 32 || (start == 1 && got != token) {
			t.Fatalf("start %d: token %q (first start's %q): want one long token, kept", start, got, token)
		}
		token = got
		if code, _, _ := fetch(base+"/api/v1/export.cdb", "Authorization", "Bearer wrong"); code != http.StatusUnauthorized {
			t.Errorf("export with a wrong token: got %d, want 401", code)
		}
		if code, _, _ := fetch(base+"/api/v1/export.cdb", "Authorization", "Bearer "+token); code != http.StatusOK {
			t.Errorf("export with the generated token: got %d, want 200", code)
		}
		cancel()
		stopped = true
		if err := <-done; err != nil {
			t.Fatalf("serve: %v", err)
		}
	}
	out := logs.String()
	if !strings.Contains(out, filepath.Join(dir, "admin-token")) {
		t.Errorf("the log does not name the token file:\n%s", out)
	}
	if strings.Contains(out, token) {
		t.Errorf("the log contains the token")
	}
}

func syncWriter(w io.Writer) io.Writer { return &lockedWriter{w: w} }

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestSecurityFlags: the flood limits are on by default, and
// --trusted-proxies takes CIDRs and bare IPs.
func TestSecurityFlags(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	c, err := parseFlags([]string{"--node-id", "x"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.RateLimit <= 0 || c.MaxConnsPerIP <= 0 {
		t.Errorf("defaults: rate limit %d, conns per IP %d; want both on", c.RateLimit, c.MaxConnsPerIP)
	}
	if want := defaultMaxStoreBytes(c.DataDir, c.StorageReserve); want <= 0 || c.MaxStoreBytes != want {
		t.Errorf("default max store bytes: got %d, want the data dir's file system less the reserve, %d", c.MaxStoreBytes, want)
	}
	c, err = parseFlags([]string{"--node-id", "x", "--rate-limit", "0", "--max-store-bytes", "0",
		"--trusted-proxies", "10.0.0.0/8, 127.0.0.1,::1"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.RateLimit != 0 || c.MaxStoreBytes != 0 {
		t.Errorf("--rate-limit 0 --max-store-bytes 0: got %d and %d, want both off", c.RateLimit, c.MaxStoreBytes)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}
	if len(c.TrustedProxies) != 3 || c.TrustedProxies[0] != want[0] || c.TrustedProxies[1] != want[1] || c.TrustedProxies[2] != want[2] {
		t.Errorf("--trusted-proxies: got %v, want %v", c.TrustedProxies, want)
	}
	env := func(k string) (string, bool) {
		return map[string]string{"PASTE_MAX_STORE_BYTES": "1GiB"}[k], k == "PASTE_MAX_STORE_BYTES"
	}
	if c, err = parseFlags([]string{"--node-id", "x"}, env); err != nil || c.MaxStoreBytes != 1<<30 {
		t.Errorf("PASTE_MAX_STORE_BYTES=1GiB: got %v, %v", c, err)
	}
	for _, bad := range [][]string{{"--trusted-proxies", "nope"}, {"--rate-limit", "-1"}, {"--max-store-bytes", "lots"}} {
		if _, err := parseFlags(append([]string{"--node-id", "x"}, bad...), noEnv); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}

// TestConnLimit: a client past its cap of open connections is cut off at
// once; a slot comes back when a connection closes.
func TestConnLimit(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newConnLimitListener(raw, 2, nil)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	echo := func(c net.Conn) error {
		c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("x")); err != nil {
			return err
		}
		_, err := io.ReadFull(c, make([]byte, 1))
		return err
	}
	var conns []net.Conn
	for i := range 3 {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err == nil {
			defer c.Close()
			err = echo(c)
		}
		if i < 2 && err != nil {
			t.Fatalf("connection %d within the cap: %v", i, err)
		}
		if i == 2 && err == nil {
			t.Fatal("third connection: answered, want it cut off")
		}
		conns = append(conns, c)
	}
	conns[0].Close()
	poll(t, 5*time.Second, "a slot back after a close", func() error {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		return echo(c)
	})
}

// TestConnLimitHalfCloses: a connection under the cap can still be
// half-closed, which net/http does so that a client whose body it refused
// reads the answer (a 413) rather than a reset.
func TestConnLimitHalfCloses(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newConnLimitListener(raw, 2, nil)
	defer ln.Close()
	client, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		t.Fatalf("%T cannot be half-closed", c)
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	client.SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := client.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("client read %d bytes, %v; want the end of the stream", n, err)
	}
	// The other direction stays open.
	io.WriteString(client, "x")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatalf("server read after its half-close: %v", err)
	}
}

// TestBodyDeadline: a slow client has far less than two minutes to send a
// request's body, and the connection is closed when it runs out; a
// request without a body gets no deadline from it.
func TestBodyDeadline(t *testing.T) {
	if publicLimits.body <= 0 || publicLimits.body > 30*time.Second || publicLimits.header <= 0 {
		t.Fatalf("public limits %+v: want a header limit and a body limit of at most 30s", publicLimits)
	}
	limits := publicLimits
	limits.body = 300 * time.Millisecond // the same mechanism, quicker
	deadlines := make(chan bool, 2)
	srv := limits.server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		var ne net.Error
		deadlines <- errors.As(err, &ne) && ne.Timeout()
		w.WriteHeader(http.StatusNoContent)
	}), slog.New(slog.DiscardHandler))
	ln, err := limits.listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := serveGet(t, srv, ln)
	if timedOut := <-deadlines; timedOut {
		t.Fatal("a request without a body timed out")
	}
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nslow")
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	io.Copy(io.Discard, c) // returns when the server closes the connection
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("a slow body held the connection for %s", took)
	}
	if timedOut := <-deadlines; !timedOut {
		t.Error("the slow body's read did not time out")
	}
}

// TestHeaderDeadline: a client that sends part of a request's headers is
// cut off at the header limit.
func TestHeaderDeadline(t *testing.T) {
	limits := publicLimits
	limits.header = 200 * time.Millisecond // the same mechanism, quicker
	ln, err := limits.listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := limits.server(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	go srv.Serve(ln)
	defer srv.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	io.WriteString(c, "GET / HTTP/1.1\r\nHo")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	io.Copy(io.Discard, c) // returns when the server closes the connection
	if took := time.Since(start); took < 150*time.Millisecond || took > 5*time.Second {
		t.Errorf("a half-sent request held the connection for %s, want about 200ms", took)
	}
}

// TestTLSWriteTimeout: over TLS, where HTTP/2's flow control can stall an
// answer with the socket alive, every answer has the stall limit as its
// WriteTimeout.
func TestTLSWriteTimeout(t *testing.T) {
	srv := publicLimits.server(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	publicLimits.withTLS(srv, &tls.Config{})
	if srv.TLSConfig == nil || srv.WriteTimeout != publicLimits.stall {
		t.Errorf("TLS config %v, WriteTimeout %s: want %s", srv.TLSConfig, srv.WriteTimeout, publicLimits.stall)
	}
}

// serveGet serves srv on ln until the test ends, and returns a connection
// to it that has sent one GET / request.
func serveGet(t *testing.T, srv *http.Server, ln net.Listener) net.Conn {
	t.Helper()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	return c
}

// TestMirrorServerLimits: the mirror's fasthttp server cuts off a client
// that sends part of a request (at the header limit), a kept-alive
// connection that sends nothing (at the idle limit), and answers headers
// over maxHeader with a 431 and a body over mirrorMaxBody with a
// 413, and then still serves.
func TestMirrorServerLimits(t *testing.T) {
	limits := publicLimits
	limits.header = 200 * time.Millisecond // the same mechanisms, quicker
	limits.idle = 300 * time.Millisecond
	ln, err := limits.listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := limits.limitFast(&fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.WriteString("ok") }}, slog.New(slog.DiscardHandler))
	go srv.Serve(ln)
	defer srv.Shutdown()
	addr := ln.Addr().String()

	heldFor := func(send string) time.Duration {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		io.WriteString(c, send)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		io.Copy(io.Discard, c) // returns when the server closes the connection
		return time.Since(start)
	}
	if took := heldFor("GET / HTTP/1.1\r\nHo"); took < 150*time.Millisecond || took > 5*time.Second {
		t.Errorf("a half-sent request held the connection for %s, want about 200ms", took)
	}
	if took := heldFor("GET / HTTP/1.1\r\nHost: m\r\n\r\n"); took < 250*time.Millisecond || took > 5*time.Second {
		t.Errorf("an idle connection was held for %s after its answer, want about 300ms", took)
	}

	status := func(req string) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, req)
		line, _ := bufio.NewReader(c).ReadString('\n')
		return strings.TrimSpace(line)
	}
	big := "GET / HTTP/1.1\r\nHost: m\r\nX-Big: " + strings.Repeat("x", maxHeader) + "\r\n\r\n"
	if got := status(big); !strings.Contains(got, " 431 ") {
		t.Errorf("headers over %d bytes: %q, want a 431", maxHeader, got)
	}
	body := fmt.Sprintf("POST / HTTP/1.1\r\nHost: m\r\nContent-Length: %d\r\n\r\n", mirrorMaxBody+1) + strings.Repeat("x", mirrorMaxBody+1)
	if got := status(body); !strings.Contains(got, " 413 ") {
		t.Errorf("a body over %d bytes: %q, want a 413", mirrorMaxBody, got)
	}
	if got := status("GET / HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n"); !strings.Contains(got, " 200 ") {
		t.Errorf("a plain request after those: %q", got)
	}
}
