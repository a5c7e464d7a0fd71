package api

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/valyala/fasthttp"

	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/internal/httpx"
	"github.com/pastenode/pastenode/ui"
)

// leftCode is the status a test's fasthttp server answers a request that
// ServeFast leaves unanswered with.
const leftCode = 599

// serveFastOnly serves s.ServeFast on a fasthttp server on a loopback port,
// each request it leaves answered with leftCode, and returns its address.
func serveFastOnly(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			if !s.ServeFast(ctx) {
				// The body is read, as the front hands it on: a large
				// one left unread would close the connection early.
				if body := ctx.RequestBodyStream(); body != nil {
					io.Copy(io.Discard, body)
				}
				ctx.SetStatusCode(leftCode)
			}
		},
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		CloseOnShutdown:       true,
		StreamRequestBody:     true, // as the node's front
		// As the front too: a multipart body is the handler's to read.
		DisablePreParseMultipartForm: true,
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	return ln.Addr().String()
}

// TestServeFastAnswersAsHandler: ServeFast answers exactly the plain GET and
// HEAD of a raw paste that does not burn, under the base path or none,
// with the status, headers (but Date) and bytes Handler sends, text,
// binary, expiring and over net/http's buffer alike, and counts them in
// the same request metrics, and each starts as FastStarts says, a stale
// read asked for with X-Paste-Stale included; everything else it leaves:
// unknown ids, burns, queries, escapes, other paths and methods,
// conditional and Range reads.
func TestServeFastAnswersAsHandler(t *testing.T) {
	pastes := []*fsm.Paste{
		{ID: "abcdefgh", Content: []byte("hello, world\n"), CreatedAt: 1e18, ExpiresAt: 2e18},
		{ID: "abcdefgh", Content: []byte{0xff, 0, 1, 2}, CreatedAt: 1e18},
		{ID: "abcdefgh", Content: bytes.Repeat([]byte("x"), 4<<10), CreatedAt: 1e18},
		{ID: "abcdefgh", Content: []byte("once\n"), CreatedAt: 1e18, Burn: true},
	}
	paths := []string{"/raw/abcdefgh", "/raw/abcdefgh?stale=true", "/raw/abcdefgh?x", "/raw/unknown", "/raw/",
		"/raw/abcdefgh/", "/raw/a/b", "/raw/abc%64efgh", "/abcdefgh", "/", "/paste/raw/abcdefgh"}
	headers := [][]string{nil, {"Accept", "text/html"}, {"Accept", "application/json"}, {"Accept-Encoding", "gzip"},
		{"If-None-Match", `"x"`}, {"Range", "bytes=0-1"}, {"If-Modified-Since", "Mon, 01 Jan 2001 00:00:00 GMT"},
		{"If-Range", `"x"`}, {"X-Paste-Stale", "false"}, {"X-Paste-Stale", "true"}}
	plain := func(hdr []string) bool {
		return hdr == nil || hdr[0] == "Accept" || hdr[0] == "Accept-Encoding" || hdr[0] == "X-Paste-Stale"
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for _, base := range []string{"", "/paste"} {
		for _, p := range pastes {
			p.Seal()
			fast, slow := hotAPI(t, p, base), hotAPI(t, p, base)
			addr := "http://" + serveFastOnly(t, fast)
			ts := httptest.NewServer(slow.Handler())
			for _, path := range paths {
				for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost} {
					for _, hdr := range headers {
						what := method + " " + base + path + " " + strings.Join(hdr, ": ")
						got := wireAnswer(t, client, addr, method, base+path, hdr...)
						wantFast := (method == http.MethodGet || method == http.MethodHead) &&
							path == "/raw/abcdefgh" && !p.Burn && plain(hdr)
						if got.Code == leftCode {
							if wantFast {
								t.Errorf("%s (%d bytes): left to Handler", what, len(p.Content))
							}
							continue
						}
						if !wantFast {
							t.Errorf("%s (burn %v): answered %d, want it left to Handler", what, p.Burn, got.Code)
							continue
						}
						if !slices.ContainsFunc(fast.FastStarts(), func(s string) bool { return strings.HasPrefix(method+" "+base+path, s) }) {
							t.Errorf("%s: answered, but it starts none of FastStarts %q", what, fast.FastStarts())
						}
						want := wireAnswer(t, client, ts.URL, method, base+path, hdr...)
						got.Header().Del("Date")
						want.Header().Del("Date")
						if got.Code != want.Code || got.Body.String() != want.Body.String() || !reflect.DeepEqual(got.Header(), want.Header()) {
							t.Errorf("%s: %d %v %q, Handler answers %d %v %q", what,
								got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
						}
					}
				}
			}
			ts.Close()
			if g, w := requestMetrics(t, fast), requestMetrics(t, slow); !reflect.DeepEqual(g, w) {
				t.Errorf("base %q: request metrics %v, through Handler %v", base, g, w)
			}
		}
	}
}

// TestServeFastLeavesWhatNetHTTPRefuses: a read with a body, which
// net/http would read, is left to Handler; an HTTP/1.1 read without Host
// fasthttp itself refuses, as net/http does, and an HTTP/1.0 read needs
// none.
func TestServeFastLeavesWhatNetHTTPRefuses(t *testing.T) {
	p := &fsm.Paste{ID: "abcdefgh", Content: []byte("hello\n"), CreatedAt: 1e18}
	p.Seal()
	addr := serveFastOnly(t, hotAPI(t, p, ""))
	for req, want := range map[string]int{
		"GET /raw/abcdefgh HTTP/1.1\r\nHost: x\r\n\r\n":                                        http.StatusOK,
		"GET /raw/abcdefgh HTTP/1.0\r\n\r\n":                                                   http.StatusOK,
		"GET /raw/abcdefgh HTTP/1.1\r\n\r\n":                                                   http.StatusBadRequest,
		"GET /raw/abcdefgh HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi":                 leftCode,
		"GET /raw/abcdefgh HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n": leftCode,
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		resp.Body.Close()
		c.Close()
		if resp.StatusCode != want {
			t.Errorf("%q: %d, want %d", req, resp.StatusCode, want)
		}
	}
}

// anyStore is a Store that holds a paste under every id.
type anyStore struct{ oneStore }

func (s *anyStore) Read(_ context.Context, id string, _ bool) (*fsm.Paste, error) {
	p := *s.p
	p.ID = id
	return &p, nil
}

func (s *anyStore) ReadRaw(ctx context.Context, id string, stale bool, into *fsm.Paste, buf []byte) ([]byte, *fsm.Content, error) {
	p, err := s.Read(ctx, id, stale)
	if err != nil {
		return buf, nil, err
	}
	*into = *p
	return buf, nil, nil
}

// TestRawPathOneRule: every way the live node serves a raw read takes a
// path for one exactly when httpx.RawID does, under a base path or none:
// the router's raw route, the check before the router, ServeFast and the
// first bytes a front sends to it (FastStarts).
func TestRawPathOneRule(t *testing.T) {
	paths := []string{"/raw/abcdefgh", "/raw/a", "/raw/", "/raw", "/raw/abcdefgh/", "/raw/a/b",
		"/rawabcdefgh", "/abcdefgh", "/x/raw/abcdefgh", "/", "/raw/.."}
	pages, err := ui.New(ui.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := &fsm.Paste{Content: []byte("hello\n"), CreatedAt: 1e18}
	for _, base := range []string{"", "/paste"} {
		s, err := NewServer(Config{Store: &anyStore{oneStore{p: p}}, UI: pages, MaxPasteSize: 1 << 20, BasePath: base})
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range paths {
			_, want := httpx.RawID(path)
			var m mux.RouteMatch
			routed := s.router.Match(httptest.NewRequest(http.MethodGet, path, nil), &m) && m.Route != nil && m.Route.GetName() == "raw"
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod(http.MethodGet)
			ctx.Request.SetRequestURI(base + path)
			fast := s.ServeFast(&ctx)
			starts := slices.ContainsFunc(s.FastStarts(), func(st string) bool { return strings.HasPrefix("GET "+base+path, st) })
			if routed != want || isRaw(path) != want || fast != want || want && !starts {
				t.Errorf("%s%s: RawID says %v, the router %v, before the router %v, ServeFast %v, FastStarts %v",
					base, path, want, routed, isRaw(path), fast, starts)
			}
		}
	}
}
