package api

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pastenode/pastenode/fsm"
)

// TestServeFastCreatesAsHandler: ServeFast takes exactly the creates of
// POST {base}/ with a body of known length within the size limit, a query
// or none, and answers each as Handler does on net/http: status, headers
// (but Date and the random delete token), body, for every kind of body
// and option, good or bad, and a rate limit's 429; it counts them in the
// same request metrics, and each starts as FastStarts says. Other paths,
// empty, chunked and oversized bodies are left to Handler.
func TestServeFastCreatesAsHandler(t *testing.T) {
	p := &fsm.Paste{ID: "abcdefgh", Content: []byte("hello\n"), CreatedAt: 1e18}
	p.Seal()
	type req struct {
		path, ctype, body string
		hdr               []string
		chunked           bool
	}
	multipart := "--b\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\nmultipart\r\n--b\r\n" +
		"Content-Disposition: form-data; name=\"lang\"\r\n\r\ngo\r\n--b--\r\n"
	reqs := []req{
		{path: "/", ctype: "application/octet-stream", body: "hello, world\n"},
		{path: "/?lang=go&title=t&burn=true", body: "package main\n"},
		{path: "/?title=%E2%9C%93+x", body: "escaped"},
		{path: "/", body: "x", hdr: []string{"Accept", "application/json"}},
		{path: "/", body: "x", hdr: []string{"Accept", "text/html"}},
		{path: "/", body: "x", hdr: []string{"X-Paste-Expire", "1h"}},
		{path: "/", body: "x", hdr: []string{"X-Forwarded-Host", "evil.example"}},
		{path: "/?lang=nosuchlanguage", body: "x"},
		{path: "/?expire=soon", body: "x"},
		{path: "/", ctype: "application/x-www-form-urlencoded", body: "content=from+a+form&lang=python"},
		{path: "/", ctype: "application/x-www-form-urlencoded", body: "content=&lang=python"},
		{path: "/", ctype: "multipart/form-data; boundary=b", body: multipart},
		{path: "/", ctype: "multipart/form-data; boundary=b", body: multipart, hdr: []string{"Accept", "text/html"}},
		{path: "/", ctype: "multipart/form-data", body: multipart},
		{path: "/", body: strings.Repeat("a", 1<<20)},
		{path: "/", body: strings.Repeat("a", 64<<10)},
		{path: "/?", body: "x"},
		{path: "/", body: ""},
		{path: "/", body: strings.Repeat("a", 1<<20+1)},
		{path: "/", body: "chunked", chunked: true},
		{path: "//", body: "x"},
		{path: "/%2F", body: "x"},
		{path: "/abcdefgh", body: "x"},
		{path: "/api/v1/pastes", ctype: "application/json", body: `{"content":"json"}`},
	}
	fastTakes := func(rq req) bool {
		return (rq.path == "/" || strings.HasPrefix(rq.path, "/?")) && !rq.chunked && len(rq.body) > 0 && len(rq.body) <= 1<<20
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, base := range []string{"", "/paste"} {
		fast, slow := hotAPI(t, p, base), hotAPI(t, p, base)
		addr := "http://" + serveFastOnly(t, fast)
		ts := httptest.NewServer(slow.Handler())
		for _, rq := range reqs {
			what := fmt.Sprintf("POST %s%s %q (%d bytes) %v", base, rq.path, rq.ctype, len(rq.body), rq.hdr)
			send := func(url string) *httptest.ResponseRecorder {
				var body io.Reader = strings.NewReader(rq.body)
				if rq.chunked {
					body = io.MultiReader(body) // no length: sent chunked
				}
				r, err := http.NewRequest(http.MethodPost, url+base+rq.path, body)
				if err != nil {
					t.Fatal(err)
				}
				if rq.ctype != "" {
					r.Header.Set("Content-Type", rq.ctype)
				}
				if rq.hdr != nil {
					r.Header.Set(rq.hdr[0], rq.hdr[1])
				}
				return wireResponse(t, client, r)
			}
			got := send(addr)
			if got.Code == leftCode {
				if fastTakes(rq) {
					t.Errorf("%s: left to Handler", what)
				}
				continue
			}
			if !fastTakes(rq) {
				t.Errorf("%s: answered %d, want it left to Handler", what, got.Code)
				continue
			}
			if !slices.ContainsFunc(fast.FastStarts(), func(s string) bool { return strings.HasPrefix("POST "+base+rq.path+" ", s) }) {
				t.Errorf("%s: answered, but it starts none of FastStarts %q", what, fast.FastStarts())
			}
			want := send(ts.URL)
			for _, h := range []http.Header{got.Header(), want.Header()} {
				h.Del("Date")
				h.Del("X-Delete-Token") // random per create
			}
			// The host differs: the test servers listen on two ports.
			gotBody := strings.ReplaceAll(deleteToken.ReplaceAllString(got.Body.String(), ""), addr, "HOST")
			wantBody := strings.ReplaceAll(deleteToken.ReplaceAllString(want.Body.String(), ""), ts.URL, "HOST")
			if loc := got.Header().Get("Location"); loc != "" {
				got.Header().Set("Location", strings.ReplaceAll(loc, addr, "HOST"))
				want.Header().Set("Location", strings.ReplaceAll(want.Header().Get("Location"), ts.URL, "HOST"))
			}
			if got.Code != want.Code || gotBody != wantBody || !reflect.DeepEqual(got.Header(), want.Header()) {
				t.Errorf("%s: %d %v %q, Handler answers %d %v %q", what,
					got.Code, got.Header(), gotBody, want.Code, want.Header(), wantBody)
			}
		}
		ts.Close()
		if g, w := requestMetrics(t, fast), requestMetrics(t, slow); !reflect.DeepEqual(g, w) {
			t.Errorf("base %q: request metrics %v, through Handler %v", base, g, w)
		}
	}
}

// TestServeFastCreateKeepsTheConnection: on one connection, a create
// ServeFast answers leaves the connection ready for the next request, also
// when the handler refused it before reading its body (a rate limit's
// 429), which is then read and discarded; a refused body over 256 KiB,
// as on net/http, closes the connection after the answer.
func TestServeFastCreateKeepsTheConnection(t *testing.T) {
	p := &fsm.Paste{ID: "abcdefgh", Content: []byte("hello\n"), CreatedAt: 1e18}
	p.Seal()
	s := hotAPI(t, p, "")
	s.limiter = newLimiter(1) // one write a minute
	c, err := net.Dial("tcp", serveFastOnly(t, s))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	post := func(body string) int {
		t.Helper()
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for i, want := range []int{http.StatusCreated, http.StatusTooManyRequests, http.StatusTooManyRequests} {
		if code := post(strings.Repeat("x", 100<<10)); code != want {
			t.Fatalf("create %d: %d, want %d", i, code, want)
		}
	}
	if code := post(strings.Repeat("x", 256<<10+1)); code != http.StatusTooManyRequests {
		t.Fatalf("a refused body over 256 KiB: %d, want 429", code)
	}
	if n, err := br.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("after a refused body over 256 KiB: read %d bytes, %v; want the connection closed", n, err)
	}
}

// TestFastResponseAsNetHTTP: fastResponse answers as net/http's server
// does: 200 when the handler writes nothing or only a body, the
// Content-Type sniffed from the first bytes when none was set, the
// headers as they were at the status, a second status ignored.
func TestFastResponseAsNetHTTP(t *testing.T) {
	handlers := map[string]http.HandlerFunc{
		"nothing":   func(w http.ResponseWriter, r *http.Request) {},
		"html body": func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html><body>hi") },
		"typed body": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/x-go")
			io.WriteString(w, "<html>")
		},
		"empty type": func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil
			io.WriteString(w, "<html>")
		},
		"late header": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Early", "1")
			w.WriteHeader(http.StatusTeapot)
			w.Header().Set("X-Late", "1")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, "short and stout")
		},
	}
	for name, h := range handlers {
		var ctx fasthttp.RequestCtx
		ctx.Response.Header.SetNoDefaultContentType(true) // as the front's server
		w := &fastResponse{ctx: &ctx, header: http.Header{}}
		h(w, httptest.NewRequest(http.MethodPost, "/", nil))
		w.finish()
		want := httptest.NewRecorder()
		h(want, httptest.NewRequest(http.MethodPost, "/", nil))
		got := http.Header{}
		for k, v := range ctx.Response.Header.All() {
			got.Add(string(k), string(v))
		}
		got.Del("Content-Length") // fasthttp's own, net/http's too on the wire
		wantHeader := want.Result().Header
		if ctx.Response.StatusCode() != want.Code || string(ctx.Response.Body()) != want.Body.String() ||
			got.Get("Content-Type") != wantHeader.Get("Content-Type") || got.Get("X-Late") != "" ||
			got.Get("X-Early") != wantHeader.Get("X-Early") {
			t.Errorf("%s: %d %v %q; net/http's recorder %d %v %q", name, ctx.Response.StatusCode(), got,
				ctx.Response.Body(), want.Code, wantHeader, want.Body)
		}
	}
}

// TestFastContext: a create on fasthttp runs with a context of the
// context package's own that ends when the server shuts down, one per
// server: contexts derived from it start no goroutine each, unlike those
// derived from the RequestCtx.
func TestFastContext(t *testing.T) {
	s := hotAPI(t, nil, "")
	done := make(chan struct{})
	ctx := s.fastContext(done)
	if again := s.fastContext(done); again != ctx {
		t.Fatal("a second create on the same server got a context of its own")
	}
	if s.fastContext(make(chan struct{})) == ctx {
		t.Fatal("another server's creates got the same context")
	}
	if s.fastContext(nil) != context.Background() {
		t.Fatal("a server that never shuts down: not context.Background")
	}

	before := runtime.NumGoroutine()
	var cancels []context.CancelFunc
	for range 1000 {
		_, cancel := context.WithTimeout(ctx, time.Hour)
		cancels = append(cancels, cancel)
	}
	if n := runtime.NumGoroutine() - before; n > 100 {
		t.Errorf("1000 contexts derived from a create's started %d goroutines", n)
	}
	for _, cancel := range cancels {
		cancel()
	}

	close(done)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the context did not end with the server")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := s.fastDone.Load((<-chan struct{})(done)); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a server that shut down is still remembered")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestServeFastCreateContext: ServeFast runs a create with fastContext's
// context of its server, which ends at the server's shutdown.
func TestServeFastCreateContext(t *testing.T) {
	p := &fsm.Paste{ID: "abcdefgh", Content: []byte("hello\n"), CreatedAt: 1e18}
	p.Seal()
	s := hotAPI(t, p, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { s.ServeFast(ctx) }}
	go srv.Serve(ln)
	defer srv.Shutdown()
	resp, err := http.Post("http://"+ln.Addr().String()+"/", "text/plain", strings.NewReader("hi"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	var ctx context.Context
	s.fastDone.Range(func(_, v any) bool { ctx = v.(context.Context); return true })
	if ctx == nil {
		t.Fatal("the create did not run with its server's context")
	}
	if err := srv.Shutdown(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the create's context did not end at the server's shutdown")
	}
}
