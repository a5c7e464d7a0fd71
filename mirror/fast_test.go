package mirror

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/internal/httpx"
)

// serveFast serves m's FastServer on a loopback port and returns its base
// URL and a function that stops it.
func serveFast(m *Server) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := m.FastServer()
	srv.CloseOnShutdown = true
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Shutdown() }
}

// exchange sends req, a raw HTTP/1.1 request, to the server at addr on a
// connection of its own and returns the answer as text: status line,
// headers but Date sorted by name in canonical form, and body.
func exchange(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	method, _, _ := strings.Cut(req, " ")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		return "no answer: " + err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "answer cut: " + err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", resp.Status)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range resp.Header {
			if k != "Date" && !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "%s: %q\n", k, resp.Header[k])
	}
	fmt.Fprintf(&b, "chunked: %v, length %d\n\n%s", len(resp.TransferEncoding) > 0, resp.ContentLength, body)
	return b.String()
}

// TestFastAnswersAsServeHTTP: the mirror's fasthttp server answers every
// kind of request byte for byte as ServeHTTP behind net/http does, but
// the Date and the order of headers: raw bytes, metadata, static files,
// pages, gzip bodies to clients with and without gzip, expiring pastes,
// conditional and Range requests, errors, writes, escaped paths, queries
// and HEAD. The plain reads among them are answered by the fast path.
func TestFastAnswersAsServeHTTP(t *testing.T) {
	f, ids := benchFSM(t, 20, 4)
	soon := time.Now().Add(time.Hour).UnixNano()
	f.add(t, &fsm.Paste{ID: "expiring", Content: []byte("gone in an hour\n"), CreatedAt: time.Now().UnixNano(), ExpiresAt: soon})
	f.add(t, &fsm.Paste{ID: "binary", Content: []byte{0, 1, 2, 0xff, 0xfe}, CreatedAt: time.Now().UnixNano()})
	path, _ := writeExportFile(t, t.TempDir(), f, time.Now())
	m := startMirror(t, Config{Path: path, Poll: time.Hour})
	std := httptest.NewServer(m.Handler())
	defer std.Close()
	fastURL, stop := serveFast(m)
	defer stop()

	plain, gopaste := ids[1], ids[0] // ids[0] is highlighted as Go
	var static string
	paths, err := m.cur.Load().a.Paths()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if strings.HasPrefix(p, "/static/") {
			static = p
			break
		}
	}
	if static == "" {
		t.Fatal("the archive has no static file")
	}
	etag := get(m, http.MethodGet, "/raw/"+plain).Header().Get("Etag")
	type req struct {
		line    string // method and target
		headers string // raw header lines
		fast    bool   // the fast path answers it
	}
	reqs := []req{
		{"GET /raw/" + plain, "", true},
		{"HEAD /raw/" + plain, "", true},
		{"GET /raw/" + gopaste, "", true},
		{"GET /raw/" + plain, "Accept-Encoding: gzip\r\n", true},
		{"GET /raw/" + plain, "Accept-Encoding: gzip;q=0\r\n", true},
		{"GET /raw/" + plain, "Accept: text/html\r\n", true},
		{"GET /raw/expiring", "", true},
		{"GET /raw/binary", "", true},
		{"GET /api/v1/pastes/" + plain, "", true},
		{"GET /api/v1/pastes/" + plain, "Accept-Encoding: br, gzip\r\n", true},
		{"HEAD /api/v1/pastes/" + plain, "Accept-Encoding: gzip\r\n", true},
		{"GET " + static, "", true},
		{"GET " + static, "Accept-Encoding: gzip\r\n", true},
		{"GET /raw/" + plain, "If-None-Match: " + etag + "\r\n", false},
		{"GET /raw/" + plain, "If-None-Match: \"other\"\r\n", false},
		{"GET /raw/" + plain, "If-None-Match:\r\n", false},
		{"GET /raw/" + plain, "Range: bytes=0-9\r\n", false},
		{"GET /raw/" + plain, "If-Modified-Since: Mon, 01 Jan 2024 00:00:00 GMT\r\n", false},
		{"GET /raw/" + plain + "?x=1", "", false},
		{"GET /raw/%" + fmt.Sprintf("%X", plain[0]) + plain[1:], "", false},
		{"GET /raw/nosuch", "", false},
		{"GET /raw/nosuch", "Accept: text/html\r\n", false},
		{"GET /raw/", "", false},
		{"GET /" + plain, "", false},
		{"GET /" + plain, "Accept: text/html\r\n", false},
		{"GET /" + gopaste, "Accept: text/html\r\nAccept-Encoding: gzip\r\n", false},
		{"GET /", "", false},
		{"GET /", "Accept: text/html\r\n", false},
		{"GET /healthz", "", false},
		{"GET /api/v1/nothing", "", false},
		{"POST /raw/" + plain, "Content-Length: 5\r\n\r\nhello", false},
		{"DELETE /raw/" + plain, "", false},
	}
	for _, r := range reqs {
		text := r.line + " HTTP/1.1\r\nHost: mirror\r\nConnection: close\r\n" + r.headers
		if !strings.Contains(r.headers, "\r\n\r\n") {
			text += "\r\n"
		}
		want := exchange(t, strings.TrimPrefix(std.URL, "http://"), text)
		got := exchange(t, strings.TrimPrefix(fastURL, "http://"), text)
		if got != want {
			t.Errorf("%s %q:\nfasthttp:\n%.600s\nnet/http:\n%.600s", r.line, r.headers, got, want)
		}
		var ctx fasthttp.RequestCtx
		if err := ctx.Request.Read(bufio.NewReader(strings.NewReader(text))); err != nil {
			t.Fatalf("%s: %v", r.line, err)
		}
		if served := m.serveFast(&ctx); served != r.fast {
			t.Errorf("%s %q: the fast path answered it: %v, want %v", r.line, r.headers, served, r.fast)
		}
	}
}

// TestFastHeadCountsTheBody: a HEAD through the fast path says the length
// of the body a GET gets, and sends none.
func TestFastHeadCountsTheBody(t *testing.T) {
	f, ids := benchFSM(t, 4, 0)
	path, _ := writeExportFile(t, t.TempDir(), f, time.Now())
	m := startMirror(t, Config{Path: path, Poll: time.Hour})
	url, stop := serveFast(m)
	defer stop()
	addr := strings.TrimPrefix(url, "http://")
	head := exchange(t, addr, "HEAD /raw/"+ids[0]+" HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n")
	if !strings.Contains(head, "length 1024\n\n") || !strings.HasSuffix(head, "\n\n") {
		t.Errorf("HEAD of 1 KiB:\n%s", head)
	}
}

// TestFastPanicCutsTheConnection: a panic in a handler behind the adaptor
// is logged and costs its connection, not the process.
func TestFastPanicCutsTheConnection(t *testing.T) {
	var logged lockedBuffer
	h := abortOnPanic(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/boom" {
			panic("boom")
		}
		io.WriteString(w, "ok")
	}), func(msg string, args ...any) { fmt.Fprintln(&logged, msg, args) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: fasthttpadaptor.NewFastHTTPHandler(h)}
	go srv.Serve(ln)
	defer srv.Shutdown()
	addr := ln.Addr().String()
	if got := exchange(t, addr, "GET /boom HTTP/1.1\r\nHost: m\r\n\r\n"); !strings.HasPrefix(got, "no answer") {
		t.Errorf("GET /boom: got %q, want the connection cut", got)
	}
	if got := exchange(t, addr, "GET /fine HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n"); !strings.HasPrefix(got, "200") {
		t.Errorf("GET /fine after the panic: %q", got)
	}
	if !strings.Contains(logged.String(), "boom") {
		t.Errorf("the panic was not logged: %q", logged.String())
	}
}

// TestRawPathOneRule: the mirror takes a path for a raw read exactly when
// the live node does (httpx.RawID), whether a browser or curl asks, so
// that a mirror and a node answer the same paths alike.
func TestRawPathOneRule(t *testing.T) {
	for _, path := range []string{"/raw/abcdefgh", "/raw/a", "/raw/", "/raw", "/raw/abcdefgh/", "/raw/a/b",
		"/rawabcdefgh", "/abcdefgh", "/x/raw/abcdefgh", "/", "/raw/.."} {
		_, want := httpx.RawID(path)
		for _, html := range []bool{false, true} {
			if route, key := mirrorRoute(path, html); (route == "raw") != want || want && key != path {
				t.Errorf("%s (html %v): route %q with key %q; RawID says %v", path, html, route, key, want)
			}
		}
	}
}
