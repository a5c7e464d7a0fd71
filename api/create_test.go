package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/ui"
)

// multipartBody builds a multipart form with the given fields and, if
// file is not nil, a file in the field "file".
func multipartBody(t *testing.T, fields map[string]string, file []byte) (body []byte, contentType string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := mw.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if file != nil {
		fw, err := mw.CreateFormFile("file", "paste.bin")
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(file)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), mw.FormDataContentType()
}

func TestCreateRaw(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	tests := []struct {
		name    string
		content []byte
		ctype   string
	}{
		{"text", []byte("hello, world\nline two\n"), "text/plain; charset=utf-8"},
		{"binary", []byte{0x00, 0xff, 'a', 0x00, 0xfe, 0x80, '\n'}, "application/octet-stream"},
		{"html stays text", []byte("<!doctype html><script>alert(1)</script>"), "text/plain; charset=utf-8"},
		{"content= but extra field", []byte("x=1&content=2"), "text/plain; charset=utf-8"},
		{"content= in prose", []byte("set content=utf8 in the config\nthen run & go\n"), "text/plain; charset=utf-8"},
		{"content= with bad escape", []byte("content=%zz"), "text/plain; charset=utf-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// What curl --data-binary @- sends.
			r := do(t, http.MethodPost, tn.URL+"/", tt.content, "Content-Type", formType)
			r.wantStatus(t, http.StatusCreated)
			id, loc := r.Header.Get("X-Paste-Id"), r.Header.Get("Location")
			if want := tn.URL + "/" + id; id == "" || loc != want {
				t.Fatalf("Location: got %q, want %q (id %q)", loc, want, id)
			}
			if got, want := string(r.body), loc+"\n"; got != want {
				t.Errorf("create body: got %q, want %q", got, want)
			}
			if r.Header.Get("X-Delete-Token") == "" {
				t.Error("no X-Delete-Token")
			}

			for _, u := range []string{loc, tn.URL + "/raw/" + id} {
				g := do(t, http.MethodGet, u, nil)
				g.wantStatus(t, http.StatusOK)
				if !bytes.Equal(g.body, tt.content) {
					t.Errorf("GET %s: got %q, want %q", u, g.body, tt.content)
				}
				if got := g.Header.Get("Content-Type"); got != tt.ctype {
					t.Errorf("GET %s Content-Type: got %q, want %q", u, got, tt.ctype)
				}
				if got := g.Header.Get("X-Content-Type-Options"); got != "nosniff" {
					t.Errorf("GET %s X-Content-Type-Options: got %q, want nosniff", u, got)
				}
				etag := g.Header.Get("ETag")
				if etag == "" {
					t.Fatalf("GET %s: no ETag", u)
				}
				do(t, http.MethodGet, u, nil, "If-None-Match", etag).wantStatus(t, http.StatusNotModified)

				h := do(t, http.MethodHead, u, nil)
				h.wantStatus(t, http.StatusOK)
				if len(h.body) != 0 || h.ContentLength != int64(len(tt.content)) {
					t.Errorf("HEAD %s: got %d body bytes and Content-Length %d, want 0 and %d",
						u, len(h.body), h.ContentLength, len(tt.content))
				}
			}
		})
	}
}

func TestCreateForms(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	goLang, _ := ui.LookupLang("go")
	binary := []byte{0, 1, 2, 0xff, 0xfe, '\n'}
	mpContent, mpContentType := multipartBody(t, map[string]string{"content": "multi part", "lang": "go", "title": "T"}, nil)
	mpFile, mpFileType := multipartBody(t, map[string]string{"title": "F"}, binary)
	tests := []struct {
		name      string
		body      []byte
		ctype     string
		accept    string
		wantCode  int
		want      []byte
		wantLang  string
		wantTitle string
	}{
		{"urlencoded", []byte("content=hello+form%0A&lang=go&title=T"), formType, "", 201, []byte("hello form\n"), goLang, "T"},
		{"multipart content", mpContent, mpContentType, "", 201, []byte("multi part"), goLang, "T"},
		{"multipart file", mpFile, mpFileType, "", 201, binary, "", "F"},
		{"browser urlencoded", []byte("content=from+a+browser&title=&expire=never"), formType, "text/html,*/*;q=0.8", 303, []byte("from a browser"), "", ""},
		{"browser multipart", mpContent, mpContentType, "text/html", 303, []byte("multi part"), goLang, "T"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, http.MethodPost, tn.URL+"/", tt.body, "Content-Type", tt.ctype, "Accept", tt.accept)
			r.wantStatus(t, tt.wantCode)
			id := r.Header.Get("X-Paste-Id")
			if tt.wantCode == http.StatusSeeOther {
				if got, want := r.Header.Get("Location"), "/"+id; id == "" || got != want {
					t.Fatalf("redirect Location: got %q, want %q", got, want)
				}
			}
			readRaw(t, tn.URL, id, tt.want)
			var m pastenode.Meta
			if err := json.Unmarshal(do(t, http.MethodGet, tn.URL+"/api/v1/pastes/"+id, nil).body, &m); err != nil {
				t.Fatal(err)
			}
			if m.Lang != tt.wantLang || m.Title != tt.wantTitle {
				t.Errorf("meta: got lang %q title %q, want %q and %q", m.Lang, m.Title, tt.wantLang, tt.wantTitle)
			}
		})
	}
}

func TestCreateJSON(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	goLang, _ := ui.LookupLang("go")
	fields := []string{"id", "url", "raw_url", "delete_token", "expires_at", "burn", "lang", "title", "size"}

	check := func(t *testing.T, r response) pastenode.Created {
		t.Helper()
		r.wantStatus(t, http.StatusCreated)
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("Content-Type: got %q, want application/json", ct)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(r.body, &raw); err != nil {
			t.Fatalf("answer %q: %v", r.body, err)
		}
		for _, f := range fields {
			if _, ok := raw[f]; !ok {
				t.Errorf("answer has no %q: %s", f, r.body)
			}
		}
		var c pastenode.Created
		json.Unmarshal(r.body, &c)
		if c.URL != tn.URL+"/"+c.ID || c.RawURL != tn.URL+"/raw/"+c.ID || c.DeleteToken == "" {
			t.Errorf("answer: got url %q raw_url %q token %q for id %q", c.URL, c.RawURL, c.DeleteToken, c.ID)
		}
		if got := r.Header.Get("Location"); got != c.URL {
			t.Errorf("Location: got %q, want %q", got, c.URL)
		}
		return c
	}

	t.Run("api", func(t *testing.T) {
		body := `{"content":"package main\n","title":"My title","lang":"go","expire":"1h","burn":false}`
		before := time.Now()
		c := check(t, do(t, http.MethodPost, tn.URL+"/api/v1/pastes", []byte(body)))
		if c.Lang != goLang || c.Title != "My title" || c.Size != len("package main\n") || c.Burn {
			t.Errorf("answer: got %+v", c)
		}
		if c.ExpiresAt == nil || c.ExpiresAt.Before(before.Add(time.Hour-time.Second)) || c.ExpiresAt.After(time.Now().Add(time.Hour)) {
			t.Errorf("expires_at: got %v, want about an hour from %v", c.ExpiresAt, before)
		}
		readRaw(t, tn.URL, c.ID, []byte("package main\n"))

		m := do(t, http.MethodGet, tn.URL+"/api/v1/pastes/"+c.ID, nil)
		m.wantStatus(t, http.StatusOK)
		if bytes.Contains(m.body, []byte("package main")) || bytes.Contains(m.body, []byte(`"content"`)) {
			t.Errorf("metadata carries the content: %s", m.body)
		}
		do(t, http.MethodHead, tn.URL+"/api/v1/pastes/"+c.ID, nil).wantStatus(t, http.StatusOK)
	})
	t.Run("accept json on POST /", func(t *testing.T) {
		r := do(t, http.MethodPost, tn.URL+"/?burn=true", []byte("raw body"), "Content-Type", formType, "Accept", "application/json")
		c := check(t, r)
		if !c.Burn || c.ExpiresAt != nil || c.Size != len("raw body") {
			t.Errorf("answer: got %+v, want burn, no expiry, size 8", c)
		}
		if !bytes.Contains(r.body, []byte(`"expires_at": null`)) {
			t.Errorf("expires_at: got %s, want null", r.body)
		}
	})
}

func TestCreateBadRequest(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	long := strings.Repeat("é", 201)
	tests := []struct {
		name    string
		path    string // with query
		body    string
		headers []string
	}{
		{"unknown lang", "/?lang=nosuchlang", "x", nil},
		{"expire 5x", "/?expire=5x", "x", nil},
		{"expire 0s", "/?expire=0s", "x", nil},
		{"expire header", "/", "x", []string{"X-Paste-Expire", "5x"}},
		{"bad ttl", "/?ttl=soon", "x", nil},
		{"bad burn", "/?burn=maybe", "x", nil},
		{"bad burn header", "/", "x", []string{"X-Paste-Burn", "perhaps"}},
		{"long title", "/?title=" + url.QueryEscape(long), "x", nil},
		{"long title form", "/", "content=x&title=" + url.QueryEscape(long), nil},
		{"empty body", "/", "", nil},
		{"empty form content", "/", "content=", nil},
		{"json client", "/?lang=nosuchlang", "x", []string{"Accept", "application/json"}},
		{"api unknown lang", "/api/v1/pastes", `{"content":"x","lang":"nosuchlang"}`, nil},
		{"api bad expire", "/api/v1/pastes", `{"content":"x","expire":"5x"}`, nil},
		{"api expire 0s", "/api/v1/pastes", `{"content":"x","expire":"0s"}`, nil},
		{"api bad burn", "/api/v1/pastes", `{"content":"x","burn":"maybe"}`, nil},
		{"api broken json", "/api/v1/pastes", `{"content": "x"`, nil},
		{"api unknown field", "/api/v1/pastes", `{"content":"x","colour":"red"}`, nil},
		{"api long title", "/api/v1/pastes", `{"content":"x","title":"` + long + `"}`, nil},
		{"api empty content", "/api/v1/pastes", `{"content":""}`, nil},
		{"api empty body", "/api/v1/pastes", ``, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			headers := append([]string{"Content-Type", formType}, tt.headers...)
			r := do(t, http.MethodPost, tn.URL+tt.path, []byte(tt.body), headers...)
			r.wantStatus(t, http.StatusBadRequest)
			asJSON := strings.HasPrefix(tt.path, "/api/") || r.Request.Header.Get("Accept") == "application/json"
			t.Logf("reason: %s", r.wantReason(t, asJSON))
		})
	}
	if n, _ := tn.node.Stats(); n != 0 {
		t.Errorf("store after bad requests: got %d pastes, want 0", n)
	}
	// The limit counts characters, not bytes.
	id, _ := create(t, tn.URL, []byte("x"), "title="+url.QueryEscape(long[len("é"):]))
	readRaw(t, tn.URL, id, []byte("x"))
}

func TestTooLarge(t *testing.T) {
	t.Parallel()
	const max = 1024
	tn := startNode(t, Config{MaxPasteSize: max})
	over := bytes.Repeat([]byte("a"), max+1)
	mpFile, mpFileType := multipartBody(t, nil, over)
	mpField, mpFieldType := multipartBody(t, map[string]string{"content": string(over)}, nil)
	// Past the framing's allowance too: cut off while it is read.
	mpHuge, mpHugeType := multipartBody(t, nil, bytes.Repeat([]byte("a"), max+formOverhead+1))
	jsonOver, _ := json.Marshal(pastenode.CreateRequest{Content: string(over)})
	jsonHuge, _ := json.Marshal(pastenode.CreateRequest{Content: strings.Repeat("a", 200<<10)})
	tests := []struct {
		name  string
		path  string
		body  []byte
		ctype string
		want  int
	}{
		{"raw at the limit", "/", over[:max], formType, http.StatusCreated},
		{"raw", "/", over, formType, http.StatusRequestEntityTooLarge},
		{"raw octet-stream", "/", over, "application/octet-stream", http.StatusRequestEntityTooLarge},
		{"urlencoded form", "/", append([]byte("content="), over...), formType, http.StatusRequestEntityTooLarge},
		{"multipart file", "/", mpFile, mpFileType, http.StatusRequestEntityTooLarge},
		{"multipart field", "/", mpField, mpFieldType, http.StatusRequestEntityTooLarge},
		{"multipart huge", "/", mpHuge, mpHugeType, http.StatusRequestEntityTooLarge},
		{"json content", "/api/v1/pastes", jsonOver, "application/json", http.StatusRequestEntityTooLarge},
		{"json body", "/api/v1/pastes", jsonHuge, "application/json", http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, http.MethodPost, tn.URL+tt.path, tt.body, "Content-Type", tt.ctype)
			r.wantStatus(t, tt.want)
			if tt.want != http.StatusCreated {
				// One limit, named the same on every route, whatever
				// the body's framing was allowed on the wire.
				want := "paste is larger than the limit of 1024 bytes"
				if got := r.wantReason(t, strings.HasPrefix(tt.path, "/api/")); got != want {
					t.Errorf("reason: got %q, want %q", got, want)
				}
			}
		})
	}
}

func TestExpire(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})

	t.Run("1s disappears", func(t *testing.T) {
		// The paste must be readable before its expiry; on a machine slow
		// enough to read only after it, try again with a new paste.
		var c pastenode.Created
		for attempt := 0; ; attempt++ {
			c = createJSON(t, tn.URL, pastenode.CreateRequest{Content: "short-lived", Expire: "1s"})
			start := time.Now()
			r := do(t, http.MethodGet, tn.URL+"/raw/"+c.ID, nil)
			if r.StatusCode == http.StatusOK {
				break
			}
			if start.Before(*c.ExpiresAt) || attempt == 2 {
				t.Fatalf("read before expiry at %v: got status %d, want 200", c.ExpiresAt, r.StatusCode)
			}
		}
		waitFor(t, 10*time.Second, "expired paste is gone", func() error {
			if r := do(t, http.MethodGet, tn.URL+"/raw/"+c.ID, nil); r.StatusCode != http.StatusNotFound {
				return fmt.Errorf("got status %d", r.StatusCode)
			}
			return nil
		})
		do(t, http.MethodGet, tn.URL+"/api/v1/pastes/"+c.ID, nil).wantStatus(t, http.StatusNotFound)
		// The leader's reaper deletes it through the log.
		waitFor(t, 10*time.Second, "expired paste removed from the store", func() error {
			if n, _ := tn.node.Stats(); n != 0 {
				return fmt.Errorf("%d pastes left", n)
			}
			return nil
		})
	})

	tests := []struct {
		name  string
		query string
		want  time.Duration // 0: never
	}{
		{"ttl 60", "ttl=60", time.Minute},
		{"ttl 0 is never", "ttl=0", 0},
		{"expire 1d", "expire=1d", 24 * time.Hour},
		{"expire 1w", "expire=1w", 7 * 24 * time.Hour},
		{"expire wins over ttl", "expire=10m&ttl=60", 10 * time.Minute},
		{"never", "expire=never", 0},
		{"default", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			r := do(t, http.MethodPost, tn.URL+"/?"+tt.query, []byte("x"), "Accept", "application/json")
			r.wantStatus(t, http.StatusCreated)
			var c pastenode.Created
			if err := json.Unmarshal(r.body, &c); err != nil {
				t.Fatal(err)
			}
			checkExpiry(t, c.ExpiresAt, before, tt.want)
		})
	}
}

// checkExpiry fails unless got is want after a create sent at before
// (nil for want 0), within the time the create took.
func checkExpiry(t *testing.T, got *time.Time, before time.Time, want time.Duration) {
	t.Helper()
	switch {
	case want == 0 && got != nil:
		t.Errorf("expires_at: got %v, want null", got)
	case want == 0:
	case got == nil:
		t.Errorf("expires_at: got null, want %s from now", want)
	case got.Before(before.Add(want).Truncate(time.Second)) || got.After(time.Now().Add(want)):
		t.Errorf("expires_at: got %v, want %s after %v", got, want, before)
	}
}

func TestMaxExpire(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{MaxExpire: time.Hour})
	tests := []struct {
		name  string
		query string
		want  int
		after time.Duration
	}{
		{"never", "expire=never", http.StatusBadRequest, 0},
		{"ttl 0", "ttl=0", http.StatusBadRequest, 0},
		{"too long", "expire=2h", http.StatusBadRequest, 0},
		{"too long days", "expire=1d", http.StatusBadRequest, 0},
		{"ttl too long", "ttl=3601", http.StatusBadRequest, 0},
		{"the longest", "expire=1h", http.StatusCreated, time.Hour},
		{"shorter", "expire=10m", http.StatusCreated, 10 * time.Minute},
		{"default is the longest", "", http.StatusCreated, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			r := do(t, http.MethodPost, tn.URL+"/?"+tt.query, []byte("x"), "Content-Type", formType, "Accept", "application/json")
			r.wantStatus(t, tt.want)
			if tt.want != http.StatusCreated {
				r.wantReason(t, true)
				return
			}
			var c pastenode.Created
			json.Unmarshal(r.body, &c)
			checkExpiry(t, c.ExpiresAt, before, tt.after)
		})
	}
	r := do(t, http.MethodPost, tn.URL+"/api/v1/pastes", []byte(`{"content":"x","expire":"never"}`))
	r.wantStatus(t, http.StatusBadRequest)
	r.wantReason(t, true)
}
