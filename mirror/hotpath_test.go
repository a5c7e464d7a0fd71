package mirror

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestMirrorOneWriteAnswersAsServeContent: the one-write answer of a plain
// GET carries, on the wire, the same headers as the http.ServeContent
// answer to a conditional GET that does not match, but Accept-Ranges, for
// raw bytes, and for a gzip page to clients with and without gzip;
// conditional and Range requests still get 304 and 206. The answers go
// through a real net/http server: the Content-Length of a small body is
// net/http's, and none is chunked.
func TestMirrorOneWriteAnswersAsServeContent(t *testing.T) {
	f, ids := benchFSM(t, 50, 4)
	path, _ := writeExportFile(t, t.TempDir(), f, time.Now())
	h := startMirror(t, Config{Path: path, Poll: time.Hour}).Handler()
	fetch := func(target string, header ...string) *httptest.ResponseRecorder {
		rec := get(h, http.MethodGet, target, header...)
		rec.Header().Del("Date")
		if te := rec.Header()["Transfer-Encoding"]; te != nil {
			t.Errorf("GET %s %v: Transfer-Encoding %q, want none", target, header, te)
		}
		if cl := rec.Header().Get("Content-Length"); rec.Code != http.StatusNotModified && cl != strconv.Itoa(rec.Body.Len()) {
			t.Errorf("GET %s %v: Content-Length %q with %d bytes", target, header, cl, rec.Body.Len())
		}
		return rec
	}
	id := ids[1] // highlighted as Go: a page large enough to be stored gzipped
	for _, c := range [][]string{
		{"/raw/" + id},
		{"/" + id, "Accept", "text/html"},
		{"/" + id, "Accept", "text/html", "Accept-Encoding", "gzip"},
	} {
		plain := fetch(c[0], c[1:]...)
		cond := fetch(c[0], append(c[1:], "If-None-Match", `"no-such-tag"`)...)
		if plain.Code != http.StatusOK || cond.Code != http.StatusOK {
			t.Fatalf("GET %v: %d, conditional %d; want 200", c, plain.Code, cond.Code)
		}
		if plain.Body.String() != cond.Body.String() {
			t.Errorf("GET %v: the bodies differ", c)
		}
		if plain.Header().Get("Accept-Ranges") != "" || cond.Header().Get("Accept-Ranges") != "bytes" {
			t.Errorf("GET %v: Accept-Ranges %q, conditional %q; want none and bytes", c,
				plain.Header().Get("Accept-Ranges"), cond.Header().Get("Accept-Ranges"))
		}
		cond.Header().Del("Accept-Ranges") // optional; the plain answer leaves it out
		for name := range cond.Header() {
			if g, w := plain.Header().Values(name), cond.Header().Values(name); !slices.Equal(g, w) {
				t.Errorf("GET %v: %s is %q, ServeContent sends %q", c, name, g, w)
			}
		}
		if len(plain.Header()) != len(cond.Header()) {
			t.Errorf("GET %v: headers %v, ServeContent sends %v", c, plain.Header(), cond.Header())
		}
		etag := plain.Header().Get("Etag")
		if etag == "" {
			if c[0] == "/raw/"+id {
				t.Errorf("GET %v: no ETag", c)
			}
			continue // pages have none
		}
		if r := fetch(c[0], append(c[1:], "If-None-Match", etag)...); r.Code != http.StatusNotModified {
			t.Errorf("GET %v with If-None-Match %s: %d, want 304", c, etag, r.Code)
		}
	}
	if r := fetch("/"+id, "Accept", "text/html", "Accept-Encoding", "gzip"); r.Header().Get("Content-Encoding") != "gzip" {
		t.Errorf("GET /%s: Content-Encoding %q, want the page stored gzipped", id, r.Header().Get("Content-Encoding"))
	}
	if r := fetch("/raw/"+id, "Range", "bytes=0-3"); r.Code != http.StatusPartialContent || r.Body.Len() != 4 {
		t.Errorf("GET /raw/%s with Range: %d with %d bytes, want 206 with 4", id, r.Code, r.Body.Len())
	}
}
