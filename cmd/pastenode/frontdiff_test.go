package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// rawAPI is a stand-in for the API: net/http answers every request, and
// the fast side answers the plain raw read of /raw/paste with the same
// bytes, as api.Server.ServeFast does for the real one.
func rawAPI() (http.Handler, func(*fasthttp.RequestCtx) bool) {
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/raw/paste" && r.Method == http.MethodGet && len(body) == 0 {
			io.WriteString(w, "the paste")
			return
		}
		fmt.Fprintf(w, "%s %s %d bytes", r.Method, r.URL.Path, len(body))
	})
	fast := func(ctx *fasthttp.RequestCtx) bool {
		if !ctx.IsGet() || string(ctx.RequestURI()) != "/raw/paste" || ctx.Request.Header.ContentLength() != 0 {
			return false
		}
		ctx.SetBodyString("the paste")
		return true
	}
	return slow, fast
}

// serveAll serves the stand-in API on three loopback ports: with the
// front, on net/http alone, and over TLS (net/http, as a node with
// --tls-cert serves), and returns their addresses.
func serveAll(t *testing.T) (withFront, plain, withTLS string) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	slow, fast := rawAPI()
	ctx, cancel := context.WithCancel(context.Background())
	var done []chan error
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := publicLimits.server(slow, log)
		errc := make(chan error, 1)
		done = append(done, errc)
		if i == 0 {
			withFront = ln.Addr().String()
			go func() {
				errc <- serveFrontUntil(ctx, publicLimits.newFront(srv, fast, []string{"GET /raw/", "HEAD /raw/"}, log), ln, log)
			}()
		} else {
			if i == 1 {
				plain = ln.Addr().String()
			} else {
				withTLS = ln.Addr().String()
				publicLimits.withTLS(srv, &tls.Config{Certificates: []tls.Certificate{testCert(t)}, MinVersion: tls.VersionTLS12})
			}
			go func() { errc <- serveUntil(ctx, srv, ln, log) }()
		}
	}
	t.Cleanup(func() {
		cancel()
		for _, c := range done {
			<-c
		}
	})
	return withFront, plain, withTLS
}

// exchange sends the raw bytes to addr, in pieces with a pause between
// them, and returns every answer's status and body, or how the exchange
// ended, until the server closes or 3 s pass without an answer.
func exchange(t *testing.T, addr string, useTLS bool, pieces ...string) []string {
	t.Helper()
	var c net.Conn
	var err error
	if useTLS {
		c, err = tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	} else {
		c, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, p := range pieces {
		if i > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		io.WriteString(c, p)
	}
	br := bufio.NewReader(c)
	var got []string
	for {
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				got = append(got, "no answer")
			}
			return got
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// Error texts differ between the two parsers; the status is the
		// contract, the body only where a request was served.
		if resp.StatusCode >= 400 {
			body = nil
		}
		got = append(got, fmt.Sprintf("%d %s", resp.StatusCode, body))
		if resp.Close {
			return got
		}
	}
}

// TestFrontAnswersAsNetHTTP sends the same raw bytes to the node's front
// and to net/http alone, which is also how the node serves HTTPS, and
// wants the same answers: the same statuses, the same bodies where a
// request was served. These are the inputs that two HTTP parsers may read
// differently. (Before the front checked the header block's form, bare LF
// line ends and a request without headers waited for the header timeout.)
func TestFrontAnswersAsNetHTTP(t *testing.T) {
	withFront, plain, withTLS := serveAll(t)
	tests := []struct {
		name   string
		pieces []string
	}{
		{"plain read", []string{"GET /raw/paste HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"}},
		{"bare LF line ends", []string{"GET /raw/paste HTTP/1.1\nHost: x\nConnection: close\n\n"}},
		{"bare LF after the request line", []string{"GET /raw/paste HTTP/1.1\r\nHost: x\nConnection: close\n\n"}},
		{"obs-fold", []string{"GET /raw/paste HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n 2\r\nConnection: close\r\n\r\n"}},
		{"space before a colon", []string{"GET /raw/paste HTTP/1.1\r\nHost : x\r\nConnection: close\r\n\r\n"}},
		{"no host", []string{"GET /raw/paste HTTP/1.1\r\nConnection: close\r\n\r\n"}},
		{"two hosts", []string{"GET /raw/paste HTTP/1.1\r\nHost: x\r\nHost: y\r\nConnection: close\r\n\r\n"}},
		{"duplicate content length", []string{"GET /raw/paste HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nab"}},
		{"content length and chunked", []string{"GET /raw/paste HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n"}},
		{"a body on a read", []string{"GET /raw/paste HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nab"}},
		{"HTTP/1.0", []string{"GET /raw/paste HTTP/1.0\r\n\r\n"}},
		{"pipeline of fast and slow", []string{"GET /raw/paste HTTP/1.1\r\nHost: x\r\n\r\n" +
			"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc" +
			"GET /raw/paste HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"}},
		{"slow first bytes", []string{"GE", "T /raw/pa", "ste HTTP/1.1\r\nHost: x\r\n", "Connection: close\r\n\r\n"}},
		{"a fast start that is not", []string{"GET /raw/pasteX HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := exchange(t, plain, false, tt.pieces...)
			if got := exchange(t, withFront, false, tt.pieces...); strings.Join(got, " | ") != strings.Join(want, " | ") {
				t.Errorf("with the front: %q\nnet/http alone: %q", got, want)
			}
			if got := exchange(t, withTLS, true, tt.pieces...); strings.Join(got, " | ") != strings.Join(want, " | ") {
				t.Errorf("over TLS: %q\nplain net/http: %q", got, want)
			}
		})
	}
}

// testCert is a self-signed certificate for 127.0.0.1.
func testCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
