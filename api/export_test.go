package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/mirror"
)

// TestExportRoute exports a real node's pastes through GET
// /api/v1/export.cdb and serves the file with the mirror.
func TestExportRoute(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the export's temporary file goes
	tn := startNode(t, Config{})
	ids := map[string][]byte{}
	for _, content := range [][]byte{[]byte("first\n"), {0xff, 0xfe, 0, 1}, bytes.Repeat([]byte("long line\n"), 1000)} {
		id, _ := create(t, tn.URL, content, "")
		ids[id] = content
	}
	expiring, _ := create(t, tn.URL, []byte("for an hour\n"), "expire=1h")
	ids[expiring] = []byte("for an hour\n")
	burn, _ := create(t, tn.URL, []byte("burn\n"), "burn=true")

	head := do(t, http.MethodHead, tn.URL+"/api/v1/export.cdb", nil)
	head.wantStatus(t, http.StatusOK)
	r := do(t, http.MethodGet, tn.URL+"/api/v1/export.cdb", nil)
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

	path := filepath.Join(t.TempDir(), "export.cdb")
	if err := os.WriteFile(path, r.body, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := mirror.New(mirror.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	h := m.Handler()
	for id, content := range ids {
		if got := serve(h, http.MethodGet, "/"+id); got.Code != 200 || !bytes.Equal(got.Body.Bytes(), content) {
			t.Errorf("mirror /%s: got %d with %d bytes, want the exact %d", id, got.Code, got.Body.Len(), len(content))
		}
		wantSameAsLive(t, h, tn.URL, id)
	}
	if got := serve(h, http.MethodGet, "/raw/"+burn); got.Code != http.StatusNotFound {
		t.Errorf("burn paste in the mirror: got %d, want 404", got.Code)
	}
	// The export did not consume the burn paste.
	do(t, http.MethodGet, tn.URL+"/raw/"+burn, nil).wantStatus(t, http.StatusOK)
}

// wantSameAsLive checks that the mirror h sends paste id with the headers
// and metadata that the live node at base sends.
func wantSameAsLive(t *testing.T, h http.Handler, base, id string) {
	t.Helper()
	for _, tt := range []struct {
		target, accept string
		headers        []string
	}{
		{"/raw/" + id, "", []string{"Content-Type", "X-Content-Type-Options", "ETag", "Content-Length", "Content-Security-Policy", "Expires"}},
		{"/" + id, "text/html", []string{"Content-Type", "Content-Security-Policy", "Referrer-Policy", "X-Content-Type-Options", "X-Frame-Options"}},
	} {
		got := serve(h, http.MethodGet, tt.target, "Accept", tt.accept)
		ref := do(t, http.MethodGet, base+tt.target, nil, "Accept", tt.accept)
		for _, name := range tt.headers {
			if g, w := got.Header().Get(name), ref.Header.Get(name); g != w {
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
