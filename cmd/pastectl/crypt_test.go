package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/pastenode/pastenode"
)

// recorder is a node that keeps pastes with their create query and
// records every request, to check what pastectl sends.
type recorder struct {
	mu       sync.Mutex
	pastes   map[string][]byte
	queries  map[string]string
	bodies   []string
	requests []string // "METHOD path?query token"
}

func newRecorder(t *testing.T) (*recorder, string) {
	t.Helper()
	rec := &recorder{pastes: map[string][]byte{}, queries: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(rec.serve))
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

func (rec *recorder) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.requests = append(rec.requests, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("X-Paste-Token"))
	rec.bodies = append(rec.bodies, string(body))
	id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	switch {
	case r.Method == http.MethodPost:
		id = fmt.Sprintf("p%d", len(rec.pastes)+1)
		rec.pastes[id], rec.queries[id] = body, r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(pastenode.Created{ID: id, URL: "http://" + r.Host + "/" + id, DeleteToken: "dt"})
	case rec.pastes[id] == nil:
		http.Error(w, "paste not found", http.StatusNotFound)
	case strings.HasPrefix(r.URL.Path, "/api/v1/pastes/"):
		q := rec.queries[id]
		json.NewEncoder(w).Encode(pastenode.Meta{ID: id, Burn: strings.Contains(q, "burn=true"),
			Encrypted: strings.Contains(q, "encrypted=true")})
	case r.URL.Query().Get("fmt") != "":
		fmt.Fprintf(w, "\x1b[1m%s\x1b[0m", rec.pastes[id])
	default:
		w.Write(rec.pastes[id])
		if strings.Contains(rec.queries[id], "burn=true") {
			delete(rec.pastes, id)
		}
	}
}

func (rec *recorder) seen(s string) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i := range rec.requests {
		if strings.Contains(rec.requests[i], s) || strings.Contains(rec.bodies[i], s) {
			return true
		}
	}
	return false
}

func TestEncryptRoundTrip(t *testing.T) {
	rec, url := newRecorder(t)
	const secretText = "the launch code is 0000\n"

	code, out, errOut := pastectl(t, secretText, "--addr", url, "put", "--encrypt", "--burn")
	if code != 0 {
		t.Fatalf("put --encrypt: exit %d: %s", code, errOut)
	}
	link := strings.TrimSpace(out)
	base, key, ok := strings.Cut(link, "#")
	if !ok || len(key) != 43 {
		t.Fatalf("put --encrypt printed %q, want URL#KEY", out)
	}
	if rec.seen("launch code") || rec.seen(key) {
		t.Fatal("the server saw the plaintext or the key")
	}
	if q := rec.queries["p1"]; !strings.Contains(q, "encrypted=true") || !strings.Contains(q, "burn=true") {
		t.Errorf("create query %q, want encrypted=true and burn=true", q)
	}

	// Wrong key: exit 1, nothing on stdout. The fake does not burn on a
	// failed decryption's read, so make a second paste for it.
	pastectl(t, "other", "--addr", url, "put", "--encrypt")
	code, out, errOut = pastectl(t, "", "--addr", url, "get", url+"/p2#AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	if code != 1 || out != "" || !strings.Contains(errOut, "wrong key or password") {
		t.Errorf("get with a wrong key: exit %d, stdout %q, stderr %q; want 1, nothing, the reason", code, out, errOut)
	}

	code, out, errOut = pastectl(t, "", "--addr", url, "get", "--color=always", link)
	if code != 0 || out != secretText {
		t.Fatalf("get URL#KEY: exit %d, %q (%s); want the plaintext", code, out, errOut)
	}
	// Burn + encrypt: read once.
	if code, _, _ := pastectl(t, "", "--addr", url, "get", base+"#"+key); code != 1 {
		t.Errorf("second get of a burn paste: exit %d, want 1", code)
	}
}

func TestEncryptPassword(t *testing.T) {
	rec, url := newRecorder(t)
	t.Setenv("PASTE_PASSWORD", "hunter2-hunter2")
	code, out, errOut := pastectl(t, "by password\n", "--addr", url, "put")
	if code != 0 || strings.Contains(out, "#") {
		t.Fatalf("put with PASTE_PASSWORD: exit %d, %q (%s); want a URL without a key", code, out, errOut)
	}
	if rec.seen("by password") || rec.seen("hunter2") || !strings.HasPrefix(string(rec.pastes["p1"]), "pn1.p.600000.") {
		t.Fatalf("the server got %q: want only pn1.p ciphertext", rec.pastes["p1"])
	}
	code, out, _ = pastectl(t, "", "--addr", url, "get", strings.TrimSpace(out))
	if code != 0 || out != "by password\n" {
		t.Errorf("get with PASTE_PASSWORD: exit %d, %q", code, out)
	}
	code, out, errOut = pastectl(t, "", "--addr", url, "get", "--password=wrong", "p1")
	if code != 1 || out != "" || !strings.Contains(errOut, "wrong key or password") {
		t.Errorf("get --password=wrong: exit %d, %q, %q", code, out, errOut)
	}
}

func TestGetColor(t *testing.T) {
	rec, url := newRecorder(t)
	pastectl(t, "package main\n", "--addr", url, "put", "--lang", "go")
	pastectl(t, "burn me\n", "--addr", url, "put", "--burn")

	tests := []struct {
		args      []string
		want      string
		wantQuery string // the read's query; "" for a raw read
	}{
		{[]string{"get", "p1"}, "package main\n", ""}, // auto: a buffer is no terminal
		{[]string{"get", "--color=never", "p1"}, "package main\n", ""},
		{[]string{"get", "--color=always", "p1"}, "\x1b[1mpackage main\n\x1b[0m", "/p1?fmt=ansi "},
		{[]string{"get", "--color=always", "--lang=c", "p1"}, "\x1b[1mpackage main\n\x1b[0m", "/p1?fmt=ansi&lang=c"},
		{[]string{"get", "--color=always", "p2"}, "burn me\n", ""},
	}
	for _, tt := range tests {
		code, out, errOut := pastectl(t, "", append([]string{"--addr", url}, tt.args...)...)
		if code != 0 || out != tt.want {
			t.Errorf("%v: exit %d, %q (%s); want %q", tt.args, code, out, errOut, tt.want)
		}
		if tt.wantQuery != "" && !rec.seen(tt.wantQuery) {
			t.Errorf("%v: no request %q in %q", tt.args, tt.wantQuery, rec.requests)
		}
	}
	if rec.seen("/p2?fmt") {
		t.Error("a burn paste was asked for highlighted")
	}
	if code, _, _ := pastectl(t, "", "--addr", url, "get", "--color=sometimes", "p1"); code != 2 {
		t.Errorf("--color=sometimes: exit %d, want 2", code)
	}
}

func TestPutToken(t *testing.T) {
	rec, url := newRecorder(t)
	pastectl(t, "a", "--addr", url, "put", "--token", "flag-token")
	t.Setenv("PASTE_TOKEN", "env-token")
	pastectl(t, "b", "--addr", url, "put")
	if !rec.seen("POST / flag-token") || !rec.seen("POST / env-token") {
		t.Errorf("requests %q: want X-Paste-Token from --token and PASTE_TOKEN", rec.requests)
	}
}

func TestGetPlainWithPasswordEnvAndAnchors(t *testing.T) {
	_, url := newRecorder(t)
	pastectl(t, "plain text\n", "--addr", url, "put")
	pastectl(t, "sealed\n", "--addr", url, "put", "--encrypt")

	// A line anchor on a plain paste is no key.
	if code, out, errOut := pastectl(t, "", "--addr", url, "get", url+"/p1#L1"); code != 0 || out != "plain text\n" {
		t.Errorf("get URL#L1 of a plain paste: exit %d, %q (%s)", code, out, errOut)
	}
	// PASTE_PASSWORD applies only to password pastes.
	t.Setenv("PASTE_PASSWORD", "for password pastes only")
	if code, out, errOut := pastectl(t, "", "--addr", url, "get", "p1"); code != 0 || out != "plain text\n" {
		t.Errorf("get of a plain paste with PASTE_PASSWORD: exit %d, %q (%s)", code, out, errOut)
	}
	// An encrypted paste without its key is printed as stored, with a note.
	code, out, errOut := pastectl(t, "", "--addr", url, "get", "p2")
	if code != 0 || !strings.HasPrefix(out, "pn1.k.") || !strings.Contains(errOut, "encrypted") {
		t.Errorf("get of an encrypted paste without a key: exit %d, %q, %q", code, out, errOut)
	}
	// An explicit --password must open the paste.
	if code, out, _ := pastectl(t, "", "--addr", url, "get", "--password=x", "p1"); code != 1 || out != "" {
		t.Errorf("get --password of a plain paste: exit %d, %q; want 1 and nothing", code, out)
	}
}
