package mirror

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pastenode/pastenode/cdb"
	"github.com/pastenode/pastenode/fsm"
)

// lockedBuffer is a log destination that tests read while the mirror
// writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// exportBytes returns an archive holding one paste per id, whose content
// is the id and then content.
func exportBytes(tb testing.TB, content string, ids ...string) []byte {
	tb.Helper()
	f := newExportFSM()
	now := time.Now()
	for _, id := range ids {
		f.add(tb, &fsm.Paste{ID: id, Content: []byte(id + content), CreatedAt: now.UnixNano()})
	}
	path, _ := writeExportFile(tb, tb.TempDir(), f, now)
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// replaceFile puts data at path the way an export should be installed:
// written under a temporary name in the same directory, then renamed.
func replaceFile(tb testing.TB, path string, data []byte) {
	tb.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
}

// wantRaw checks that h serves /raw/id with code, and with body when the
// code is 200.
func wantRaw(h http.Handler, id string, code int, body string) error {
	got := get(h, http.MethodGet, "/raw/"+id)
	if got.Code != code || (code == http.StatusOK && got.Body.String() != body) {
		return fmt.Errorf("/raw/%s: got %d %q, want %d %q", id, got.Code, got.Body, code, body)
	}
	return nil
}

func TestMirrorReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mirror.cdb")
	replaceFile(t, path, exportBytes(t, " in A", "alpha"))
	var logs lockedBuffer
	m := startMirror(t, Config{Path: path, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	h := m.Handler()
	if err := wantRaw(h, "alpha", 200, "alpha in A"); err != nil {
		t.Fatal(err)
	}

	// B renamed over A is served within a second, without a restart.
	replaceFile(t, path, exportBytes(t, " in B", "beta", "gamma"))
	start := time.Now()
	waitFor(t, time.Second, "B served", func() error { return wantRaw(h, "beta", 200, "beta in B") })
	t.Logf("B served %s after the rename", time.Since(start).Round(time.Millisecond))
	if err := wantRaw(h, "alpha", 404, ""); err != nil {
		t.Error(err)
	}
	if m.Pastes() != 2 {
		t.Errorf("Pastes: got %d, want 2", m.Pastes())
	}

	// Files that are not sound archives are refused; B stays.
	for i, bad := range [][]byte{
		[]byte(strings.Repeat("not a cdb file\n", 500)),
		exportBytes(t, " in C", "delta")[:3000], // cut short
		nil,
	} {
		replaceFile(t, path, bad)
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if err := wantRaw(h, "beta", 200, "beta in B"); err != nil {
				t.Fatalf("after bad file %d: %v", i, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if n := strings.Count(logs.String(), "new archive rejected"); n != i+1 {
			t.Fatalf("after bad file %d: %d errors logged, want %d:\n%s", i, n, i+1, logs.String())
		}
	}
	if err := wantRaw(h, "delta", 404, ""); err != nil {
		t.Error(err)
	}
	metrics := get(h, http.MethodGet, "/metrics").Body.String()
	for _, want := range []string{`pastenode_mirror_reloads_total{result="ok"} 1`, `pastenode_mirror_reloads_total{result="error"} 3`, "pastenode_mirror_pastes 2"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %q", want)
		}
	}

	// A good file after the bad ones is taken again.
	replaceFile(t, path, exportBytes(t, " in D", "epsilon"))
	waitFor(t, time.Second, "D served", func() error { return wantRaw(h, "epsilon", 200, "epsilon in D") })
}

// TestMirrorRefcount checks that an archive swapped out by a reload, or
// released by Close, stays mapped until the last request using it ends.
func TestMirrorRefcount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mirror.cdb")
	replaceFile(t, path, exportBytes(t, " in A", "alpha"))
	m := startMirror(t, Config{Path: path, Poll: time.Hour}) // reloads only when told
	h := m.Handler()

	inFlight := m.acquire()
	res, ok, err := inFlight.a.Lookup("/raw/alpha")
	if err != nil || !ok {
		t.Fatalf("lookup: %v %v", ok, err)
	}
	replaceFile(t, path, exportBytes(t, " in B", "beta"))
	m.reload()
	if err := wantRaw(h, "beta", 200, "beta in B"); err != nil {
		t.Fatal(err)
	}
	// The old mapping is still readable by the request that holds it.
	if string(res.Body) != "alpha in A" {
		t.Fatalf("old body: got %q", res.Body)
	}
	if _, _, err := inFlight.a.Lookup("/raw/alpha"); err != nil {
		t.Fatalf("lookup in the old archive before release: %v", err)
	}
	inFlight.release(m.log)
	if _, _, err := inFlight.a.Lookup("/raw/alpha"); !errors.Is(err, cdb.ErrClosed) {
		t.Fatalf("lookup in the old archive after its last release: got %v, want ErrClosed", err)
	}

	inFlight = m.acquire()
	m.Close()
	if _, _, err := inFlight.a.Lookup("/raw/beta"); err != nil {
		t.Fatalf("lookup during Close: %v", err)
	}
	if got := get(h, http.MethodGet, "/raw/beta"); got.Code != http.StatusServiceUnavailable {
		t.Errorf("request after Close: got %d, want 503", got.Code)
	}
	inFlight.release(m.log)
	if _, _, err := inFlight.a.Lookup("/raw/beta"); !errors.Is(err, cdb.ErrClosed) {
		t.Fatalf("lookup after Close and release: got %v, want ErrClosed", err)
	}
}

// TestMirrorReloadUnderLoad swaps archives while requests run; with -race
// it also checks that acquire and release do not race with the swap.
func TestMirrorReloadUnderLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mirror.cdb")
	large := strings.Repeat("x", 64<<10)
	versions := [][]byte{exportBytes(t, large+"A", "same"), exportBytes(t, large+"B", "same")}
	replaceFile(t, path, versions[0])
	m := startMirror(t, Config{Path: path, Poll: time.Hour})
	h := m.Handler()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got := get(h, http.MethodGet, "/raw/same")
				if b := got.Body.String(); got.Code != 200 || (b != "same"+large+"A" && b != "same"+large+"B") {
					errs <- fmt.Errorf("got %d with %d bytes, want 200 and one version", got.Code, len(b))
					return
				}
			}
		})
	}
	for i := range 40 {
		replaceFile(t, path, versions[(i+1)%2])
		m.reload()
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestMirrorRoute(t *testing.T) {
	tests := []struct {
		path      string
		html      bool
		wantRoute string
		wantKey   string
	}{
		{"/", false, "index", "/"},
		{"/abc", false, "view", "/raw/abc"},
		{"/abc", true, "view", "/abc"},
		{"/raw/abc", true, "raw", "/raw/abc"},
		{"/raw/", false, "unknown", ""},
		{"/raw/a/b", false, "unknown", ""},
		{"/api/v1/pastes/abc", false, "api_meta", "/api/v1/pastes/abc"},
		{"/api/v1/status", false, "api_unknown", ""},
		{"/static/app.css", false, "static", "/static/app.css"},
		{"/healthz", false, "healthz", ""},
		{"/metrics", false, "metrics", ""},
		{"/abc/reveal", true, "unknown", ""},
	}
	for _, tt := range tests {
		route, key := mirrorRoute(tt.path, tt.html)
		if route != tt.wantRoute || key != tt.wantKey {
			t.Errorf("mirrorRoute(%q, %v): got %q, %q; want %q, %q", tt.path, tt.html, route, key, tt.wantRoute, tt.wantKey)
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	tests := []struct {
		header string
		want   bool
	}{
		{"", false},
		{"gzip", true},
		{"deflate, gzip;q=1.0, *;q=0.5", true},
		{"br;q=1, gzip;q=0", false},
		{"GZIP", true},
		{"*", true},
		{"identity", false},
		{"gzip; q=0.000", false},
	}
	for _, tt := range tests {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		if tt.header != "" {
			r.Header.Set("Accept-Encoding", tt.header)
		}
		if got := acceptsGzip(r); got != tt.want {
			t.Errorf("acceptsGzip(%q): got %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestMirrorStartErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.cdb")
	os.WriteFile(garbage, []byte(strings.Repeat("x", 4096)), 0o644)
	for _, path := range []string{filepath.Join(dir, "missing.cdb"), garbage} {
		m, err := New(Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Start(t.Context()); err == nil {
			t.Errorf("Start on %s: no error", filepath.Base(path))
		}
		m.Close()
	}
	if _, err := New(Config{}); err == nil {
		t.Error("NewMirror without a path: no error")
	}
}

// fetch sends GET target to the server at base and returns the answer's
// code and body, or the error of a request cut off.
func fetch(base, target string) (int, string, error) {
	resp, err := http.Get(base + target)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// TestMirrorFaultOnTruncatedFile checks that a read of the archive's
// mapping beyond the end of a file cut short in place, which faults, costs
// that request a 503 and not the process. The watcher is idle here, so
// the reads do fault. Both servers: the fasthttp one that `pastenode
// mirror` runs, whose fast path faults before it has written anything,
// and ServeHTTP behind net/http.
func TestMirrorFaultOnTruncatedFile(t *testing.T) {
	t.Run("fasthttp", func(t *testing.T) { testFaultOnTruncatedFile(t, serveFast) })
	t.Run("net/http", func(t *testing.T) {
		testFaultOnTruncatedFile(t, func(m *Server) (string, func()) {
			ts := httptest.NewServer(m.Handler())
			return ts.URL, ts.Close
		})
	})
}

func testFaultOnTruncatedFile(t *testing.T, serve func(*Server) (string, func())) {
	path := filepath.Join(t.TempDir(), "mirror.cdb")
	replaceFile(t, path, exportBytes(t, strings.Repeat(" in A", 2000), "alpha", "beta"))
	m := startMirror(t, Config{Path: path, Poll: time.Hour})
	url, stop := serve(m)
	defer stop()
	ts := struct{ URL string }{url}
	if code, _, err := fetch(ts.URL, "/raw/alpha"); code != http.StatusOK {
		t.Fatalf("/raw/alpha before: %d %v", code, err)
	}

	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	// beta was never served: its lookup reads the hash tables, past the
	// new end, before anything is sent.
	code, body, err := fetch(ts.URL, "/raw/beta")
	if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "changed in place") {
		t.Errorf("/raw/beta after the cut: got %d %q %v, want 503 saying the file changed in place", code, body, err)
	}
	// alpha's answer was worked out before: it is cut off or a 503.
	if code, _, err := fetch(ts.URL, "/raw/alpha"); err == nil && code != http.StatusServiceUnavailable {
		t.Errorf("/raw/alpha after the cut: got %d, want a 503 or a cut connection", code)
	}
	if code, _, err := fetch(ts.URL, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz after the faults: %d %v", code, err)
	}
}

// TestMirrorFileChangedInPlace checks that the watcher stops serving an
// archive whose file is written in place, answers 503 while what is there
// is not a sound archive, and serves the new file once it is.
func TestMirrorFileChangedInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mirror.cdb")
	replaceFile(t, path, exportBytes(t, " in A", "alpha"))
	var logs lockedBuffer
	m := startMirror(t, Config{Path: path, Poll: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	h := m.Handler()
	if err := wantRaw(h, "alpha", 200, "alpha in A"); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}

	// A shell's > redirect: the same inode, cut to nothing, then written.
	inPlace := func(data []byte) {
		t.Helper()
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || !os.SameFile(fi, before) {
			t.Fatalf("the file was not written in place: %v", err)
		}
	}
	inPlace([]byte("half an archive"))
	// Until the watcher sees the change, a read may fault and be cut off.
	ts := httptest.NewServer(h)
	defer ts.Close()
	waitFor(t, 2*time.Second, "503 for the file changed in place", func() error {
		if code, body, err := fetch(ts.URL, "/raw/alpha"); code != http.StatusServiceUnavailable {
			return fmt.Errorf("got %d %q %v", code, body, err)
		}
		return nil
	})
	// That 503 may have come from a fault, before the watcher looked;
	// once it has, every answer is one.
	waitFor(t, 2*time.Second, "the change logged", func() error {
		for _, want := range []string{"archive file changed in place", "not a sound archive yet; still answering 503"} {
			if !strings.Contains(logs.String(), want) {
				return fmt.Errorf("no %q logged:\n%s", want, logs.String())
			}
		}
		return nil
	})
	if strings.Contains(logs.String(), "serving the previous one") {
		t.Errorf("logged that it serves the archive it stopped serving:\n%s", logs.String())
	}
	if got := get(h, http.MethodGet, "/raw/alpha"); !strings.Contains(got.Body.String(), "changed in place") || got.Header().Get("Retry-After") == "" {
		t.Errorf("503 while changed: body %q, Retry-After %q", got.Body, got.Header().Get("Retry-After"))
	}

	inPlace(exportBytes(t, " in B", "beta"))
	waitFor(t, 2*time.Second, "B served", func() error { return wantRaw(h, "beta", 200, "beta in B") })
	if err := wantRaw(h, "alpha", 404, ""); err != nil {
		t.Error(err)
	}
}
