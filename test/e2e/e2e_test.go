package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pastenode/pastenode/internal/freeport"
)

var client = &http.Client{
	Timeout:       30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// response is an answer with its body read.
type response struct {
	code   int
	header http.Header
	body   []byte
}

// do sends a request with headers ("Key", "value" pairs) and reads the
// answer.
func do(t *testing.T, method, url string, body []byte, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

// expect fails the test unless the answer has status want.
func (r response) expect(t *testing.T, what string, want int) response {
	t.Helper()
	if r.code != want {
		t.Fatalf("%s: got status %d, want %d; body %.300q", what, r.code, want, r.body)
	}
	return r
}

// curlPost posts content the way `curl --data-binary @- URL` does and
// returns the paste's URL and delete token.
func curlPost(t *testing.T, base string, content []byte, query string) (pasteURL, token string) {
	t.Helper()
	r := do(t, http.MethodPost, base+"/"+query, content, "Content-Type", "application/x-www-form-urlencoded")
	r.expect(t, "create", http.StatusCreated)
	pasteURL = r.header.Get("Location")
	if got, want := string(r.body), pasteURL+"\n"; pasteURL == "" || got != want {
		t.Fatalf("create body: got %q, want the Location %q and a newline", got, pasteURL)
	}
	return pasteURL, r.header.Get("X-Delete-Token")
}

// get reads url as curl does (no Accept) and fails unless it is want.
func get(t *testing.T, url string, want []byte) {
	t.Helper()
	r := do(t, http.MethodGet, url, nil).expect(t, "GET "+url, http.StatusOK)
	if !bytes.Equal(r.body, want) {
		t.Fatalf("GET %s: got %q, want %q", url, r.body, want)
	}
}

// rawURL is the raw URL of the paste whose page is at u, on the node at
// base.
func rawURL(base, u string) string {
	return base + "/raw/" + strings.TrimPrefix(u, base+"/")
}

func TestHTTPContract(t *testing.T) {
	t.Parallel()
	const max = 4096
	n := startProc(t, "--max-paste-size", "4KiB")

	t.Run("curl alias", func(t *testing.T) {
		for _, content := range [][]byte{
			[]byte("hello from curl\n"),
			{0, 0xff, 0xfe, 'x', 0, '\n'},
			[]byte("<html><script>alert(1)</script>"),
			[]byte("a=1&content=2"),
			bytes.Repeat([]byte("z"), max),
		} {
			u, token := curlPost(t, n.URL, content, "")
			if !strings.HasPrefix(u, n.URL+"/") || token == "" {
				t.Fatalf("create: got URL %q token %q", u, token)
			}
			get(t, u, content)
			id := strings.TrimPrefix(u, n.URL+"/")
			r := do(t, http.MethodGet, n.URL+"/raw/"+id, nil).expect(t, "raw", http.StatusOK)
			if r.header.Get("ETag") == "" || r.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("raw headers: got %v, want an ETag and nosniff", r.header)
			}
		}
	})

	t.Run("json", func(t *testing.T) {
		r := do(t, http.MethodPost, n.URL+"/api/v1/pastes",
			[]byte(`{"content":"print(1)\n","lang":"python","title":"py","expire":"1h"}`))
		r.expect(t, "create", http.StatusCreated)
		var raw map[string]any
		if err := json.Unmarshal(r.body, &raw); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"id", "url", "raw_url", "delete_token", "expires_at", "burn", "lang", "title", "size"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("create answer has no %q: %s", k, r.body)
			}
		}
		get(t, raw["raw_url"].(string), []byte("print(1)\n"))
		m := do(t, http.MethodGet, n.URL+"/api/v1/pastes/"+raw["id"].(string), nil).expect(t, "meta", http.StatusOK)
		if !bytes.Contains(m.body, []byte(`"title": "py"`)) {
			t.Errorf("meta: got %s", m.body)
		}
	})

	t.Run("burn once", func(t *testing.T) {
		u, _ := curlPost(t, n.URL, []byte("read me once"), "?burn=true")
		html := do(t, http.MethodGet, u, nil, "Accept", "text/html").expect(t, "burn page", http.StatusOK)
		if bytes.Contains(html.body, []byte("read me once")) || !bytes.Contains(html.body, []byte(`id="reveal"`)) {
			t.Fatalf("burn page: want a reveal button and no content: %s", html.body)
		}
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			codes = map[int]int{}
		)
		// GET /{id} never consumes, whatever the Accept header: only the
		// raw URL does.
		do(t, http.MethodGet, u, nil).expect(t, "burn view for curl", http.StatusOK)
		raw := rawURL(n.URL, u)
		for range 10 {
			wg.Go(func() {
				resp, err := http.Get(raw)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK && string(b) != "read me once" {
					t.Errorf("burn read: got %q", b)
				}
				mu.Lock()
				codes[resp.StatusCode]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if codes[200] != 1 || codes[404] != 9 {
			t.Errorf("10 concurrent reads: got status counts %v, want one 200 and nine 404", codes)
		}
	})

	t.Run("delete", func(t *testing.T) {
		u, token := curlPost(t, n.URL, []byte("delete me"), "")
		do(t, http.MethodDelete, u, nil, "X-Delete-Token", "wrong").expect(t, "wrong token", http.StatusForbidden)
		do(t, http.MethodDelete, u, nil).expect(t, "no token", http.StatusForbidden)
		do(t, http.MethodDelete, u, nil, "X-Delete-Token", token).expect(t, "delete", http.StatusNoContent)
		do(t, http.MethodGet, u, nil).expect(t, "read deleted", http.StatusNotFound)
		do(t, http.MethodDelete, u, nil, "X-Delete-Token", token).expect(t, "delete again", http.StatusNotFound)
	})

	t.Run("expire", func(t *testing.T) {
		start := time.Now()
		u, _ := curlPost(t, n.URL, []byte("brief"), "?expire=1s")
		if r := do(t, http.MethodGet, u, nil); r.code != http.StatusOK && time.Since(start) < 900*time.Millisecond {
			t.Fatalf("read before expiry: got %d, want 200", r.code)
		}
		deadline := time.Now().Add(10 * time.Second)
		for do(t, http.MethodGet, u, nil).code != http.StatusNotFound {
			if time.Now().After(deadline) {
				t.Fatal("paste with expire=1s still served after 10s")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			name, path, body string
			want             int
		}{
			{"too large", "/", strings.Repeat("x", max+1), http.StatusRequestEntityTooLarge},
			{"too large json", "/api/v1/pastes", `{"content":"` + strings.Repeat("x", max+1) + `"}`, http.StatusRequestEntityTooLarge},
			{"unknown lang", "/?lang=nosuchlang", "x", http.StatusBadRequest},
			{"bad expire", "/?expire=5x", "x", http.StatusBadRequest},
			{"zero expire", "/?expire=0s", "x", http.StatusBadRequest},
			{"bad burn", "/?burn=maybe", "x", http.StatusBadRequest},
			{"empty", "/", "", http.StatusBadRequest},
			{"unknown json field", "/api/v1/pastes", `{"content":"x","nope":1}`, http.StatusBadRequest},
			{"broken json", "/api/v1/pastes", `{"content":`, http.StatusBadRequest},
			{"long title", "/?title=" + strings.Repeat("t", 201), "x", http.StatusBadRequest},
			{"method", "/raw/abc", "", http.StatusMethodNotAllowed},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				method := http.MethodPost
				if tt.want == http.StatusMethodNotAllowed {
					method = http.MethodPut
				}
				r := do(t, method, n.URL+tt.path, []byte(tt.body), "Content-Type", "application/x-www-form-urlencoded")
				r.expect(t, tt.name, tt.want)
				if line := strings.TrimSuffix(string(r.body), "\n"); line == "" || strings.Contains(line, "\n") {
					t.Errorf("reason: got %q, want one line", r.body)
				}
			})
		}
	})

	t.Run("operations", func(t *testing.T) {
		if r := do(t, http.MethodGet, n.URL+"/healthz", nil).expect(t, "healthz", http.StatusOK); strings.TrimSpace(string(r.body)) != "ok" {
			t.Errorf("healthz: got %q, want ok", r.body)
		}
		m := do(t, http.MethodGet, n.URL+"/metrics", nil).expect(t, "metrics", http.StatusOK)
		for _, want := range []string{"pastenode_http_requests_total", "pastenode_pastes "} {
			if !bytes.Contains(m.body, []byte(want)) {
				t.Errorf("metrics have no %q", want)
			}
		}
		var st struct {
			Node struct {
				ID       string `json:"id"`
				State    string `json:"state"`
				LeaderID string `json:"leader_id"`
			} `json:"node"`
		}
		s := do(t, http.MethodGet, n.URL+"/api/v1/status", nil).expect(t, "status", http.StatusOK)
		if err := json.Unmarshal(s.body, &st); err != nil {
			t.Fatal(err)
		}
		if st.Node.ID != n.id || st.Node.State != "leader" || st.Node.LeaderID != n.id {
			t.Errorf("status: got %+v, want %s leading", st.Node, n.id)
		}
	})
}

func TestPastectl(t *testing.T) {
	t.Parallel()
	n := startProc(t)

	put := pastectl(t, n.URL, []byte("from pastectl\n"), "put", "--title", "cli")
	if put.code != 0 {
		t.Fatalf("put: exit %d: %s", put.code, put.stderr)
	}
	u := strings.TrimSpace(put.stdout)
	token, ok := strings.CutPrefix(strings.TrimSpace(put.stderr), "delete token: ")
	if !strings.HasPrefix(u, n.URL+"/") || !ok || token == "" {
		t.Fatalf("put: got stdout %q stderr %q, want the URL and the delete token", put.stdout, put.stderr)
	}
	get(t, u, []byte("from pastectl\n"))
	id := strings.TrimPrefix(u, n.URL+"/")

	for _, arg := range []string{id, u} {
		if r := pastectl(t, n.URL, nil, "get", arg); r.code != 0 || r.stdout != "from pastectl\n" {
			t.Errorf("get %s: got exit %d stdout %q, want the content", arg, r.code, r.stdout)
		}
	}

	// Binary through stdin and JSON output.
	binary := []byte{0, 1, 0xff, 0xfe, '\n', 0}
	pj := pastectl(t, n.URL, binary, "-o", "json", "put", "--burn")
	var created struct {
		ID   string `json:"id"`
		Burn bool   `json:"burn"`
	}
	if err := json.Unmarshal([]byte(pj.stdout), &created); pj.code != 0 || err != nil || !created.Burn {
		t.Fatalf("put -o json --burn: exit %d, stdout %q (%v)", pj.code, pj.stdout, err)
	}
	if r := pastectl(t, n.URL, nil, "get", created.ID); r.code != 0 || r.stdout != string(binary) {
		t.Errorf("get burn: got exit %d stdout %q, want %q", r.code, r.stdout, binary)
	}
	if r := pastectl(t, n.URL, nil, "get", created.ID); r.code != 1 || !strings.Contains(r.stderr, "404") {
		t.Errorf("get burn again: got exit %d stderr %q, want 1 and a 404", r.code, r.stderr)
	}

	tests := []struct {
		name string
		args []string
		want int
		out  string // in stdout
	}{
		{"delete wrong token", []string{"delete", id, "--token", "nope"}, 1, ""},
		{"delete", []string{"delete", id, "--token", token}, 0, ""},
		{"get deleted", []string{"get", id}, 1, ""},
		{"delete again", []string{"delete", id, "--token", token}, 1, ""},
		{"status", []string{"status"}, 0, "leader: " + n.id},
		{"health", []string{"health"}, 0, ""},
		{"get without id", []string{"get"}, 2, ""},
	}
	for _, tt := range tests {
		r := pastectl(t, n.URL, nil, tt.args...)
		if r.code != tt.want || !strings.Contains(r.stdout, tt.out) {
			t.Errorf("%s: got exit %d stdout %q stderr %q, want exit %d and %q", tt.name, r.code, r.stdout, r.stderr, tt.want, tt.out)
		}
	}
	if r := pastectl(t, "http://"+freeport.Addr(t), nil, "health"); r.code != 1 {
		t.Errorf("health of a stopped node: got exit %d, want 1", r.code)
	}
}

func TestRestartKeepsPastes(t *testing.T) {
	t.Parallel()
	for _, crash := range []bool{false, true} {
		name := "SIGTERM"
		if crash {
			name = "SIGKILL"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			n := startProc(t)
			live := map[string][]byte{}
			for i, content := range [][]byte{
				[]byte("first\n"), {0, 0xff, 0}, []byte(strings.Repeat("long line ", 5000)), []byte("go code"),
			} {
				u, _ := curlPost(t, n.URL, content, fmt.Sprintf("?title=t%d", i))
				live[u] = content
			}
			burned, _ := curlPost(t, n.URL, []byte("burn"), "?burn=true")
			get(t, rawURL(n.URL, burned), []byte("burn"))
			deleted, token := curlPost(t, n.URL, []byte("deleted"), "")
			do(t, http.MethodDelete, deleted, nil, "X-Delete-Token", token).expect(t, "delete", http.StatusNoContent)

			if crash {
				n.kill()
			} else {
				n.stop()
			}
			n.restart()
			for u, content := range live {
				get(t, u, content)
			}
			for _, u := range []string{burned, deleted} {
				do(t, http.MethodGet, u, nil).expect(t, "after restart "+u, http.StatusNotFound)
			}
			n.stop()
		})
	}
}

func TestBadFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  []string
	}{
		{"max paste size", []string{"--max-paste-size", "nope"}, nil},
		{"max expire", []string{"--max-expire", "soon"}, nil},
		{"log format", []string{"--log-format", "xml"}, nil},
		{"environment twin", nil, []string{"PASTE_MAX_PASTE_SIZE=nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{
				"--data-dir", t.TempDir(), "--http-addr", freeport.Addr(t),
				"--raft-addr", freeport.Addr(t), "--gossip-addr", freeport.Addr(t),
			}, tt.args...)
			r := run(t, "pastenode", nil, tt.env, args...)
			if r.code != 2 {
				t.Fatalf("exit code: got %d, want 2; stderr %q", r.code, r.stderr)
			}
			if line, ok := strings.CutSuffix(r.stderr, "\n"); !ok || !strings.HasPrefix(line, "pastenode: ") || strings.Contains(line, "\n") {
				t.Errorf("stderr: got %q, want one line starting with \"pastenode: \"", r.stderr)
			}
		})
	}
}

func TestHTTPAddrEnvironment(t *testing.T) {
	t.Parallel()
	t.Run("environment only", func(t *testing.T) {
		t.Parallel()
		n := newProc(t)
		n.httpByEnv = true
		n.start()
		n.waitReady()
	})
	t.Run("flag wins", func(t *testing.T) {
		t.Parallel()
		envAddr := freeport.Addr(t)
		n := newProc(t)
		n.env = []string{"PASTE_HTTP_ADDR=" + envAddr}
		n.start()
		n.waitReady() // on the flag's address
		if resp, err := http.Get("http://" + envAddr + "/healthz"); err == nil {
			resp.Body.Close()
			t.Errorf("the environment's address %s answers too, want only the flag's", envAddr)
		}
	})
}
