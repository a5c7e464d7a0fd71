package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// This file replays, against the real binary, what users of Pastey did:
// its form API, its paste and form pages, and its documented curl line.

func TestPastey(t *testing.T) {
	p := startProc(t)

	// curl -F title=T -F body=B HOST/pastes -L -s -o /dev/null -w '%{url_effective}\n'
	// as Go sends it: a multipart post, followed to its end.
	body, ct := multipartForm(t, "title", "T", "body", "B")
	req, err := http.NewRequest(http.MethodPost, p.URL+"/pastes", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Accept", "*/*")
	res, err := http.DefaultClient.Do(req) // follows the 303 with a GET, as curl -L
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	final := res.Request.URL.String()
	if res.StatusCode != http.StatusOK || string(got) != "B" || !strings.HasPrefix(final, p.URL+"/pastes/") {
		t.Fatalf("POST /pastes -L: ended on %s with %d %q, want /pastes/ID with the paste", final, res.StatusCode, got)
	}
	id := idOf(final)
	if m := metaOf(t, p.URL, id); m["title"] != "T" {
		t.Errorf("title: got %v, want T", m["title"])
	}

	// The first hop is a 303 See Other to /pastes/ID.
	first := do(t, http.MethodPost, p.URL+"/pastes", body, "Content-Type", ct).expect(t, "POST /pastes", http.StatusSeeOther)
	if loc := first.header.Get("Location"); loc != "/pastes/"+first.header.Get("X-Paste-Id") {
		t.Errorf("Location: got %q, want /pastes/ID", loc)
	}

	// The exact curl line, when curl is here.
	if curl, err := exec.LookPath("curl"); err == nil {
		out, err := exec.Command(curl, "-F", "title=T", "-F", "body=B", p.URL+"/pastes",
			"-L", "-s", "-o", "/dev/null", "-w", `%{url_effective}\n`).Output()
		if u := strings.TrimSpace(string(out)); err != nil || !strings.HasPrefix(u, p.URL+"/pastes/") || len(idOf(u)) != 10 {
			t.Errorf("curl printed %q (%v), want the new paste's URL", out, err)
		} else {
			get(t, u, []byte("B"))
		}
	} else {
		t.Log("no curl in PATH: the exact curl line is replayed by Go's client only")
	}

	// GET /pastes/ID: raw for ab and curl, the paste's page for browsers,
	// as GET /ID.
	get(t, p.URL+"/pastes/"+id, []byte("B"))
	page := do(t, http.MethodGet, p.URL+"/pastes/"+id, nil, browserAccept...).expect(t, "page", http.StatusOK)
	same := do(t, http.MethodGet, p.URL+"/"+id, nil, browserAccept...).expect(t, "page", http.StatusOK)
	if !bytes.Contains(page.body, []byte(`id="paste"`)) || !bytes.Equal(page.body, same.body) {
		t.Errorf("GET /pastes/ID in a browser: want the page of GET /ID, got %s", page.body)
	}
	do(t, http.MethodGet, p.URL+"/pastes/nosuchpaste1", nil).expect(t, "a missing paste", http.StatusNotFound)

	// GET /pastes: the upload form.
	form := do(t, http.MethodGet, p.URL+"/pastes", nil, browserAccept...).expect(t, "GET /pastes", http.StatusOK)
	if !bytes.Contains(form.body, []byte(`id="new-paste"`)) {
		t.Errorf("GET /pastes: want the new-paste form, got %s", form.body)
	}

	// body= instead of content= in a urlencoded form.
	r := do(t, http.MethodPost, p.URL+"/pastes", []byte("title=T2&body=urlencoded+body"), "Content-Type", "application/x-www-form-urlencoded")
	r.expect(t, "urlencoded POST /pastes", http.StatusSeeOther)
	get(t, p.URL+"/raw/"+r.header.Get("X-Paste-Id"), []byte("urlencoded body"))
	u, _ := curlPost(t, p.URL, []byte("title=T3&body=on+POST+%2F"), "")
	get(t, u, []byte("on POST /"))

	// Kept on purpose: an empty paste is a 400 and stores nothing.
	empty, ect := multipartForm(t, "title", "T", "body", "")
	e := do(t, http.MethodPost, p.URL+"/pastes", empty, "Content-Type", ect).expect(t, "empty body", http.StatusBadRequest)
	if e.header.Get("X-Paste-Id") != "" {
		t.Error("an empty paste was stored")
	}
}
