package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

const formType = "application/x-www-form-urlencoded"

// readRaw fetches /raw/{id} and fails unless it is exactly want.
func readRaw(t *testing.T, base, id string, want []byte) response {
	t.Helper()
	r := do(t, http.MethodGet, base+"/raw/"+id, nil)
	r.wantStatus(t, http.StatusOK)
	if !bytes.Equal(r.body, want) {
		t.Fatalf("GET /raw/%s: got %q, want %q", id, r.body, want)
	}
	return r
}

func TestBurn(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	const secret = "burn-secret-42"
	html := []string{"Accept", "text/html,application/xhtml+xml,*/*;q=0.8"}

	t.Run("peeks do not burn", func(t *testing.T) {
		id, _ := create(t, tn.URL, []byte(secret), "burn=true")
		for range 2 {
			m := do(t, http.MethodGet, tn.URL+"/api/v1/pastes/"+id, nil)
			m.wantStatus(t, http.StatusOK)
			if !bytes.Contains(m.body, []byte(`"burn": true`)) {
				t.Errorf("metadata: got %s, want burn true", m.body)
			}
			h := do(t, http.MethodHead, tn.URL+"/raw/"+id, nil)
			h.wantStatus(t, http.StatusOK)
			do(t, http.MethodHead, tn.URL+"/"+id, nil).wantStatus(t, http.StatusOK)

			p := do(t, http.MethodGet, tn.URL+"/"+id, nil, html...)
			p.wantStatus(t, http.StatusOK)
			if !bytes.Contains(p.body, []byte(`id="reveal"`)) || bytes.Contains(p.body, []byte(secret)) {
				t.Fatalf("burn page: want a reveal button and no content, got %s", p.body)
			}
		}
		readRaw(t, tn.URL, id, []byte(secret))
	})

	// Each way of reading hands the content out once; then every read is 404.
	consumers := []struct {
		name    string
		method  string
		path    string
		headers []string
	}{
		{"raw", http.MethodGet, "/raw/", nil},
		{"raw for curl", http.MethodGet, "/raw/", []string{"Accept", "*/*"}},
		{"reveal", http.MethodPost, "/reveal/", html},
	}
	for _, c := range consumers {
		t.Run(c.name, func(t *testing.T) {
			id, _ := create(t, tn.URL, []byte(secret), "burn=1")
			path := c.path + id
			if c.path == "/reveal/" {
				path = "/" + id + "/reveal"
			}
			r := do(t, c.method, tn.URL+path, nil, c.headers...)
			r.wantStatus(t, http.StatusOK)
			if !bytes.Contains(r.body, []byte(secret)) {
				t.Fatalf("first read: got %q, want the content", r.body)
			}
			do(t, c.method, tn.URL+path, nil, c.headers...).wantStatus(t, http.StatusNotFound)
			for _, p := range []string{"/raw/", "/", "/api/v1/pastes/"} {
				do(t, http.MethodGet, tn.URL+p+id, nil).wantStatus(t, http.StatusNotFound)
				do(t, http.MethodGet, tn.URL+p+id, nil, html...).wantStatus(t, http.StatusNotFound)
			}
			do(t, http.MethodPost, tn.URL+"/"+id+"/reveal", nil, html...).wantStatus(t, http.StatusNotFound)
		})
	}

	t.Run("concurrent readers", func(t *testing.T) {
		id, _ := create(t, tn.URL, []byte(secret), "burn=true")
		const readers = 20
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			codes = make([]int, readers)
			ok    = make([]bool, readers)
		)
		for i := range readers {
			wg.Go(func() {
				<-start
				resp, err := http.Get(tn.URL + "/raw/" + id)
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				var buf bytes.Buffer
				buf.ReadFrom(resp.Body)
				codes[i], ok[i] = resp.StatusCode, buf.String() == secret
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		for i, code := range codes {
			switch {
			case code == http.StatusOK && ok[i]:
				winners++
			case code != http.StatusNotFound:
				t.Errorf("reader %d: got status %d (content ok %v), want 200 with the content or 404", i, code, ok[i])
			}
		}
		if winners != 1 {
			t.Errorf("readers that got the content: got %d, want 1 (codes %v)", winners, codes)
		}
	})
}

func TestDelete(t *testing.T) {
	t.Parallel()
	const admin = "admin-secret"
	tn := startNode(t, Config{AdminToken: admin})
	tests := []struct {
		name     string
		query    func(token string) string
		headers  func(token string) []string
		want     int
		wantRead int
	}{
		{"token header", nil, func(tok string) []string { return []string{"X-Delete-Token", tok} }, 204, 404},
		{"token query", func(tok string) string { return "?token=" + url.QueryEscape(tok) }, nil, 204, 404},
		{"wrong token", nil, func(string) []string { return []string{"X-Delete-Token", "nope"} }, 403, 200},
		{"missing token", nil, nil, 403, 200},
		{"admin token", nil, func(string) []string { return []string{"Authorization", "Bearer " + admin} }, 204, 404},
		{"wrong admin token", nil, func(string) []string { return []string{"Authorization", "Bearer nope"} }, 403, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content := []byte("delete me: " + tt.name)
			id, token := create(t, tn.URL, content, "")
			u := tn.URL + "/" + id
			if tt.query != nil {
				u += tt.query(token)
			}
			var headers []string
			if tt.headers != nil {
				headers = tt.headers(token)
			}
			r := do(t, http.MethodDelete, u, nil, headers...)
			r.wantStatus(t, tt.want)
			if tt.want != http.StatusNoContent {
				r.wantReason(t, false)
			}
			g := do(t, http.MethodGet, tn.URL+"/raw/"+id, nil)
			g.wantStatus(t, tt.wantRead)
			if tt.wantRead == http.StatusNotFound {
				// Deleting again finds nothing.
				do(t, http.MethodDelete, u, nil, headers...).wantStatus(t, http.StatusNotFound)
			}
		})
	}
	t.Run("unknown id", func(t *testing.T) {
		r := do(t, http.MethodDelete, tn.URL+"/nosuchpaste", nil, "X-Delete-Token", "whatever")
		r.wantStatus(t, http.StatusNotFound)
		r.wantReason(t, false)
	})
}

func TestNotFoundAndMethods(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	tests := []struct {
		method string
		path   string
		accept string
		want   int
	}{
		{http.MethodPut, "/raw/x", "", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/raw/x", "", http.StatusMethodNotAllowed},
		{http.MethodPut, "/", "", http.StatusMethodNotAllowed},
		{http.MethodPatch, "/x", "", http.StatusMethodNotAllowed},
		{http.MethodPut, "/raw/x", "application/json", http.StatusMethodNotAllowed},
		{http.MethodGet, "/raw/nosuchpaste", "", http.StatusNotFound},
		{http.MethodGet, "/nosuchpaste", "", http.StatusNotFound},
		{http.MethodGet, "/api/v1/pastes/nosuchpaste", "", http.StatusNotFound},
		{http.MethodGet, "/a/b/c", "", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path+" "+tt.accept, func(t *testing.T) {
			r := do(t, tt.method, tn.URL+tt.path, nil, "Accept", tt.accept)
			r.wantStatus(t, tt.want)
			r.wantReason(t, tt.accept == "application/json" || strings.HasPrefix(tt.path, "/api/"))
		})
	}
	r := do(t, http.MethodGet, tn.URL+"/nosuchpaste", nil, "Accept", "text/html")
	r.wantStatus(t, http.StatusNotFound)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("404 page for a browser: got Content-Type %q, want text/html", ct)
	}
}

func TestViewPage(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	id, _ := create(t, tn.URL, []byte("plain words here"), "title=Hello")
	r := do(t, http.MethodGet, tn.URL+"/"+id, nil, "Accept", "text/html")
	r.wantStatus(t, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type: got %q, want text/html", ct)
	}
	for _, want := range []string{`id="paste"`, "plain words here", "Hello"} {
		if !bytes.Contains(r.body, []byte(want)) {
			t.Errorf("page has no %q", want)
		}
	}
	if r.Header.Get("Content-Security-Policy") == "" {
		t.Error("page has no Content-Security-Policy")
	}
}

// TestLang: the form's guess of a file's language by its name.
func TestLang(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	for query, want := range map[string]string{"file=main.go": "Go", "file=notes.txt": "", "": "", "file=a%20b.py": "Python"} {
		r := do(t, http.MethodGet, tn.URL+"/api/v1/lang?"+query, nil)
		r.wantStatus(t, http.StatusOK)
		var got struct{ Lang *string }
		if err := json.Unmarshal(r.body, &got); err != nil || got.Lang == nil || *got.Lang != want {
			t.Errorf("GET /api/v1/lang?%s: %s (%v), want lang %q", query, r.body, err, want)
		}
	}
	do(t, http.MethodPost, tn.URL+"/api/v1/lang?file=main.go", nil).wantStatus(t, http.StatusMethodNotAllowed)
}
