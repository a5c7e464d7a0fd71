package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/client"
	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/mirror"
	"github.com/pastenode/pastenode/ui"
)

// TestExportRoute exports a real node's pastes through GET
// /api/v1/export.cdb and serves the file with the mirror.
func TestExportRoute(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the export's temporary file goes
	var started, ended atomic.Int32
	tn := startNode(t, Config{ExportStarted: func() func() {
		started.Add(1)
		return func() { ended.Add(1) }
	}})
	ids := map[string][]byte{}
	for _, content := range [][]byte{[]byte("first\n"), {0xff, 0xfe, 0, 1}, bytes.Repeat([]byte("long line\n"), 1000)} {
		id, _ := create(t, tn.URL, content, "")
		ids[id] = content
	}
	expiring, _ := create(t, tn.URL, []byte("for an hour\n"), "expire=1h")
	ids[expiring] = []byte("for an hour\n")
	burn, _ := create(t, tn.URL, []byte("burn\n"), "burn=true")

	head := do(t, http.MethodHead, tn.URL+"/api/v1/export.cdb", nil, asAdmin...)
	head.wantStatus(t, http.StatusOK)
	r := do(t, http.MethodGet, tn.URL+"/api/v1/export.cdb", nil, asAdmin...)
	r.wantStatus(t, http.StatusOK)
	if cl := r.Header.Get("Content-Length"); cl != strconv.Itoa(len(r.body)) || cl != head.Header.Get("Content-Length") {
		t.Errorf("Content-Length: got %q (HEAD %q), body has %d bytes", cl, head.Header.Get("Content-Length"), len(r.body))
	}
	if got := r.Header.Get("X-Export-Pastes"); got != "4" || head.Header.Get("X-Export-Pastes") != "4" {
		t.Errorf("X-Export-Pastes: got %q (HEAD %q), want 4", got, head.Header.Get("X-Export-Pastes"))
	}
	if got := r.Header.Get("Content-Type"); got != "application/octet-stream" {
		t.Errorf("Content-Type: got %q", got)
	}
	if got := r.Header.Get("Content-Disposition"); !strings.HasPrefix(got, `attachment; filename="pastenode-`) || !strings.HasSuffix(got, `.cdb"`) {
		t.Errorf("Content-Disposition: got %q", got)
	}
	// The handler removes its file after the client has the last byte.
	waitFor(t, 5*time.Second, "temporary file removed", func() error {
		if left, _ := filepath.Glob(filepath.Join(tmp, "pastenode-export-*")); len(left) > 0 {
			return fmt.Errorf("left behind: %q", left)
		}
		return nil
	})

	// pastectl's ask: the archive in tail order, as it is built.
	tail := do(t, http.MethodGet, tn.URL+"/api/v1/export.cdb", nil, append(slices.Clone(asAdmin), "Accept", pastenode.ExportTailType)...)
	tail.wantStatus(t, http.StatusOK)
	if got := tail.Header.Get("Content-Type"); got != pastenode.ExportTailType {
		t.Errorf("Content-Type in tail order: got %q", got)
	}
	if got := tail.Trailer.Get("X-Export-Pastes"); got != "4" {
		t.Errorf("X-Export-Pastes trailer in tail order: got %q, want 4", got)
	}
	if len(tail.body) < pastenode.ExportTailSize {
		t.Fatalf("export in tail order: %d bytes", len(tail.body))
	}
	cut := len(tail.body) - pastenode.ExportTailSize
	tailFile := append(slices.Clone(tail.body[cut:]), tail.body[:cut]...)
	if started.Load() != 3 || ended.Load() != 3 { // HEAD, GET and GET in tail order
		t.Errorf("ExportStarted: %d calls, %d ended; want 3 and 3", started.Load(), ended.Load())
	}
	for _, a := range []response{r, tail} {
		if got := a.Header.Get("Vary"); got != "Accept" {
			t.Errorf("Vary: got %q, want Accept", got)
		}
	}
	// Tail order only when asked for with a q above 0, and over HTTP/1.1:
	// an HTTP/1.0 answer cut short would look whole.
	refused := do(t, http.MethodGet, tn.URL+"/api/v1/export.cdb", nil, append(slices.Clone(asAdmin), "Accept", pastenode.ExportTailType+";q=0")...)
	if got := refused.Header.Get("Content-Type"); got != "application/octet-stream" {
		t.Errorf("Content-Type with q=0 for tail order: got %q", got)
	}
	if got := http10(t, tn.URL, "/api/v1/export.cdb", "Accept", pastenode.ExportTailType, "Authorization", "Bearer "+testAdmin); got.Header.Get("Content-Type") != "application/octet-stream" || got.ContentLength <= 0 {
		t.Errorf("HTTP/1.0 asking for tail order: Content-Type %q, Content-Length %d", got.Header.Get("Content-Type"), got.ContentLength)
	}

	for name, body := range map[string][]byte{"export": r.body, "export in tail order": tailFile} {
		path := filepath.Join(t.TempDir(), "export.cdb")
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := mirror.New(mirror.Config{Path: path})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := m.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		h := m.Handler()
		for id, content := range ids {
			if got := serve(h, http.MethodGet, "/"+id); got.Code != 200 || !bytes.Equal(got.Body.Bytes(), content) {
				t.Errorf("%s: mirror /%s: got %d with %d bytes, want the exact %d", name, id, got.Code, got.Body.Len(), len(content))
			}
			wantSameAsLive(t, h, tn.URL, id)
		}
		if got := serve(h, http.MethodGet, "/raw/"+burn); got.Code != http.StatusNotFound {
			t.Errorf("%s: burn paste in the mirror: got %d, want 404", name, got.Code)
		}
	}
	// The export did not consume the burn paste.
	do(t, http.MethodGet, tn.URL+"/raw/"+burn, nil).wantStatus(t, http.StatusOK)
}

// wantSameAsLive checks that the mirror h sends paste id with the headers
// and metadata that the live node at base sends, both on the wire (where
// net/http counts a small body's Content-Length).
func wantSameAsLive(t *testing.T, h http.Handler, base, id string) {
	t.Helper()
	ms := httptest.NewServer(h)
	defer ms.Close()
	for _, tt := range []struct {
		target, accept string
		headers        []string
	}{
		{"/raw/" + id, "", []string{"Content-Type", "X-Content-Type-Options", "ETag", "Content-Length", "Content-Security-Policy", "Expires"}},
		{"/" + id, "text/html", []string{"Content-Type", "Content-Security-Policy", "Referrer-Policy", "X-Content-Type-Options", "X-Frame-Options"}},
	} {
		// As the live node's answer: not gzipped.
		got := do(t, http.MethodGet, ms.URL+tt.target, nil, "Accept", tt.accept, "Accept-Encoding", "identity")
		ref := do(t, http.MethodGet, base+tt.target, nil, "Accept", tt.accept)
		for _, name := range tt.headers {
			if g, w := got.Header.Get(name), ref.Header.Get(name); g != w {
				t.Errorf("mirror %s: %s: got %q, want the live node's %q", tt.target, name, g, w)
			}
		}
	}
	var meta, ref pastenode.Meta
	if err := json.Unmarshal(serve(h, http.MethodGet, "/api/v1/pastes/"+id).Body.Bytes(), &meta); err != nil {
		t.Fatalf("mirror metadata of %s: %v", id, err)
	}
	if err := json.Unmarshal(do(t, http.MethodGet, base+"/api/v1/pastes/"+id, nil).body, &ref); err != nil {
		t.Fatalf("live metadata of %s: %v", id, err)
	}
	ref.URL, ref.RawURL = "/"+id, "/raw/"+id // the mirror's are paths
	if !meta.CreatedAt.Equal(ref.CreatedAt) {
		t.Errorf("mirror metadata of %s: created_at %v, want %v", id, meta.CreatedAt, ref.CreatedAt)
	}
	meta.CreatedAt = ref.CreatedAt
	if meta.ExpiresAt != nil && ref.ExpiresAt != nil && meta.ExpiresAt.Equal(*ref.ExpiresAt) {
		meta.ExpiresAt = ref.ExpiresAt
	}
	if meta != ref {
		t.Errorf("mirror metadata of %s: got %+v, want %+v", id, meta, ref)
	}
}

// serve sends one request to h and returns the recorded answer; headers
// are "Key", "value" pairs, and an empty value sends no header.
func serve(h http.Handler, method, target string, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] != "" {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestExportProgress exports a real node whose export takes several times
// the client's timeout to build: the 102 progress answers keep the client
// waiting, it gets the whole file, and the route's metrics count a 200.
func TestExportProgress(t *testing.T) {
	const pastes, timeout = 60, 300 * time.Millisecond
	oldEvery, oldWrite := exportProgressEvery, writeExport
	exportProgressEvery = 20 * time.Millisecond
	// The build outlasts the client's timeout three times over, however
	// fast the machine: it is the silence, not the length, that must fail.
	writeExport = func(ctx context.Context, w io.WriteSeeker, view fsm.View, pages *ui.UI, now time.Time, opts mirror.ExportOptions) (mirror.ExportStats, error) {
		st, err := oldWrite(ctx, w, view, pages, now, opts)
		select {
		case <-time.After(3 * timeout):
		case <-ctx.Done():
		}
		return st, err
	}
	t.Cleanup(func() { exportProgressEvery, writeExport = oldEvery, oldWrite })
	tn := startNode(t, Config{})
	for i := range pastes {
		create(t, tn.URL, []byte("paste "+strconv.Itoa(i)+"\n"), "lang=go")
	}

	cl, err := client.New([]string{tn.URL}, client.Options{Timeout: timeout, AdminToken: testAdmin})
	if err != nil {
		t.Fatal(err)
	}
	out := &progressFile{}
	start := time.Now()
	n, err := cl.Export(t.Context(), out, nil)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Export after %s: %v", took, err)
	}
	if took < 2*timeout {
		t.Fatalf("the export took %s, not long enough to outlast the timeout of %s twice: make it larger", took, timeout)
	}
	if n != int64(out.Len()) || out.pastes != pastes {
		t.Errorf("Export: %d bytes (file %d), %d pastes; want %d pastes", n, out.Len(), out.pastes, pastes)
	}
	if len(out.progress) < 2 || out.progress[len(out.progress)-1][1] != pastes {
		t.Errorf("progress reports %v: want several, out of %d", out.progress, pastes)
	}
	for i := 1; i < len(out.progress); i++ {
		if out.progress[i][0] < out.progress[i-1][0] {
			t.Errorf("progress went back: %v", out.progress)
		}
	}
	metrics := do(t, http.MethodGet, tn.URL+"/metrics", nil)
	if want := `pastenode_http_requests_total{code="200",method="GET",route="export"} 1`; !strings.Contains(string(metrics.body), want) {
		t.Errorf("/metrics lacks %s", want)
	}
}

// progressFile is an export's output that records what Export reports.
type progressFile struct {
	bytes.Buffer
	pastes   int64
	progress [][2]int64
}

func (f *progressFile) SetExportPastes(n int64) { f.pastes = n }
func (f *progressFile) ExportProgress(done, total int64) {
	f.progress = append(f.progress, [2]int64{done, total})
}

// TestExportTailFails checks that an export in tail order that fails
// before its first byte is an error answer, and one that fails after it
// cuts the connection: pastectl's file is never a short archive.
func TestExportTailFails(t *testing.T) {
	old := writeExportTail
	t.Cleanup(func() { writeExportTail = old })
	var started, ended atomic.Int32
	tn := startNode(t, Config{ExportStarted: func() func() {
		started.Add(1)
		return func() { ended.Add(1) }
	}})
	create(t, tn.URL, []byte("a paste\n"), "")
	cl, err := client.New([]string{tn.URL}, client.Options{AdminToken: testAdmin})
	if err != nil {
		t.Fatal(err)
	}
	for _, sent := range []int{0, 200 << 10} {
		writeExportTail = func(ctx context.Context, w io.Writer, view fsm.View, pages *ui.UI, now time.Time, opts mirror.ExportOptions) (mirror.ExportStats, error) {
			if _, err := w.Write(make([]byte, sent)); err != nil {
				return mirror.ExportStats{}, err
			}
			return mirror.ExportStats{}, errors.New("disk on fire")
		}
		f, err := os.Create(filepath.Join(t.TempDir(), "export.cdb"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.Export(t.Context(), f, nil)
		f.Close()
		if err == nil {
			t.Fatalf("an export that failed after %d bytes: no error", sent)
		}
		if sent == 0 && !strings.Contains(err.Error(), "500") {
			t.Errorf("an export that failed before its first byte: %v, want a 500", err)
		}
	}
	// The node goes on serving, and gave back the collector's headroom.
	do(t, http.MethodGet, tn.URL+"/healthz", nil).wantStatus(t, http.StatusOK)
	if started.Load() != 2 || ended.Load() != 2 {
		t.Errorf("ExportStarted: %d calls, %d ended; want 2 and 2", started.Load(), ended.Load())
	}
}

// http10 sends an HTTP/1.0 GET of path to base with headers ("Key",
// "value" pairs) and returns the answer, its body read.
func http10(tb testing.TB, base, path string, headers ...string) *http.Response {
	tb.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	req := "GET " + path + " HTTP/1.0\r\n"
	for i := 0; i+1 < len(headers); i += 2 {
		req += headers[i] + ": " + headers[i+1] + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		tb.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		tb.Fatal(err)
	}
	return resp
}
