package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pastenode/pastenode"
)

var htmlAccept = []string{"Accept", "text/html,application/xhtml+xml,*/*;q=0.8"}

func meta(t *testing.T, base, id string) pastenode.Meta {
	t.Helper()
	r := do(t, http.MethodGet, base+"/api/v1/pastes/"+id, nil)
	r.wantStatus(t, http.StatusOK)
	var m pastenode.Meta
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestViewLangOverride(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	src := []byte("def f():\n    return 1\n")
	id, _ := create(t, tn.URL, src, "")
	keyword := []byte(`<span class="k">def</span>`)
	page := func(query string) []byte {
		r := do(t, http.MethodGet, tn.URL+"/"+id+query, nil, htmlAccept...)
		r.wantStatus(t, http.StatusOK)
		return r.body
	}
	// Twice each way, so that a cached body of one view would show in
	// the other.
	for range 2 {
		if b := page("?lang=python"); !bytes.Contains(b, keyword) || !bytes.Contains(b, []byte("<dd>Python</dd>")) {
			t.Fatalf("?lang=python: want Python highlighting, got %s", b)
		}
		if b := page(""); bytes.Contains(b, keyword) || !bytes.Contains(b, []byte("<dd>plain text</dd>")) {
			t.Fatalf("the normal view: want plain text, got %s", b)
		}
	}
	if b := page("?lang=markup"); !bytes.Contains(b, []byte("<dd>HTML</dd>")) {
		t.Errorf("?lang=markup: want the HTML lexer, got %s", b)
	}
	do(t, http.MethodGet, tn.URL+"/"+id+"?lang=nobodys", nil, htmlAccept...).wantStatus(t, http.StatusBadRequest)
	if m := meta(t, tn.URL, id); m.Lang != "" {
		t.Errorf("stored lang: got %q, want none", m.Lang)
	}
	for _, path := range []string{"/raw/" + id + "?lang=python", "/" + id + "?lang=python"} {
		r := do(t, http.MethodGet, tn.URL+path, nil)
		r.wantStatus(t, http.StatusOK)
		if !bytes.Equal(r.body, src) {
			t.Errorf("GET %s: got %q, want the stored bytes", path, r.body)
		}
	}
}

func TestDownload(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	goID, _ := create(t, tn.URL, []byte("package main\n"), "lang=go")
	txtID, _ := create(t, tn.URL, []byte("notes\n"), "")
	burnID, _ := create(t, tn.URL, []byte("once\n"), "burn=true&lang=python")
	// A HEAD says what a download would be and consumes nothing.
	head := do(t, http.MethodHead, tn.URL+"/download/"+burnID, nil)
	head.wantStatus(t, http.StatusOK)
	if ct := head.Header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("HEAD of a burn download: Content-Type %q, want application/octet-stream", ct)
	}
	// Text or not, a download is an application/octet-stream attachment,
	// as the old pastebin answered it, and a raw read of the same paste
	// stays text.
	for _, c := range []struct{ id, file, body string }{
		{goID, goID + ".go", "package main\n"},
		{txtID, txtID + ".txt", "notes\n"},
		{burnID, burnID + ".py", "once\n"},
	} {
		r := do(t, http.MethodGet, tn.URL+"/download/"+c.id, nil)
		r.wantStatus(t, http.StatusOK)
		if got, want := r.Header.Get("Content-Disposition"), `attachment; filename="`+c.file+`"`; got != want {
			t.Errorf("Content-Disposition: got %q, want %q", got, want)
		}
		if got := r.Header.Get("Content-Type"); got != "application/octet-stream" {
			t.Errorf("download %s: Content-Type %q, want application/octet-stream", c.id, got)
		}
		if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("download %s: X-Content-Type-Options %q, want nosniff", c.id, got)
		}
		if string(r.body) != c.body {
			t.Errorf("download %s: got %q, want %q", c.id, r.body, c.body)
		}
	}
	raw := readRaw(t, tn.URL, txtID, []byte("notes\n"))
	if ct := raw.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" || raw.Header.Get("Content-Disposition") != "" {
		t.Errorf("raw read after downloads: Content-Type %q, Content-Disposition %q; want text, inline", ct, raw.Header.Get("Content-Disposition"))
	}
	// A conditional download is answered as a raw read's, with the
	// download's headers.
	etag := raw.Header.Get("ETag")
	r := do(t, http.MethodGet, tn.URL+"/download/"+txtID, nil, "If-None-Match", etag)
	r.wantStatus(t, http.StatusNotModified)
	do(t, http.MethodGet, tn.URL+"/download/"+burnID, nil).wantStatus(t, http.StatusNotFound)
	do(t, http.MethodGet, tn.URL+"/raw/"+burnID, nil).wantStatus(t, http.StatusNotFound)
	do(t, http.MethodGet, tn.URL+"/download/nosuchpaste", nil).wantStatus(t, http.StatusNotFound)
}

func TestPasteyForms(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	mp, ct := multipartBody(t, map[string]string{"title": "T", "body": "from pastey"}, nil)
	r := do(t, http.MethodPost, tn.URL+"/pastes", mp, "Content-Type", ct)
	r.wantStatus(t, http.StatusSeeOther)
	id := r.Header.Get("X-Paste-Id")
	if got, want := r.Header.Get("Location"), "/pastes/"+id; id == "" || got != want {
		t.Fatalf("Location: got %q, want %q", got, want)
	}
	got := do(t, http.MethodGet, tn.URL+"/pastes/"+id, nil)
	got.wantStatus(t, http.StatusOK)
	if string(got.body) != "from pastey" || meta(t, tn.URL, id).Title != "T" {
		t.Errorf("GET /pastes/%s: got %q", id, got.body)
	}
	if p := do(t, http.MethodGet, tn.URL+"/pastes/"+id, nil, htmlAccept...); !bytes.Contains(p.body, []byte(`id="paste"`)) {
		t.Errorf("GET /pastes/ID in a browser: want the page, got %.200s", p.body)
	}
	form := do(t, http.MethodGet, tn.URL+"/pastes", nil, htmlAccept...)
	form.wantStatus(t, http.StatusOK)
	if !bytes.Contains(form.body, []byte(`id="new-paste"`)) {
		t.Errorf("GET /pastes: want the form, got %.200s", form.body)
	}

	// body= is a synonym of content= in urlencoded forms too, on POST /.
	r = do(t, http.MethodPost, tn.URL+"/", []byte("title=U&body=url+encoded"), "Content-Type", formType)
	r.wantStatus(t, http.StatusCreated)
	readRaw(t, tn.URL, r.Header.Get("X-Paste-Id"), []byte("url encoded"))
	do(t, http.MethodPost, tn.URL+"/pastes", []byte("title=x&body="), "Content-Type", formType).wantStatus(t, http.StatusBadRequest)
}

func TestNewClone(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	id, _ := create(t, tn.URL, []byte("clone <me>"), "lang=go")
	filled := func(r response) bool {
		return bytes.Contains(r.body, []byte("clone &lt;me&gt;</textarea>")) && bytes.Contains(r.body, []byte(`<option value="Go" selected>`))
	}
	// The old pastebin's Clone link is the filled form for every client,
	// whatever it accepts; pastenode's own ?clone= is for browsers.
	for _, c := range []struct{ path, accept string }{
		{"/new?id=" + id, htmlAccept[1]},
		{"/new?id=" + id, ""},
		{"/new?id=" + id, "*/*"},
		{"/new?id=" + id, "text/plain"},
		{"/?clone=" + id, htmlAccept[1]},
	} {
		r := do(t, http.MethodGet, tn.URL+c.path, nil, "Accept", c.accept)
		r.wantStatus(t, http.StatusOK)
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !filled(r) {
			t.Errorf("GET %s, Accept %q: %s; want the form filled with the paste, got %.300s", c.path, c.accept, ct, r.body)
		}
	}
	if r := do(t, http.MethodGet, tn.URL+"/?clone="+id, nil); filled(r) {
		t.Errorf("GET /?clone= from curl: want the usage line, got the form")
	}

	// An id that is not there is a 404, to a browser and to curl.
	for _, accept := range []string{htmlAccept[1], ""} {
		r := do(t, http.MethodGet, tn.URL+"/new?id=nosuchpaste", nil, "Accept", accept)
		r.wantStatus(t, http.StatusNotFound)
		if bytes.Contains(r.body, []byte(`id="new-paste"`)) {
			t.Errorf("GET /new?id=unknown, Accept %q: a 404 with the form", accept)
		}
	}
	// Without an id: the empty form.
	if r := do(t, http.MethodGet, tn.URL+"/new", nil); r.StatusCode != http.StatusOK || !bytes.Contains(r.body, []byte(`id="new-paste"`)) {
		t.Errorf("GET /new: %d; want the form", r.StatusCode)
	}
	// A burn paste's clone link shows the form without its content, and
	// leaves it unread.
	burnID, _ := create(t, tn.URL, []byte("burn <secret>"), "burn=true")
	r := do(t, http.MethodGet, tn.URL+"/new?id="+burnID, nil)
	r.wantStatus(t, http.StatusOK)
	if bytes.Contains(r.body, []byte("burn &lt;secret&gt;")) {
		t.Errorf("GET /new?id=BURN: the form shows the burn paste's content")
	}
	readRaw(t, tn.URL, burnID, []byte("burn <secret>"))
}

func TestDefaultExpire(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{DefaultExpire: time.Hour, MaxExpire: 24 * time.Hour})
	before := time.Now()
	id, _ := create(t, tn.URL, []byte("x"), "")
	checkExpiry(t, meta(t, tn.URL, id).ExpiresAt, before, time.Hour)
	id, _ = create(t, tn.URL, []byte("x"), "expire=1d")
	checkExpiry(t, meta(t, tn.URL, id).ExpiresAt, before, 24*time.Hour)

	for _, c := range []Config{
		{DefaultExpire: 2 * time.Hour, MaxExpire: time.Hour},
		{DefaultExpire: -time.Second},
		{BasePath: "paste"},
		{BasePath: "/paste/"},
	} {
		c.Store, c.UI, c.MaxPasteSize = tn.node, tn.server.cfg.UI, 1
		if _, err := NewServer(c); err == nil {
			t.Errorf("NewServer(%+v): want an error", c)
		}
	}
}

func TestBasePath(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{BasePath: "/paste"})
	base := tn.URL + "/paste"
	r := do(t, http.MethodPost, base+"/", []byte("under a prefix"), "Content-Type", formType)
	r.wantStatus(t, http.StatusCreated)
	id := r.Header.Get("X-Paste-Id")
	if got, want := r.Header.Get("Location"), base+"/"+id; got != want {
		t.Errorf("Location: got %q, want %q", got, want)
	}
	readRaw(t, base, id, []byte("under a prefix"))
	page := do(t, http.MethodGet, base+"/"+id, nil, htmlAccept...)
	page.wantStatus(t, http.StatusOK)
	for _, want := range []string{`href="/paste/raw/` + id + `"`, `href="/paste/static/app.css?v=`, `data-base="/paste"`} {
		if !strings.Contains(string(page.body), want) {
			t.Errorf("page: no %s in %s", want, page.body)
		}
	}
	mp, ct := multipartBody(t, map[string]string{"content": "form"}, nil)
	r = do(t, http.MethodPost, base+"/", mp, "Content-Type", ct, htmlAccept[0], htmlAccept[1])
	r.wantStatus(t, http.StatusSeeOther)
	if got := r.Header.Get("Location"); got != "/paste/"+r.Header.Get("X-Paste-Id") {
		t.Errorf("form redirect: got %q", got)
	}
	for _, path := range []string{"/" + id, "/raw/" + id, "/readyz", "/pastex/raw/" + id} {
		do(t, http.MethodGet, tn.URL+path, nil).wantStatus(t, http.StatusNotFound)
	}
	do(t, http.MethodGet, base, nil).wantStatus(t, http.StatusOK)
	do(t, http.MethodGet, base+"/readyz", nil).wantStatus(t, http.StatusOK)
}

func TestBasePathPublicURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ public, want string }{
		{"https://example.com", "https://example.com/paste/"},
		{"https://example.com/", "https://example.com/paste/"},
		{"https://example.com/elsewhere", "https://example.com/elsewhere/"},
	} {
		tn := startNode(t, Config{BasePath: "/paste", PublicURL: c.public})
		r := do(t, http.MethodPost, tn.URL+"/paste/", []byte("x"), "Content-Type", formType)
		r.wantStatus(t, http.StatusCreated)
		if got, want := r.Header.Get("Location"), c.want+r.Header.Get("X-Paste-Id"); got != want {
			t.Errorf("--public-url %s: Location %q, want %q", c.public, got, want)
		}
	}
}
