package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/cdb"
)

func TestMain(m *testing.M) {
	// The tests set these themselves; the caller's shell must not leak in.
	os.Unsetenv("PASTE_ADDR")
	os.Unsetenv("PASTE_ADMIN_TOKEN")
	os.Unsetenv("PASTE_TOKEN")
	os.Unsetenv("PASTE_PASSWORD")
	os.Exit(m.Run())
}

// fakeNode fakes the contract's endpoints of one node over a map.
type fakeNode struct {
	adminToken string
	status     pastenode.Status
	ready      bool
	export     []byte
	exportCut  bool // promise more export bytes than are sent
	// exportTail, when set, is export in tail order, sent to a client
	// that asks for it; exportShort then sends it without its last
	// bytes, ending the answer as if it were whole.
	exportTail  []byte
	exportShort bool
	// exportBuild is how long the fake takes before the export's first
	// byte, reporting progress every exportTick meanwhile (0: silent).
	exportBuild, exportTick time.Duration
	exportStall             time.Duration // a silence in the middle of the body

	mu      sync.Mutex
	pastes  map[string][]byte
	tokens  map[string]string
	lastPut string // the query of the last create
	calls   []string
	// imports holds the query of each import the fake stored, by id;
	// importTries counts the import calls, refused ones included.
	imports     map[string]url.Values
	importTries int
}

func newFake(t *testing.T) (*fakeNode, string) {
	t.Helper()
	f := &fakeNode{pastes: map[string][]byte{}, tokens: map[string]string{}, imports: map[string]url.Values{}, ready: true}
	f.status = pastenode.Status{
		Node: pastenode.NodeStatus{ID: "n2", State: "Follower", LeaderID: "n1", Term: 3,
			CommitIndex: 42, AppliedIndex: 41, LastContactMs: 25},
		Members: []pastenode.Member{
			{ID: "n1", APIAddr: "10.0.0.1:8080", Gossip: "alive", Suffrage: "voter", Leader: true},
			{ID: "n2", APIAddr: "10.0.0.2:8080", Gossip: "alive", Suffrage: "voter"},
			{ID: "n3", APIAddr: "10.0.0.3:8080", Gossip: "suspect", Suffrage: "nonvoter"},
		},
		Store: pastenode.StoreStatus{Pastes: 12, Bytes: 3 << 20},
	}
	srv := httptest.NewServer(f.routes())
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeNode) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /{$}", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		id := fmt.Sprintf("p%d", len(f.pastes)+1)
		f.pastes[id], f.tokens[id], f.lastPut = body, "tok-"+id, r.URL.RawQuery
		f.mu.Unlock()
		url := "http://" + r.Host + "/" + id
		w.Header().Set("Location", url)
		if r.Header.Get("Accept") != "application/json" {
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintln(w, url)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(pastenode.Created{ID: id, URL: url, RawURL: "http://" + r.Host + "/raw/" + id,
			DeleteToken: "tok-" + id, Size: len(body)})
	})
	mux.HandleFunc("GET /raw/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		content, ok := f.pastes[r.PathValue("id")]
		f.mu.Unlock()
		if !ok {
			http.Error(w, "paste not found", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(content)
	})
	mux.HandleFunc("DELETE /{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		f.mu.Lock()
		defer f.mu.Unlock()
		token, ok := f.tokens[id]
		switch {
		case !ok:
			writeJSONError(w, http.StatusNotFound, "paste not found")
		case r.Header.Get("X-Delete-Token") != token && !f.isAdmin(r):
			writeJSONError(w, http.StatusForbidden, "wrong delete token")
		default:
			delete(f.pastes, id)
			delete(f.tokens, id)
			w.WriteHeader(http.StatusNoContent)
		}
	})
	mux.HandleFunc("GET /api/v1/pastes/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		f.mu.Lock()
		content, ok := f.pastes[id]
		f.mu.Unlock()
		if !ok {
			writeJSONError(w, http.StatusNotFound, "paste not found")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(pastenode.Meta{ID: id, URL: "http://" + r.Host + "/" + id, Size: len(content), Lang: "go",
			CreatedAt: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)})
	})
	mux.HandleFunc("GET /api/v1/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(f.status)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !f.ready {
			http.Error(w, "no leader", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	admin := func(name string, h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if !f.isAdmin(r) {
				writeJSONError(w, http.StatusForbidden, "admin token required")
				return
			}
			f.mu.Lock()
			f.calls = append(f.calls, name)
			f.mu.Unlock()
			h(w, r)
		}
	}
	mux.HandleFunc("POST /api/v1/cluster/join", admin("join", func(w http.ResponseWriter, r *http.Request) {
		var req pastenode.JoinRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.calls = append(f.calls, strings.Join(req.Addrs, ","))
		f.mu.Unlock()
	}))
	mux.HandleFunc("DELETE /api/v1/cluster/nodes/{id}", admin("remove", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.calls = append(f.calls, r.PathValue("id"))
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.HandleFunc("PUT /api/v1/pastes/{id}", f.importHandler(admin))
	mux.HandleFunc("POST /api/v1/snapshot", admin("snapshot", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	mux.HandleFunc("GET /api/v1/export.cdb", admin("export", func(w http.ResponseWriter, r *http.Request) {
		if !f.build(w, r) {
			return
		}
		w.Header().Set("Trailer", "X-Export-Pastes")
		body := f.export
		if f.exportTail != nil && strings.Contains(r.Header.Get("Accept"), pastenode.ExportTailType) {
			w.Header().Set("Content-Type", pastenode.ExportTailType)
			body = f.exportTail
			if f.exportShort {
				body = body[:len(body)-3*pastenode.ExportTailSize]
			}
		}
		if f.exportCut {
			w.Header().Set("Content-Length", fmt.Sprint(len(body)+100))
		}
		half := len(body) / 2
		w.Write(body[:half])
		if f.exportStall > 0 {
			http.NewResponseController(w).Flush()
			if !pause(r, f.exportStall) {
				return
			}
		}
		w.Write(body[half:])
		w.Header().Set("X-Export-Pastes", "3")
	}))
	return mux
}

// build stands for the time the server takes to build the export, with a
// 102 progress answer every exportTick. It is false when the client left.
func (f *fakeNode) build(w http.ResponseWriter, r *http.Request) bool {
	end := time.Now().Add(f.exportBuild)
	for n := 1; time.Now().Before(end); n++ {
		step := time.Until(end)
		if f.exportTick > 0 {
			step = min(step, f.exportTick)
		}
		if !pause(r, step) {
			return false
		}
		if f.exportTick > 0 {
			w.Header().Set("X-Export-Progress", fmt.Sprintf("%d/1000", n))
			w.WriteHeader(http.StatusProcessing)
		}
	}
	w.Header().Del("X-Export-Progress")
	return true
}

// pause waits for d, or less when the client goes away; it reports
// whether the client is still there.
func pause(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (f *fakeNode) isAdmin(r *http.Request) bool {
	return f.adminToken == "" || r.Header.Get("Authorization") == "Bearer "+f.adminToken
}

func writeJSONError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(pastenode.ErrorBody{Error: msg})
}

// pastectl runs the CLI in-process.
func pastectl(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// refusedAddr returns an address on which nothing listens.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}

func TestPut(t *testing.T) {
	f, url := newFake(t)
	file := filepath.Join(t.TempDir(), "main.go")
	os.WriteFile(file, []byte("package main\n"), 0o644)

	tests := []struct {
		name       string
		stdin      string
		args       []string
		wantStored string
		wantQuery  string
	}{
		{"stdin", "hello\n", []string{"put"}, "hello\n", ""},
		{"dash is stdin", "from dash", []string{"put", "-"}, "from dash", ""},
		{"file with options", "", []string{"put", file, "--lang", "go", "--expire", "1h", "--burn", "--title", "T"},
			"package main\n", "burn=true&expire=1h&lang=go&title=T"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := pastectl(t, tt.stdin, append([]string{"--addr", url}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			m := regexp.MustCompile(`^http://[^/]+/(p\d+)\n$`).FindStringSubmatch(stdout)
			if m == nil {
				t.Fatalf("stdout %q, want the URL and a newline", stdout)
			}
			id := m[1]
			if want := "delete token: tok-" + id + "\n"; stderr != want {
				t.Errorf("stderr %q, want %q", stderr, want)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if got := string(f.pastes[id]); got != tt.wantStored {
				t.Errorf("stored %q, want %q", got, tt.wantStored)
			}
			if f.lastPut != tt.wantQuery {
				t.Errorf("query %q, want %q", f.lastPut, tt.wantQuery)
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		code, stdout, stderr := pastectl(t, "x", "--addr", url, "-o", "json", "put")
		if code != 0 || stderr != "" {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		var c pastenode.Created
		if err := json.Unmarshal([]byte(stdout), &c); err != nil {
			t.Fatalf("stdout %q: %v", stdout, err)
		}
		if c.ID == "" || c.DeleteToken != "tok-"+c.ID || c.Size != 1 {
			t.Errorf("created %+v", c)
		}
	})

	t.Run("missing file", func(t *testing.T) {
		code, _, stderr := pastectl(t, "", "--addr", url, "put", filepath.Join(t.TempDir(), "nope"))
		if code != 1 || !strings.HasPrefix(stderr, "pastectl: ") {
			t.Errorf("exit %d, stderr %q; want 1 and a message", code, stderr)
		}
	})
}

func TestGetBinary(t *testing.T) {
	f, url := newFake(t)
	content := []byte{0, 1, 2, 0xff, 0xfe, '\r', '\n', 0x80, 'x'}
	f.pastes["bin"] = content

	for _, arg := range []string{"bin", url + "/bin", url + "/raw/bin#key"} {
		t.Run(arg, func(t *testing.T) {
			code, stdout, stderr := pastectl(t, "", "--addr", url, "get", arg)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if !bytes.Equal([]byte(stdout), content) {
				t.Errorf("stdout %q, want %q", stdout, content)
			}
		})
	}

	code, stdout, stderr := pastectl(t, "", "--addr", url, "get", "nope")
	if code != 1 || stdout != "" || stderr != "pastectl: 404 Not Found: paste not found\n" {
		t.Errorf("unknown id: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestDelete(t *testing.T) {
	f, url := newFake(t)
	f.adminToken = "adm"
	for _, id := range []string{"a", "b"} {
		f.pastes[id], f.tokens[id] = []byte(id), "tok-"+id
	}

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"wrong token", []string{"delete", "a", "--token", "bad"}, 1, "pastectl: 403 Forbidden: wrong delete token\n"},
		{"right token", []string{"delete", "a", "--token", "tok-a"}, 0, ""},
		{"gone", []string{"delete", "a", "--token", "tok-a"}, 1, "pastectl: 404 Not Found: paste not found\n"},
		{"no token", []string{"delete", "b"}, 2, "pastectl: delete needs --token (or --admin-token)\nRun 'pastectl delete --help' for usage.\n"},
		{"admin token", []string{"delete", "b", "--admin-token", "adm"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := pastectl(t, "", append([]string{"--addr", url}, tt.args...)...)
			if code != tt.wantCode || stderr != tt.wantStderr {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr, tt.wantCode, tt.wantStderr)
			}
		})
	}
	if len(f.pastes) != 0 {
		t.Errorf("pastes left: %v", f.pastes)
	}
}

func TestUsageErrors(t *testing.T) {
	_, url := newFake(t)
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"status", "--bogus"},
		{"get"},
		{"get", "a", "b"},
		{"put", "a", "b"},
		{"remove"},
		{"join"},
		{"status", "extra"},
		{"-o", "yaml", "status"},
		{"export"},
		{"--timeout", "soon", "status"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := pastectl(t, "", append([]string{"--addr", url}, args...)...)
			if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "pastectl: ") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and a message", code, stdout, stderr)
			}
		})
	}
}

func TestAdminCalls(t *testing.T) {
	f, url := newFake(t)
	f.adminToken = "adm"

	code, _, stderr := pastectl(t, "", "--addr", url, "snapshot")
	if code != 1 || stderr != "pastectl: 403 Forbidden: admin token required\n" {
		t.Errorf("without token: exit %d, stderr %q", code, stderr)
	}
	t.Setenv("PASTE_ADMIN_TOKEN", "adm")
	for _, args := range [][]string{{"snapshot"}, {"join", "10.0.0.9:7946", "10.0.0.8:7946"}, {"remove", "n3"}} {
		if code, _, stderr := pastectl(t, "", append([]string{"--addr", url}, args...)...); code != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
	want := "snapshot join 10.0.0.9:7946,10.0.0.8:7946 remove n3"
	if got := strings.Join(f.calls, " "); got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
	// The flag wins over the environment.
	if code, _, _ := pastectl(t, "", "--addr", url, "--admin-token", "wrong", "snapshot"); code != 1 {
		t.Errorf("--admin-token wrong: exit %d, want 1", code)
	}
}

func TestAddrFromEnv(t *testing.T) {
	url := fakeCluster(t, nil)
	refused := refusedAddr(t)

	tests := []struct {
		name     string
		env      string
		args     []string
		wantCode int
	}{
		{"env used", url, nil, 0},
		{"flag wins", refused, []string{"--addr", url}, 0},
		{"flag wins, even when wrong", url, []string{"--addr", refused}, 1},
		{"list tried in order", refused + "," + url, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PASTE_ADDR", tt.env)
			code, _, stderr := pastectl(t, "", append(tt.args, "status")...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.wantCode, stderr)
			}
		})
	}
}

func TestHealth(t *testing.T) {
	f, url := newFake(t)
	code, stdout, stderr := pastectl(t, "", "--addr", url, "health")
	if code != 0 || stdout != "" || stderr != "" {
		t.Errorf("ready: exit %d, stdout %q, stderr %q; want 0 and quiet", code, stdout, stderr)
	}
	f.ready = false
	code, _, stderr = pastectl(t, "", "--addr", url, "health")
	if code != 1 || stderr != "pastectl: 503 Service Unavailable: no leader\n" {
		t.Errorf("not ready: exit %d, stderr %q", code, stderr)
	}
}

func TestExport(t *testing.T) {
	for _, tail := range []bool{false, true} {
		t.Run(fmt.Sprintf("tail order %v", tail), func(t *testing.T) { testExport(t, tail) })
	}
}

// testExport exports from a fake node that sends the file in the usual
// order or, when tail is set, in tail order to pastectl, which asks for it.
func testExport(t *testing.T, tail bool) {
	f, url := newFake(t)
	f.export = bytes.Repeat([]byte("cdb\x00\xff"), 10000)
	if tail {
		f.export, f.exportTail = cdbFile(t)
	}
	out := filepath.Join(t.TempDir(), "pastes.cdb")

	code, stdout, stderr := pastectl(t, "", "--addr", url, "export", "--out", out)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	want := regexp.MustCompile(fmt.Sprintf(`^exported 3 pastes, %d bytes in \d+\.\d\ds to `, len(f.export)) + regexp.QuoteMeta(out) + "\n$")
	if !want.MatchString(stdout) {
		t.Errorf("stdout %q, want it to match %s", stdout, want)
	}
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, f.export) {
		t.Errorf("file: %d bytes, %v; want the export", len(got), err)
	}
	if _, err := os.Stat(out + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}

	// A broken stream, or in tail order one cut short that ends as if
	// whole, leaves the old file as it was and no temporary file.
	cuts := []string{"cut stream"}
	if tail {
		cuts = append(cuts, "short stream")
	}
	for _, cut := range cuts {
		f.exportCut, f.exportShort = cut == "cut stream", cut == "short stream"
		code, stdout, stderr = pastectl(t, "", "--addr", url, "export", "--out", out)
		if code != 1 || stdout != "" || !strings.HasPrefix(stderr, "pastectl: export: ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", cut, code, stdout, stderr)
		}
		if got, _ := os.ReadFile(out); !bytes.Equal(got, f.export) {
			t.Errorf("%s changed %s", cut, out)
		}
		if _, err := os.Stat(out + ".tmp"); !os.IsNotExist(err) {
			t.Errorf("%s: temporary file left after failure: %v", cut, err)
		}
	}
}

// cdbFile returns a CDB file and the same file in tail order.
func cdbFile(t *testing.T) (file, tailOrder []byte) {
	var b bytes.Buffer
	w := cdb.NewTailWriter(&b)
	for i := range 1000 {
		if err := w.Put(fmt.Appendf(nil, "key %d", i), bytes.Repeat([]byte{byte(i)}, 50)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tailOrder = b.Bytes()
	cut := len(tailOrder) - pastenode.ExportTailSize
	return append(slices.Clone(tailOrder[cut:]), tailOrder[:cut]...), tailOrder
}

// TestExportSlowServer shows that --timeout bounds each silence of the
// server during an export, not the whole export: a server that takes
// several timeouts to build the export but reports its progress meanwhile
// is waited for, and one that falls silent, before or during the body, is
// not.
func TestExportSlowServer(t *testing.T) {
	tests := []struct {
		name               string
		build, tick, stall time.Duration
		wantErr            string // "": success
	}{
		{"long build with progress", 1500 * time.Millisecond, 50 * time.Millisecond, 0, ""},
		{"silent build", time.Second, 0, 0, "nothing from 127.0.0.1"},
		{"silent gap in the body", 0, 0, time.Second, "nothing from 127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, url := newFake(t)
			f.export = bytes.Repeat([]byte("cdb\x00\xff"), 10000)
			f.exportBuild, f.exportTick, f.exportStall = tt.build, tt.tick, tt.stall
			out := filepath.Join(t.TempDir(), "pastes.cdb")
			start := time.Now()
			code, _, stderr := pastectl(t, "", "--addr", url, "--timeout", "300ms", "export", "--out", out)
			took := time.Since(start)
			if tt.wantErr == "" {
				if code != 0 || stderr != "" {
					t.Fatalf("exit %d, stderr %q", code, stderr)
				}
				if took < tt.build {
					t.Errorf("took %s, less than the build's %s", took, tt.build)
				}
				if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, f.export) {
					t.Errorf("file: %d bytes, %v; want the export", len(got), err)
				}
				return
			}
			if code != 1 || !strings.Contains(stderr, tt.wantErr) || !strings.Contains(stderr, "for 300ms") {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, tt.wantErr)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a failed export left %s: %v", out, err)
			}
		})
	}
}
