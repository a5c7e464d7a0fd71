package api

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/internal/httpx"
	"github.com/pastenode/pastenode/node"
	"github.com/pastenode/pastenode/ui"
)

// oneStore is a Store that holds one paste and answers reads without a
// cluster, so that a test measures the handlers alone.
type oneStore struct {
	node.Node // never used; satisfies the methods no read calls
	p         *fsm.Paste
}

func (s *oneStore) Read(_ context.Context, id string, _ bool) (*fsm.Paste, error) {
	if id != s.p.ID {
		return nil, fsm.ErrNotFound
	}
	return s.p, nil
}

func (s *oneStore) ReadRaw(ctx context.Context, id string, stale bool, into *fsm.Paste, buf []byte) ([]byte, *fsm.Content, error) {
	p, err := s.Read(ctx, id, stale)
	if err != nil {
		return buf, nil, err
	}
	*into = *p
	return buf, nil, nil
}

// Create answers with a paste of the request's content under a fixed id.
func (s *oneStore) Create(_ context.Context, req node.CreateRequest) (*fsm.Paste, error) {
	p := &fsm.Paste{ID: "created1", Content: req.Content, Title: req.Title, Lang: req.Lang,
		Burn: req.Burn, CreatedAt: 1e18, TokenHash: fsm.HashToken(req.DeleteToken)}
	p.Seal()
	return p, nil
}

// sink is a ResponseWriter that keeps the status and the bytes' count, as
// cheap as a connection's writer for the allocation count.
type sink struct {
	h    http.Header
	code int
	n    int
}

func (s *sink) Header() http.Header         { return s.h }
func (s *sink) Write(b []byte) (int, error) { s.n += len(b); return len(b), nil }
func (s *sink) WriteHeader(code int)        { s.code = code }

func hotServer(t testing.TB, p *fsm.Paste, basePath string) http.Handler {
	return hotAPI(t, p, basePath).Handler()
}

func hotAPI(t testing.TB, p *fsm.Paste, basePath string) *Server {
	pages, err := ui.New(ui.Options{BasePath: basePath})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(Config{Store: &oneStore{p: p}, UI: pages, MaxPasteSize: 1 << 20, BasePath: basePath})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// deleteToken matches the random delete token in a create's JSON answer.
var deleteToken = regexp.MustCompile(`"delete_token": *"[^"]*"`)

// TestCreateFirstAnswersAsRouter: a POST / answered before the router gets
// the answer the router's create route gives, for every kind of body and
// option, good or bad, and counts in the same request metrics; a POST to
// any other path still goes through the router.
func TestCreateFirstAnswersAsRouter(t *testing.T) {
	p := &fsm.Paste{ID: "abcdefgh", Content: []byte("hello\n"), CreatedAt: 1e18}
	p.Seal()
	type req struct {
		path, ctype, body string
		hdr               []string
	}
	reqs := []req{
		{"/", "application/octet-stream", "hello, world\n", nil},
		{"/?lang=go&title=t&burn=true", "", "package main\n", nil},
		{"/", "", "x", []string{"Accept", "application/json"}},
		{"/", "", "x", []string{"X-Paste-Expire", "1h"}},
		{"/?lang=nosuchlanguage", "", "x", nil},
		{"/?expire=soon", "", "x", nil},
		{"/", "", "", nil},
		{"/", "application/x-www-form-urlencoded", "content=from+a+form&lang=python", nil},
		{"/", "multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\nmultipart\r\n--b--\r\n", nil},
		{"/?", "", "x", nil},
		{"//", "", "x", nil},
		{"/abcdefgh", "", "x", nil},
		{"/api/v1/pastes", "application/json", `{"content":"json"}`, nil},
	}
	for _, base := range []string{"", "/paste"} {
		fast := hotAPI(t, p, base)
		slow := hotAPI(t, p, base)
		viaRouter := slow.underBasePath(slow.router)
		for _, rq := range reqs {
			mk := func() *http.Request {
				r := httptest.NewRequest(http.MethodPost, base+rq.path, strings.NewReader(rq.body))
				if rq.ctype != "" {
					r.Header.Set("Content-Type", rq.ctype)
				}
				if rq.hdr != nil {
					r.Header.Set(rq.hdr[0], rq.hdr[1])
				}
				return r
			}
			got, want := httptest.NewRecorder(), httptest.NewRecorder()
			fast.Handler().ServeHTTP(got, mk())
			viaRouter.ServeHTTP(want, mk())
			for _, h := range []http.Header{got.Header(), want.Header()} {
				h.Del("Date")
				h.Del("X-Delete-Token") // random per create
			}
			gotBody := deleteToken.ReplaceAllString(got.Body.String(), "")
			wantBody := deleteToken.ReplaceAllString(want.Body.String(), "")
			if got.Code != want.Code || gotBody != wantBody || !reflect.DeepEqual(got.Header(), want.Header()) {
				t.Errorf("POST %s%s: %d %v %q, the router answers %d %v %q", base, rq.path,
					got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
			}
		}
		if g, w := requestMetrics(t, fast), requestMetrics(t, slow); !reflect.DeepEqual(g, w) {
			t.Errorf("base %q: request metrics %v, through the router %v", base, g, w)
		}
	}
}

// TestRawFirstAnswersAsRouter: a raw read answered before the router is
// answered exactly as the router answers it, under a base path or not:
// status, headers, body, and the request metrics, for GET and HEAD and the
// methods the route refuses (405), conditional and Range requests, and
// paths that are not one id (404).
func TestRawFirstAnswersAsRouter(t *testing.T) {
	p := &fsm.Paste{ID: "abcdefgh", Content: []byte("hello, world\n"), CreatedAt: 1e18, ExpiresAt: 2e18}
	p.Seal()
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete}
	paths := []string{"/raw/abcdefgh", "/raw/abcdefgh?stale=true", "/raw/unknown", "/raw/", "/raw",
		"/raw/abcdefgh/", "/raw/a/b", "/raw/..%2fabcdefgh", "/raw/abc%2Fdefgh", "/rawabcdefgh"}
	headers := [][]string{nil, {"If-None-Match", `"x"`}, {"Range", "bytes=0-4"}, {"Accept", "text/html"},
		{"Accept", "application/json"}, {"X-Paste-Stale", "true"}}
	for _, base := range []string{"", "/paste"} {
		fast := hotAPI(t, p, base)
		slow := hotAPI(t, p, base)
		viaRouter := slow.underBasePath(slow.router)
		for _, path := range append(paths, "/paste/raw/abcdefgh") {
			for _, method := range methods {
				for _, hdr := range headers {
					req := httptest.NewRequest(method, base+path, nil)
					if hdr != nil {
						req.Header.Set(hdr[0], hdr[1])
					}
					got, want := httptest.NewRecorder(), httptest.NewRecorder()
					fast.Handler().ServeHTTP(got, req)
					viaRouter.ServeHTTP(want, req.Clone(req.Context()))
					got.Header().Del("Date")
					want.Header().Del("Date")
					if got.Code != want.Code || got.Body.String() != want.Body.String() || !reflect.DeepEqual(got.Header(), want.Header()) {
						t.Errorf("%s %s%s %v: %d %v %q, the router answers %d %v %q", method, base, path, hdr,
							got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
					}
				}
			}
		}
		if g, w := requestMetrics(t, fast), requestMetrics(t, slow); !reflect.DeepEqual(g, w) {
			t.Errorf("base %q: request metrics %v, through the router %v", base, g, w)
		}
	}
}

// requestMetrics are s's request counters and latency sample counts, by
// their labels.
func requestMetrics(t *testing.T, s *Server) map[string]uint64 {
	reg := prometheus.NewRegistry() // these alone: the store's gauges need a node
	reg.MustRegister(s.metrics.requests, s.metrics.latency)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += " " + l.GetName() + "=" + l.GetValue()
			}
			switch mf.GetName() {
			case "pastenode_http_requests_total":
				out[key] = uint64(m.GetCounter().GetValue())
			case "pastenode_http_request_duration_seconds":
				out[key] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no request metrics")
	}
	return out
}

// TestRawReadCopiesNoContent: a plain GET /raw/{id} (and GET /{id} from
// curl, and under a base path) answers from the store's record: what it
// allocates does not grow with the paste, so a read never copies the
// content into the heap. How many allocations a read costs is a figure,
// for BenchmarkRead, not a rule.
func TestRawReadCopiesNoContent(t *testing.T) {
	p := &fsm.Paste{ID: "abcdefgh", Content: []byte(strings.Repeat("x", 16<<10)), CreatedAt: 1e18}
	p.Seal()
	h, under := hotServer(t, p, ""), hotServer(t, p, "/paste")
	for _, c := range []struct {
		h    http.Handler
		path string
	}{{h, "/raw/abcdefgh"}, {h, "/abcdefgh"}, {under, "/paste/raw/abcdefgh"}} {
		h := c.h
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		w := &sink{h: http.Header{}}
		read := func() {
			clear(w.h)
			w.code, w.n = 0, 0
			h.ServeHTTP(w, req)
		}
		b := bytesPerRun(200, read)
		if w.code != http.StatusOK || w.n != len(p.Content) {
			t.Fatalf("GET %s: %d with %d bytes, want 200 with %d", c.path, w.code, w.n, len(p.Content))
		}
		if b > 2<<10 {
			t.Errorf("GET %s: %d bytes allocated per read of a 16 KiB paste, want under 2 KiB", c.path, b)
		}
	}
}

// bytesPerRun is the heap bytes one call of f allocates, averaged over
// runs, as testing.AllocsPerRun counts allocations.
func bytesPerRun(runs int, f func()) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// TestRawReadAnswers: the one-write path answers, on the wire, as
// http.ServeContent did but for Accept-Ranges, and conditional and Range
// requests still get 304 and 206. The answers go through a real net/http
// server: the Content-Length of a small body is net/http's.
func TestRawReadAnswers(t *testing.T) {
	p := &fsm.Paste{ID: "abcdefgh", Content: []byte("hello, world\n"), CreatedAt: 1e18, ExpiresAt: 2e18}
	p.Seal()
	ts := httptest.NewServer(hotServer(t, p, ""))
	defer ts.Close()
	serve := func(method string, header ...string) *httptest.ResponseRecorder {
		return wireAnswer(t, ts.Client(), ts.URL, method, "/raw/abcdefgh", header...)
	}
	// What ServeContent sends for the same paste, the reference.
	want := httptest.NewRecorder()
	httpx.SetRawHeaders(want.Header(), p, false)
	http.ServeContent(want, httptest.NewRequest(http.MethodGet, "/", nil), "", time.Unix(0, p.CreatedAt), bytes.NewReader(p.Content))

	got := serve(http.MethodGet)
	if got.Code != http.StatusOK || got.Body.String() != string(p.Content) {
		t.Fatalf("GET: %d %q, want 200 %q", got.Code, got.Body, p.Content)
	}
	if got.Header().Get("Accept-Ranges") != "" {
		t.Errorf("GET: Accept-Ranges %q, want none", got.Header().Get("Accept-Ranges"))
	}
	want.Header().Del("Accept-Ranges") // optional; the plain answer leaves it out
	for name := range want.Header() {
		if g, w := got.Header().Values(name), want.Header().Values(name); !slices.Equal(g, w) {
			t.Errorf("GET: %s is %q, ServeContent sends %q", name, g, w)
		}
	}
	if got.Header().Get("Expires") == "" || got.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("GET: Expires %q, Content-Type %q", got.Header().Get("Expires"), got.Header().Get("Content-Type"))
	}

	if head := serve(http.MethodHead); head.Code != http.StatusOK || head.Body.Len() != 0 ||
		head.Header().Get("Content-Length") != strconv.Itoa(len(p.Content)) {
		t.Errorf("HEAD: %d, %d body bytes, Content-Length %q", head.Code, head.Body.Len(), head.Header().Get("Content-Length"))
	}
	if r := serve(http.MethodGet, "If-None-Match", got.Header().Get("Etag")); r.Code != http.StatusNotModified {
		t.Errorf("GET with If-None-Match: %d, want 304", r.Code)
	}
	if r := serve(http.MethodGet, "Range", "bytes=0-4"); r.Code != http.StatusPartialContent || r.Body.String() != "hello" {
		t.Errorf("GET with Range: %d %q, want 206 \"hello\"", r.Code, r.Body)
	}
	if r := serve(http.MethodGet, "If-Modified-Since", got.Header().Get("Last-Modified")); r.Code != http.StatusNotModified {
		t.Errorf("GET with If-Modified-Since: %d, want 304", r.Code)
	}
}

// wireAnswer sends method path to the server at base with c and the
// header pairs given, and returns the answer as a recorder: its code,
// headers and body.
func wireAnswer(t *testing.T, c *http.Client, base, method, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return wireResponse(t, c, req)
}

// wireResponse sends r with c and records the answer as it came, its
// Transfer-Encoding among the headers.
func wireResponse(t *testing.T, c *http.Client, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	resp, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rec := httptest.NewRecorder()
	maps.Copy(rec.Header(), resp.Header)
	rec.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(rec, resp.Body); err != nil {
		t.Fatal(err)
	}
	if len(resp.TransferEncoding) > 0 {
		rec.Header()["Transfer-Encoding"] = resp.TransferEncoding
	}
	return rec
}

// TestRawReadLength: a raw read of any size says its length, whether
// net/http counts it (a body that fits its buffer) or the handler does,
// and is never chunked; a HEAD says it too.
func TestRawReadLength(t *testing.T) {
	for _, n := range []int{1, 1024, 2047, 2048, 2049, 4096, 64 << 10} {
		p := &fsm.Paste{ID: "abcdefgh", Content: bytes.Repeat([]byte("x"), n), CreatedAt: 1e18}
		p.Seal()
		ts := httptest.NewServer(hotServer(t, p, ""))
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			got := wireAnswer(t, ts.Client(), ts.URL, method, "/raw/abcdefgh")
			if cl := got.Header().Get("Content-Length"); got.Code != http.StatusOK || cl != strconv.Itoa(n) {
				t.Errorf("%s of %d bytes: %d, Content-Length %q", method, n, got.Code, cl)
			}
			if te := got.Header()["Transfer-Encoding"]; te != nil {
				t.Errorf("%s of %d bytes: Transfer-Encoding %q, want none", method, n, te)
			}
			if want := map[string]int{http.MethodGet: n, http.MethodHead: 0}[method]; got.Body.Len() != want {
				t.Errorf("%s of %d bytes: %d body bytes, want %d", method, n, got.Body.Len(), want)
			}
		}
		ts.Close()
	}
}
