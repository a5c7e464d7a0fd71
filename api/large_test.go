package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/pastenode/pastenode/fsm"
)

// TestRawLargeFromFile: a paste of fsm.LargeContent or more is answered
// from its segment file (sendfile on a plain connection) with the bytes
// and headers a small paste's read has: the same ETag form, its own
// Content-Length, text or binary. A Range read of it, a HEAD and a burn
// read go the way of every other paste; ServeFast leaves its GET to
// net/http.
func TestRawLargeFromFile(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	text := bytes.Repeat([]byte("a line of a large log\n"), 2*fsm.LargeContent/22)
	binary := append(bytes.Repeat([]byte{0xff, 0}, fsm.LargeContent), 1)
	for name, content := range map[string][]byte{"text": text, "binary": binary} {
		id, _ := create(t, tn.URL, content, "")
		if _, c, err := tn.node.ReadRaw(context.Background(), id, false, new(fsm.Paste), nil); err != nil || c == nil {
			t.Fatalf("%s: the node hands out no file region: %v", name, err)
		} else {
			c.Close()
		}
		r := do(t, http.MethodGet, tn.URL+"/raw/"+id, nil)
		r.wantStatus(t, http.StatusOK)
		if !bytes.Equal(r.body, content) {
			t.Fatalf("%s: %d bytes back, want the %d written", name, len(r.body), len(content))
		}
		wantType := map[string]string{"text": "text/plain; charset=utf-8", "binary": "application/octet-stream"}[name]
		if got := r.Header.Get("Content-Type"); got != wantType {
			t.Errorf("%s: Content-Type %q, want %q", name, got, wantType)
		}
		if got := r.Header.Get("Content-Length"); got != fmt.Sprint(len(content)) {
			t.Errorf("%s: Content-Length %q, want %d", name, got, len(content))
		}
		etag := r.Header.Get("ETag")
		if len(etag) < len(id)+3 || etag[1:1+len(id)] != id || r.Header.Get("Last-Modified") == "" {
			t.Errorf("%s: ETag %q, Last-Modified %q", name, etag, r.Header.Get("Last-Modified"))
		}
		part := do(t, http.MethodGet, tn.URL+"/raw/"+id, nil, "Range", "bytes=100-199")
		part.wantStatus(t, http.StatusPartialContent)
		if !bytes.Equal(part.body, content[100:200]) {
			t.Errorf("%s: Range 100-199 gave %q", name, part.body)
		}
		do(t, http.MethodGet, tn.URL+"/raw/"+id, nil, "If-None-Match", etag).wantStatus(t, http.StatusNotModified)
		head := do(t, http.MethodHead, tn.URL+"/raw/"+id, nil)
		if head.StatusCode != http.StatusOK || head.Header.Get("Content-Length") != fmt.Sprint(len(content)) {
			t.Errorf("%s: HEAD %d, Content-Length %q", name, head.StatusCode, head.Header.Get("Content-Length"))
		}
	}

	burn, _ := create(t, tn.URL, text, "", "X-Paste-Burn", "1")
	if r := do(t, http.MethodGet, tn.URL+"/raw/"+burn, nil); r.StatusCode != http.StatusOK || !bytes.Equal(r.body, text) {
		t.Fatalf("the first read of a large burn paste: %d with %d bytes", r.StatusCode, len(r.body))
	}
	do(t, http.MethodGet, tn.URL+"/raw/"+burn, nil).wantStatus(t, http.StatusNotFound)

	id, _ := create(t, tn.URL, text, "")
	fast := serveFastOnly(t, tn.server)
	resp, err := http.Get("http://" + fast + "/raw/" + id)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != leftCode {
		t.Errorf("ServeFast answered a large paste with %d; want it left to net/http", resp.StatusCode)
	}
}
