package mirror

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
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

	"github.com/hashicorp/raft"

	"github.com/pastenode/pastenode/cdb"
	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/internal/httpx"
	"github.com/pastenode/pastenode/ui"
)

// exportFSM is a real state machine fed create commands directly, without
// Raft.
type exportFSM struct {
	*fsm.FSM
	index uint64
}

func newExportFSM() *exportFSM { return &exportFSM{FSM: fsm.New()} }

// add creates the pastes in one batch of log entries.
func (f *exportFSM) add(tb testing.TB, pastes ...*fsm.Paste) {
	tb.Helper()
	logs := make([]*raft.Log, len(pastes))
	for i, p := range pastes {
		if p.TokenHash == nil {
			p.TokenHash = fsm.HashToken("token")
		}
		b, err := fsm.Encode(&fsm.Command{Type: fsm.TypeCreate, Now: p.CreatedAt, Paste: p})
		if err != nil {
			tb.Fatal(err)
		}
		f.index++
		logs[i] = &raft.Log{Index: f.index, Type: raft.LogCommand, Data: b}
	}
	for i, res := range f.ApplyBatch(logs) {
		if err := res.(*fsm.Result).Err; err != nil {
			tb.Fatalf("create %s: %v", pastes[i].ID, err)
		}
	}
}

// writeExportFile exports f at now to a new file in dir and returns its
// path and the stats.
func writeExportFile(tb testing.TB, dir string, f *exportFSM, now time.Time) (string, ExportStats) {
	tb.Helper()
	pages := mirrorPages(tb)
	out, err := os.CreateTemp(dir, "export-*.cdb")
	if err != nil {
		tb.Fatal(err)
	}
	defer out.Close()
	st, err := WriteExport(context.Background(), out, f.View(), pages, now, ExportOptions{})
	if err != nil {
		tb.Fatalf("WriteExport: %v", err)
	}
	return out.Name(), st
}

// mirrorPages is the UI an export renders with.
func mirrorPages(tb testing.TB) *ui.UI {
	tb.Helper()
	u, err := ui.New(ui.Options{Mirror: true})
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// startMirror serves the archive at path until the test ends.
func startMirror(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	m, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.Start(ctx); err != nil {
		tb.Fatalf("start mirror: %v", err)
	}
	tb.Cleanup(func() {
		cancel()
		m.Close()
	})
	return m
}

// get sends one request to h over a real server, as a client that
// decodes no gzip itself, and returns the answer as a recorder: its code,
// headers (a chunked answer's Transfer-Encoding among them) and body.
// headers are "Key", "value" pairs. A mirror (a *Server, as Handler
// returns it) is served as `pastenode mirror` serves it, by its
// FastServer; any other handler by net/http.
func get(h http.Handler, method, target string, headers ...string) *httptest.ResponseRecorder {
	var base string
	if m, ok := h.(*Server); ok {
		url, stop := serveFast(m)
		defer stop()
		base = url
	} else {
		ts := httptest.NewServer(h)
		defer ts.Close()
		base = ts.URL
	}
	req, err := http.NewRequest(method, base+target, nil)
	if err != nil {
		panic(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	rec := httptest.NewRecorder()
	maps.Copy(rec.Header(), resp.Header)
	if len(resp.TransferEncoding) > 0 {
		rec.Header()["Transfer-Encoding"] = resp.TransferEncoding
	}
	rec.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(rec, resp.Body); err != nil {
		panic(err)
	}
	return rec
}

// waitFor polls cond until it returns nil, and fails the test if it has
// not by the deadline.
func waitFor(tb testing.TB, timeout time.Duration, what string, cond func() error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	err := cond()
	for ; err != nil; err = cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: still not true after %s: %v", what, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestExport(t *testing.T) {
	now := time.Now()
	at := func(d time.Duration) int64 { return now.Add(d).UnixNano() }
	binary := make([]byte, 512)
	for i := range binary {
		binary[i] = byte(i * 7)
	}
	large := bytes.Repeat([]byte("a large paste that compresses very well\n"), 5000)
	pastes := []*fsm.Paste{
		{ID: "plain", Content: []byte("package main\n\nfunc main() {}\n"), Lang: "go", Title: "A title", CreatedAt: at(-time.Hour)},
		{ID: "binary", Content: binary, CreatedAt: at(-time.Hour)},
		{ID: "large", Content: large, CreatedAt: at(-time.Hour)},
		{ID: "secret", Content: []byte("pn1.k.AAAAAAAAAAAAAAAA.BBBBBBBBBBBBBBBBBBBBBB"), Encrypted: true, CreatedAt: at(-time.Hour)},
		{ID: "expiring", Content: []byte("for an hour\n"), CreatedAt: at(-time.Minute), ExpiresAt: at(time.Hour)},
		{ID: "burn", Content: []byte("read me once\n"), Burn: true, CreatedAt: at(-time.Minute)},
		{ID: "burnsecret", Content: []byte("pn1.k.AAAA.BBBB"), Burn: true, Encrypted: true, CreatedAt: at(-time.Minute)},
		{ID: "expired", Content: []byte("gone\n"), CreatedAt: at(-time.Hour), ExpiresAt: at(-time.Second)},
		{ID: "not a/path", Content: []byte("the store takes any id\n"), CreatedAt: at(-time.Hour)},
	}
	f := newExportFSM()
	f.add(t, pastes...)
	path, st := writeExportFile(t, t.TempDir(), f, now)

	want := ExportStats{Index: f.index, Pastes: 5, Burn: 2, Expired: 1, Skipped: 1,
		Bytes: int64(len(pastes[0].Content) + len(binary) + len(large) + len(pastes[3].Content) + len(pastes[4].Content))}
	if st != want {
		t.Errorf("stats: got %+v, want %+v", st, want)
	}

	t.Run("deterministic", func(t *testing.T) {
		again, _ := writeExportFile(t, t.TempDir(), f, now)
		a, _ := os.ReadFile(path)
		b, _ := os.ReadFile(again)
		if !bytes.Equal(a, b) {
			t.Errorf("two exports of one view at one time differ (%d and %d bytes)", len(a), len(b))
		}
	})

	t.Run("tail order", func(t *testing.T) {
		var tail bytes.Buffer
		var done atomic.Int64
		st, err := WriteExportTail(context.Background(), &tail, f.View(), mirrorPages(t), now, ExportOptions{Done: &done})
		if err != nil {
			t.Fatal(err)
		}
		if st != want || done.Load() != int64(want.Pastes) {
			t.Errorf("stats %+v, %d counted; want %+v, %d", st, done.Load(), want, want.Pastes)
		}
		b := tail.Bytes()
		moved := append(slices.Clone(b[len(b)-cdb.TailSize:]), b[:len(b)-cdb.TailSize]...)
		if file, _ := os.ReadFile(path); !bytes.Equal(moved, file) {
			t.Errorf("the tail-order export with its tail moved to the front differs from the file (%d and %d bytes)", len(moved), len(file))
		}
	})

	t.Run("archive", func(t *testing.T) {
		a, err := cdb.OpenArchive(path)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		paths, err := a.Paths()
		if err != nil {
			t.Fatal(err)
		}
		wantPaths := []string{"/", "/*", "/static/app.css", "/static/app.js"}
		for _, id := range []string{"plain", "binary", "large", "secret", "expiring"} {
			wantPaths = append(wantPaths, "/"+id, "/raw/"+id, "/api/v1/pastes/"+id)
		}
		slices.Sort(wantPaths)
		if !slices.Equal(paths, wantPaths) {
			t.Errorf("paths:\n got %q\nwant %q", paths, wantPaths)
		}
		res, ok, err := a.Lookup("/raw/large")
		if err != nil || !ok || res.ContentEncoding() != "gzip" || len(res.Body) >= len(large)/10 {
			t.Errorf("/raw/large: found %v, err %v, encoding %s, %d bytes; want gzip, much smaller than %d",
				ok, err, res.ContentEncoding(), len(res.Body), len(large))
		}
		res, _, _ = a.Lookup("/raw/binary")
		if res.ContentEncoding() != "identity" || !bytes.Equal(res.Body, binary) {
			t.Errorf("/raw/binary: got encoding %s, want identity and the exact bytes", res.ContentEncoding())
		}
		for _, h := range res.Headers {
			for _, c := range []byte(h.Value) {
				if c < ' ' || c > '~' {
					t.Errorf("header %s: value %q is not printable ASCII", h.Name, h.Value)
				}
			}
		}
	})

	m := startMirror(t, Config{Path: path})
	mirror := m.Handler()

	t.Run("raw", func(t *testing.T) {
		for _, p := range pastes[:5] {
			got := get(mirror, http.MethodGet, "/raw/"+p.ID)
			if got.Code != http.StatusOK || !bytes.Equal(got.Body.Bytes(), p.Content) {
				t.Errorf("/raw/%s: got %d with %d bytes, want 200 with the exact %d bytes", p.ID, got.Code, got.Body.Len(), len(p.Content))
				continue
			}
			// The same representation as the live node's, which sends
			// these headers (api's TestExportRoute compares the two).
			ref := http.Header{}
			p.Seal() // as the store hands it out
			httpx.SetRawHeaders(ref, p, true)
			for _, name := range []string{"Content-Type", "X-Content-Type-Options", "ETag", "Last-Modified", "Content-Length", "Content-Security-Policy", "Expires"} {
				if g, w := got.Header().Get(name), ref.Get(name); g != w {
					t.Errorf("/raw/%s: %s: got %q, want the live node's %q", p.ID, name, g, w)
				}
			}
			if ce := got.Header().Get("Content-Encoding"); ce != "" {
				t.Errorf("/raw/%s: Content-Encoding %q to a client that accepts none", p.ID, ce)
			}
			// An expiring paste's is counted from the request, down to
			// the second of its expiry.
			cc := got.Header().Get("Cache-Control")
			age, err := strconv.Atoi(strings.TrimPrefix(cc, "public, max-age="))
			if err != nil || age > 3600 || (p.ExpiresAt == 0 && age != 3600) || age < 3590 {
				t.Errorf("/raw/%s: Cache-Control %q, want public, max-age=3600 or a little less if it expires in an hour", p.ID, cc)
			}
		}
		if ct := get(mirror, http.MethodGet, "/raw/binary").Header().Get("Content-Type"); ct != "application/octet-stream" {
			t.Errorf("binary Content-Type: got %q", ct)
		}
	})

	t.Run("gzip", func(t *testing.T) {
		got := get(mirror, http.MethodGet, "/raw/large", "Accept-Encoding", "br, gzip")
		if ce := got.Header().Get("Content-Encoding"); got.Code != http.StatusOK || ce != "gzip" {
			t.Fatalf("got %d, Content-Encoding %q; want 200 gzip", got.Code, ce)
		}
		if n, _ := strconv.Atoi(got.Header().Get("Content-Length")); n != got.Body.Len() || n >= len(large)/10 {
			t.Errorf("Content-Length %d for %d bytes; want the small gzip size", n, got.Body.Len())
		}
		zr, err := gzip.NewReader(got.Body)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(body, large) {
			t.Errorf("gunzipped body: %d bytes, err %v; want the exact %d bytes", len(body), err, len(large))
		}
		if !strings.HasPrefix(got.Header().Get("ETag"), `W/"`) {
			t.Errorf("ETag of the gzip bytes: got %q, want a weak one", got.Header().Get("ETag"))
		}
		if got := get(mirror, http.MethodGet, "/raw/large", "Accept-Encoding", "gzip;q=0"); got.Header().Get("Content-Encoding") != "" || !bytes.Equal(got.Body.Bytes(), large) {
			t.Errorf("gzip;q=0: got Content-Encoding %q and %d bytes, want the plain bytes", got.Header().Get("Content-Encoding"), got.Body.Len())
		}
	})

	t.Run("page", func(t *testing.T) {
		for _, id := range []string{"plain", "secret", "large"} {
			got := get(mirror, http.MethodGet, "/"+id, "Accept", "text/html,application/xhtml+xml")
			body := got.Body.String()
			if got.Code != http.StatusOK || !strings.Contains(body, `id="paste"`) || !strings.Contains(body, "read-only mirror") {
				t.Errorf("/%s: got %d, want 200 with the mirror's paste page: %.200q", id, got.Code, body)
			}
			ref := http.Header{}
			ui.SetPageHeaders(ref)
			for _, name := range []string{"Content-Type", "Content-Security-Policy", "Referrer-Policy", "X-Content-Type-Options", "X-Frame-Options"} {
				if g, w := got.Header().Get(name), ref.Get(name); g != w {
					t.Errorf("/%s: %s: got %q, want the live node's %q", id, name, g, w)
				}
			}
			if strings.Contains(body, "Clone and edit") || strings.Contains(body, `action="/"`) {
				t.Errorf("/%s: the mirror page offers to create a paste", id)
			}
		}
		if body := get(mirror, http.MethodGet, "/plain", "Accept", "text/html").Body.String(); !strings.Contains(body, `<span class="kd">func</span>`) && !strings.Contains(body, "func</span>") {
			t.Errorf("/plain: not highlighted: %.300q", body)
		}
		if body := get(mirror, http.MethodGet, "/secret", "Accept", "text/html").Body.String(); !strings.Contains(body, `id="ciphertext"`) || !strings.Contains(body, string(pastes[3].Content)) {
			t.Errorf("/secret: no ciphertext for the script to decrypt: %.300q", body)
		}
		// curl gets the bytes, as from the live node.
		got := get(mirror, http.MethodGet, "/binary")
		if got.Code != http.StatusOK || !bytes.Equal(got.Body.Bytes(), binary) || !strings.Contains(got.Header().Get("Vary"), "Accept") {
			t.Errorf("/binary without Accept: got %d, %d bytes, Vary %q; want the raw bytes", got.Code, got.Body.Len(), got.Header().Get("Vary"))
		}
	})

	t.Run("meta", func(t *testing.T) {
		for _, p := range pastes[:5] {
			got := get(mirror, http.MethodGet, "/api/v1/pastes/"+p.ID)
			var meta pastenode.Meta
			if err := json.Unmarshal(got.Body.Bytes(), &meta); err != nil || got.Code != http.StatusOK {
				t.Fatalf("/api/v1/pastes/%s: got %d %q: %v", p.ID, got.Code, got.Body, err)
			}
			ref := ui.MetaOf(p, "") // what the live node sends, with paths for URLs
			if meta.ExpiresAt != nil && ref.ExpiresAt != nil && meta.ExpiresAt.Equal(*ref.ExpiresAt) {
				meta.ExpiresAt = ref.ExpiresAt
			}
			if !meta.CreatedAt.Equal(ref.CreatedAt) {
				t.Errorf("%s: created_at %v, want %v", p.ID, meta.CreatedAt, ref.CreatedAt)
			}
			meta.CreatedAt = ref.CreatedAt
			if meta != ref {
				t.Errorf("%s: got %+v, want %+v", p.ID, meta, ref)
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			name, method, target string
			headers              []string
			wantCode             int
			wantType             string
			wantBody             string
		}{
			{"burn raw", "GET", "/raw/burn", nil, 404, "text/plain", "paste not found\n"},
			{"burn page", "GET", "/burn", []string{"Accept", "text/html"}, 404, "text/html", "Paste not found"},
			{"burn meta", "GET", "/api/v1/pastes/burnsecret", nil, 404, "application/json", `{"error":"paste not found"}`},
			{"expired", "GET", "/raw/expired", nil, 404, "text/plain", "paste not found\n"},
			{"unknown", "GET", "/a/b/c", nil, 404, "text/plain", "not found\n"},
			{"unknown api", "GET", "/api/v1/status", nil, 404, "application/json", `{"error":"not found"}`},
			{"post", "POST", "/", nil, 405, "text/plain", "read-only mirror: POST is not allowed, only GET and HEAD\n"},
			{"delete", "DELETE", "/plain", nil, 405, "text/plain", "read-only mirror: DELETE"},
			{"put api", "PUT", "/api/v1/pastes", nil, 405, "application/json", `{"error":"read-only mirror: PUT`},
			{"reveal", "POST", "/burn/reveal", []string{"Accept", "text/html"}, 405, "text/plain", "read-only mirror"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got := get(mirror, tt.method, tt.target, tt.headers...)
				if got.Code != tt.wantCode || !strings.HasPrefix(got.Header().Get("Content-Type"), tt.wantType) ||
					!strings.Contains(got.Body.String(), tt.wantBody) {
					t.Errorf("got %d %q %.200q, want %d %s containing %q", got.Code, got.Header().Get("Content-Type"),
						got.Body, tt.wantCode, tt.wantType, tt.wantBody)
				}
				if tt.wantCode == 405 && got.Header().Get("Allow") != "GET, HEAD" {
					t.Errorf("Allow: got %q, want GET, HEAD", got.Header().Get("Allow"))
				}
				if tt.wantType == "text/plain" && strings.Count(got.Body.String(), "\n") != 1 {
					t.Errorf("body %q is not one line", got.Body)
				}
			})
		}
	})

	t.Run("site", func(t *testing.T) {
		if got := get(mirror, http.MethodGet, "/", "Accept", "text/html"); got.Code != 200 || !strings.Contains(got.Body.String(), "Read-only mirror") {
			t.Errorf("/ for a browser: got %d %.200q", got.Code, got.Body)
		}
		if got := get(mirror, http.MethodGet, "/"); got.Code != 200 || strings.Count(got.Body.String(), "\n") != 1 || !strings.Contains(got.Body.String(), "read-only mirror") {
			t.Errorf("/ for curl: got %d %q, want one line", got.Code, got.Body)
		}
		for _, name := range []string{"app.css", "app.js"} {
			got := get(mirror, http.MethodGet, "/static/"+name+"?v=whatever")
			body, ctype, _ := mirrorPages(t).Asset(name)
			if got.Code != 200 || !bytes.Equal(got.Body.Bytes(), body) || got.Header().Get("Content-Type") != ctype {
				t.Errorf("/static/%s: got %d %q with %d bytes, want %s and the asset's %d bytes", name, got.Code,
					got.Header().Get("Content-Type"), got.Body.Len(), ctype, len(body))
			}
		}
		got := get(mirror, http.MethodHead, "/raw/plain")
		if got.Code != 200 || got.Body.Len() != 0 || got.Header().Get("Content-Length") != strconv.Itoa(len(pastes[0].Content)) {
			t.Errorf("HEAD /raw/plain: got %d, %d body bytes, Content-Length %q", got.Code, got.Body.Len(), got.Header().Get("Content-Length"))
		}
		got = get(mirror, http.MethodGet, "/raw/plain", "If-None-Match", get(mirror, "GET", "/raw/plain").Header().Get("ETag"))
		if got.Code != http.StatusNotModified {
			t.Errorf("If-None-Match: got %d, want 304", got.Code)
		}
		if got := get(mirror, http.MethodGet, "/healthz"); got.Code != 200 || got.Body.String() != "ok\n" {
			t.Errorf("/healthz: got %d %q", got.Code, got.Body)
		}
		metrics := get(mirror, http.MethodGet, "/metrics").Body.String()
		for _, want := range []string{"pastenode_mirror_pastes 5", `pastenode_mirror_http_requests_total{code="200",route="raw"}`,
			`pastenode_mirror_http_requests_total{code="405",route="index"} 1`, `pastenode_mirror_reloads_total{result="ok"} 0`} {
			if !strings.Contains(metrics, want) {
				t.Errorf("/metrics has no %q", want)
			}
		}
	})
}

func TestExportCanceled(t *testing.T) {
	f, _ := benchFSM(t, 500, 0)
	out, err := os.Create(filepath.Join(t.TempDir(), "export.cdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := WriteExport(ctx, out, f.View(), mirrorPages(t), time.Now(), ExportOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("export with a canceled context: got %v, want context.Canceled", err)
	}
}

// TestExportExpires checks that the mirror hides a paste once the expiry
// stored in the archive has passed, with no new export.
func TestExportExpires(t *testing.T) {
	now := time.Now()
	f := newExportFSM()
	f.add(t, &fsm.Paste{ID: "soon", Content: []byte("two seconds\n"), CreatedAt: now.UnixNano(), ExpiresAt: now.Add(2 * time.Second).UnixNano()})
	path, st := writeExportFile(t, t.TempDir(), f, now)
	if st.Pastes != 1 {
		t.Fatalf("exported %d pastes, want 1", st.Pastes)
	}
	h := startMirror(t, Config{Path: path}).Handler()
	if got := get(h, http.MethodGet, "/raw/soon"); got.Code != http.StatusOK {
		t.Fatalf("before expiry: got %d, want 200", got.Code)
	}
	if cc := get(h, http.MethodGet, "/soon", "Accept", "text/html").Header().Get("Cache-Control"); cc != "public, max-age=1" && cc != "public, max-age=0" {
		t.Errorf("Cache-Control of a paste with under 2s left: got %q", cc)
	}
	waitFor(t, 5*time.Second, "paste hidden after expiry", func() error {
		if got := get(h, http.MethodGet, "/raw/soon"); got.Code != http.StatusNotFound {
			return errors.New("still " + strconv.Itoa(got.Code))
		}
		return nil
	})
	if time.Now().Before(now.Add(time.Second)) {
		t.Errorf("hidden after %s, before the expiry's second", time.Since(now))
	}
	for _, target := range []string{"/soon", "/api/v1/pastes/soon"} {
		if got := get(h, http.MethodGet, target, "Accept", "text/html"); got.Code != http.StatusNotFound {
			t.Errorf("%s after expiry: got %d, want 404", target, got.Code)
		}
	}
}

// TestExportBatches: small pastes go to the workers exportBatch at a
// time, large ones a few at a time, so that they spread over the CPUs
// and the archive keeps coming while each is highlighted.
func TestExportBatches(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		name          string
		count, size   int
		wantMaxPastes int
	}{
		{"small", 3*exportBatch + 5, 100, exportBatch},
		{"large", 10, exportBatchBytes / 2, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newExportFSM()
			for i := range tt.count {
				f.add(t, &fsm.Paste{ID: fmt.Sprintf("p%04d", i), Content: bytes.Repeat([]byte("x"), tt.size), CreatedAt: now.UnixNano()})
			}
			e, err := newExporter(mirrorPages(t), now, nil)
			if err != nil {
				t.Fatal(err)
			}
			jobs, order := make(chan *exportJob, tt.count), make(chan *exportJob, tt.count)
			var st ExportStats
			e.walk(context.Background(), f.View(), &st, jobs, order)
			total, most := 0, 0
			for j := range order {
				total += len(j.pastes)
				most = max(most, len(j.pastes))
			}
			if total != tt.count || most != tt.wantMaxPastes {
				t.Errorf("%d pastes in batches of at most %d, want %d in batches of at most %d", total, most, tt.count, tt.wantMaxPastes)
			}
		})
	}
}
