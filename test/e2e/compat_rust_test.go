package e2e

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"
)

// This file replays, against the real binary, what users of the old Rust
// pastebin (mkaczanowski/pastebin) did: its documented requests, its UI's
// links and language names, and its server flags.

// browserAccept is the Accept header of a browser's page load.
var browserAccept = []string{"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}

// metaOf reads a paste's metadata.
func metaOf(t *testing.T, base, id string) map[string]any {
	t.Helper()
	r := do(t, http.MethodGet, base+"/api/v1/pastes/"+id, nil).expect(t, "metadata of "+id, http.StatusOK)
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("metadata %s: %v", r.body, err)
	}
	return m
}

// idOf is the id at the end of a paste URL.
func idOf(url string) string { return url[strings.LastIndex(url, "/")+1:] }

// multipartForm encodes fields as curl -F does.
func multipartForm(t *testing.T, fields ...string) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), w.FormDataContentType()
}

func TestRustPastebinRoutes(t *testing.T) {
	p := startProc(t)

	t.Run("download", func(t *testing.T) {
		// The old UI's Download link: GET /download/ID.
		goURL, _ := curlPost(t, p.URL, []byte("package main\n"), "?lang=go")
		txtURL, _ := curlPost(t, p.URL, []byte("plain notes\n"), "")
		for _, c := range []struct{ url, file, body string }{
			{goURL, idOf(goURL) + ".go", "package main\n"},
			{txtURL, idOf(txtURL) + ".txt", "plain notes\n"},
		} {
			r := do(t, http.MethodGet, p.URL+"/download/"+idOf(c.url), nil).expect(t, "download", http.StatusOK)
			if got, want := r.header.Get("Content-Disposition"), `attachment; filename="`+c.file+`"`; got != want {
				t.Errorf("Content-Disposition: got %q, want %q", got, want)
			}
			if got := r.header.Get("Content-Type"); got != "application/octet-stream" {
				t.Errorf("download Content-Type: got %q, want application/octet-stream", got)
			}
			if string(r.body) != c.body {
				t.Errorf("download body: got %q, want %q", r.body, c.body)
			}
		}
		burnURL, _ := curlPost(t, p.URL, []byte("read once\n"), "?burn=true")
		r := do(t, http.MethodGet, p.URL+"/download/"+idOf(burnURL), nil).expect(t, "download a burn paste", http.StatusOK)
		if string(r.body) != "read once\n" {
			t.Errorf("burn download: got %q", r.body)
		}
		do(t, http.MethodGet, p.URL+"/download/"+idOf(burnURL), nil).expect(t, "download it again", http.StatusNotFound)
		do(t, http.MethodGet, p.URL+"/raw/"+idOf(burnURL), nil).expect(t, "raw after the download", http.StatusNotFound)
	})

	t.Run("clone link", func(t *testing.T) {
		// The old UI's Clone link, /new?id=ID, and pastenode's own ?clone=.
		u, _ := curlPost(t, p.URL, []byte("clone <this>\n"), "?lang=python")
		for _, path := range []string{"/new?id=" + idOf(u), "/?clone=" + idOf(u)} {
			r := do(t, http.MethodGet, p.URL+path, nil, browserAccept...).expect(t, "GET "+path, http.StatusOK)
			if !bytes.Contains(r.body, []byte(`id="new-paste"`)) || !bytes.Contains(r.body, []byte("clone &lt;this&gt;\n</textarea>")) ||
				!bytes.Contains(r.body, []byte(`<option value="Python" selected>`)) {
				t.Errorf("GET %s: want the form filled with the paste, got %s", path, r.body)
			}
		}
		// The old pastebin answered its Clone link with the page to any
		// client, and a 404 for an id it did not have.
		r := do(t, http.MethodGet, p.URL+"/new?id="+idOf(u), nil).expect(t, "GET /new?id= from curl", http.StatusOK)
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !bytes.Contains(r.body, []byte("clone &lt;this&gt;\n</textarea>")) {
			t.Errorf("GET /new?id= from curl: %s, want the filled form, got %.300s", ct, r.body)
		}
		do(t, http.MethodGet, p.URL+"/new?id=nosuchpaste", nil).expect(t, "GET /new?id= of an unknown id", http.StatusNotFound)
		do(t, http.MethodGet, p.URL+"/new?id=nosuchpaste", nil, browserAccept...).expect(t, "GET /new?id= of an unknown id in a browser", http.StatusNotFound)
	})

	t.Run("prism language names", func(t *testing.T) {
		// The old UI posted to /?lang=<Prism id>; markup was its default.
		for old, want := range map[string]string{
			"markup": "HTML", "clike": "C", "git": "Diff", "less": "SCSS", "pascal": "ObjectPascal",
			"plsql": "PL/pgSQL", "wasm": "WebAssembly Text Format", "xquery": "XML", "python": "Python",
		} {
			u, _ := curlPost(t, p.URL, []byte("x\n"), "?lang="+old)
			if got := metaOf(t, p.URL, idOf(u))["lang"]; got != want {
				t.Errorf("?lang=%s: stored lang %v, want %q", old, got, want)
			}
		}
		r := do(t, http.MethodPost, p.URL+"/?lang=nobodys-language", []byte("x"), "Content-Type", "application/x-www-form-urlencoded")
		r.expect(t, "an unknown language", http.StatusBadRequest)
		if r.header.Get("X-Paste-Id") != "" {
			t.Error("an unknown language stored a paste")
		}
	})

	t.Run("lang at read time", func(t *testing.T) {
		src := []byte("def f():\n    return 1\n")
		u, _ := curlPost(t, p.URL, src, "")
		keyword := []byte(`<span class="k">def</span>`)
		for range 2 { // a cached body of one view must not show in the other
			py := do(t, http.MethodGet, u+"?lang=python", nil, browserAccept...).expect(t, "?lang=python", http.StatusOK)
			if !bytes.Contains(py.body, keyword) {
				t.Fatalf("GET /ID?lang=python: no Python highlighting in %s", py.body)
			}
			plain := do(t, http.MethodGet, u, nil, browserAccept...).expect(t, "the normal view", http.StatusOK)
			if bytes.Contains(plain.body, keyword) {
				t.Fatalf("GET /ID after ?lang=python: the normal view is highlighted as Python")
			}
		}
		get(t, u+"?lang=python", src)
		get(t, p.URL+"/raw/"+idOf(u)+"?lang=python", src)
		if got := metaOf(t, p.URL, idOf(u))["lang"]; got != nil && got != "" {
			t.Errorf("stored lang after ?lang=python: got %v, want none", got)
		}
	})

	t.Run("contract kept", func(t *testing.T) {
		// Deliberate differences: 201 (not 200) on create, a delete token
		// (not open deletes), 400 for an empty paste.
		u, token := curlPost(t, p.URL, []byte("mine\n"), "")
		do(t, http.MethodDelete, u, nil).expect(t, "DELETE without the token", http.StatusForbidden)
		do(t, http.MethodDelete, u, nil, "X-Delete-Token", token).expect(t, "DELETE with the token", http.StatusNoContent)
		do(t, http.MethodPost, p.URL+"/", nil).expect(t, "empty paste", http.StatusBadRequest)
	})
}

func TestBasePath(t *testing.T) {
	p := newProc(t, "--public-url", "https://paste.example.com")
	p.env = []string{"PASTE_BASE_PATH=/paste"} // the --base-path twin, as a container sets it
	p.start()
	p.waitOK("/paste/readyz")
	base := p.URL + "/paste"

	// Create and read with the old client's request, under the prefix.
	r := do(t, http.MethodPost, base+"/", []byte("behind nginx\n"), "Content-Type", "application/x-www-form-urlencoded")
	r.expect(t, "create under /paste", http.StatusCreated)
	id := r.header.Get("X-Paste-Id")
	if got, want := string(r.body), "https://paste.example.com/paste/"+id+"\n"; got != want {
		t.Errorf("returned URL: got %q, want %q", got, want)
	}
	get(t, base+"/"+id, []byte("behind nginx\n"))
	get(t, base+"/raw/"+id, []byte("behind nginx\n"))

	// The page, its assets and its links live under the prefix.
	page := do(t, http.MethodGet, base+"/"+id, nil, browserAccept...).expect(t, "the page", http.StatusOK)
	for _, want := range []string{`href="/paste/raw/` + id + `"`, `href="/paste/?clone=` + id + `"`, `data-base="/paste"`} {
		if !bytes.Contains(page.body, []byte(want)) {
			t.Errorf("page: no %s", want)
		}
	}
	for _, asset := range []string{"app.css", "app.js"} {
		i := bytes.Index(page.body, []byte(`"/paste/static/`+asset+`?v=`))
		if i < 0 {
			t.Fatalf("page: no /paste/static/%s link", asset)
		}
		link := string(page.body[i+1 : i+1+bytes.IndexByte(page.body[i+1:], '"')])
		do(t, http.MethodGet, p.URL+link, nil).expect(t, "GET "+link, http.StatusOK)
	}
	form := do(t, http.MethodGet, base+"/", nil, browserAccept...).expect(t, "the form", http.StatusOK)
	if !bytes.Contains(form.body, []byte(`action="/paste/"`)) {
		t.Errorf("form: no action under /paste in %s", form.body)
	}

	// A browser's form post redirects under the prefix.
	body, ct := multipartForm(t, "content", "from the form")
	post := do(t, http.MethodPost, base+"/", body, "Content-Type", ct, browserAccept[0], browserAccept[1])
	post.expect(t, "form post", http.StatusSeeOther)
	if got, want := post.header.Get("Location"), "/paste/"+post.header.Get("X-Paste-Id"); got != want {
		t.Errorf("form post Location: got %q, want %q", got, want)
	}

	// pastectl takes the prefix as part of --addr.
	put := pastectl(t, base, []byte("from pastectl\n"), "put")
	if put.code != 0 || !strings.HasPrefix(put.stdout, "https://paste.example.com/paste/") {
		t.Fatalf("pastectl put under /paste: exit %d, stdout %q, stderr %q", put.code, put.stdout, put.stderr)
	}
	if r := pastectl(t, base, nil, "get", idOf(strings.TrimSpace(put.stdout))); r.code != 0 || r.stdout != "from pastectl\n" {
		t.Errorf("pastectl get under /paste: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	// Nothing answers outside the prefix.
	for _, path := range []string{"/", "/" + id, "/raw/" + id, "/static/app.css", "/readyz", "/pastex/" + id} {
		do(t, http.MethodGet, p.URL+path, nil).expect(t, "GET "+path+" outside the prefix", http.StatusNotFound)
	}
	do(t, http.MethodDelete, base+"/"+id, nil, "X-Delete-Token", r.header.Get("X-Delete-Token")).expect(t, "delete", http.StatusNoContent)
	do(t, http.MethodGet, base+"/raw/"+id, nil).expect(t, "read after delete", http.StatusNotFound)
}

func TestDefaultExpireAndIDLength(t *testing.T) {
	// The old --ttl (a default) maps to --default-expire, which is not
	// the maximum; the old --slug-len to --id-length.
	p := startProc(t, "--default-expire", "1h", "--max-expire", "1d", "--id-length", "16")
	before := time.Now()
	u, _ := curlPost(t, p.URL, []byte("x\n"), "")
	if len(idOf(u)) != 16 {
		t.Errorf("id %q: want 16 characters", idOf(u))
	}
	exp, err := time.Parse(time.RFC3339, metaOf(t, p.URL, idOf(u))["expires_at"].(string))
	if err != nil || exp.Before(before.Add(time.Hour-time.Minute)) || exp.After(time.Now().Add(time.Hour+time.Minute)) {
		t.Errorf("expires_at %v (%v): want an hour from now", exp, err)
	}
	long, _ := curlPost(t, p.URL, []byte("x\n"), "?ttl=86400")
	if exp, _ := time.Parse(time.RFC3339, metaOf(t, p.URL, idOf(long))["expires_at"].(string)); exp.Before(before.Add(23 * time.Hour)) {
		t.Errorf("ttl=86400: expires %v, want a day from now", exp)
	}

	// Ids of another length stay readable after a restart with the default.
	p.stop()
	p.args = nil
	p.restart()
	get(t, p.URL+"/"+idOf(u), []byte("x\n"))
	if u2, _ := curlPost(t, p.URL, []byte("y\n"), ""); len(idOf(u2)) != 10 {
		t.Errorf("id %q after the restart: want 10 characters", idOf(u2))
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--default-expire", "2d", "--max-expire", "1d"}, "--default-expire: 2d is longer than --max-expire"},
		{[]string{"--id-length", "8"}, "--id-length: 8: want 10 to 64"},
		{[]string{"--base-path", "paste"}, "--base-path"},
	} {
		res := run(t, "pastenode", nil, nil, append([]string{"--node-id", "x", "--data-dir", t.TempDir()}, c.args...)...)
		if res.code == 0 || !strings.Contains(res.stderr, c.want) {
			t.Errorf("pastenode %v: exit %d, stderr %q; want a start-up error with %q", c.args, res.code, res.stderr, c.want)
		}
	}
}
