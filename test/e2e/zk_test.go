package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCreateTokens runs a node with PASTE_CREATE_TOKENS: creates need a
// listed token by header (the seeds' curl alias with -H), pastectl sends
// --token or PASTE_TOKEN, reads stay open, the metrics count by name, the
// log never holds a token, and a changed file is picked up.
func TestCreateTokens(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("# e2e\nci:e2e-ci-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := newProc(t)
	n.env = append(n.env, "PASTE_CREATE_TOKENS="+file)
	n.start()
	n.waitReady()
	alias := func(headers ...string) response {
		return do(t, http.MethodPost, n.URL+"/", []byte("via the alias\n"),
			append([]string{"Content-Type", "application/x-www-form-urlencoded"}, headers...)...)
	}

	r := alias()
	r.expect(t, "create without a token", http.StatusUnauthorized)
	if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") || strings.Count(string(r.body), "\n") != 1 {
		t.Errorf("401: WWW-Authenticate %q, body %q; want a challenge and one line", r.header.Get("WWW-Authenticate"), r.body)
	}
	u := strings.TrimSpace(string(alias("X-Paste-Token", "e2e-ci-token").expect(t, "alias with X-Paste-Token", http.StatusCreated).body))
	get(t, u, []byte("via the alias\n")) // reads need no token
	alias("Authorization", "Bearer e2e-ci-token").expect(t, "Bearer", http.StatusCreated)

	if res := pastectl(t, n.URL, []byte("x"), "put"); res.code != 1 || !strings.Contains(res.stderr, "token") {
		t.Errorf("pastectl put without a token: exit %d, %q; want 1 and the reason", res.code, res.stderr)
	}
	if res := pastectl(t, n.URL, []byte("x"), "put", "--token", "e2e-ci-token"); res.code != 0 {
		t.Errorf("pastectl put --token: exit %d: %s", res.code, res.stderr)
	}
	if res := run(t, "pastectl", []byte("x"), []string{"PASTE_TOKEN=e2e-ci-token"}, "--addr", n.URL, "put"); res.code != 0 {
		t.Errorf("pastectl put with PASTE_TOKEN: exit %d: %s", res.code, res.stderr)
	}

	metrics := string(do(t, http.MethodGet, n.URL+"/metrics", nil).body)
	if !strings.Contains(metrics, `pastenode_token_creates_total{token="ci"} 4`) || strings.Contains(metrics, "e2e-ci-token") {
		t.Errorf("metrics: want 4 creates for token ci and never the token itself")
	}

	// Rotate: the new token works within a bound, the old one stops.
	if err := os.WriteFile(file, []byte("rotated:e2e-new-token-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the rotated token to be accepted", func() error {
		if r := alias("X-Paste-Token", "e2e-new-token-2"); r.code != http.StatusCreated {
			return errStatus(r.code)
		}
		return nil
	})
	alias("X-Paste-Token", "e2e-ci-token").expect(t, "the old token after rotation", http.StatusUnauthorized)

	if log, _ := os.ReadFile(n.logPath); strings.Contains(string(log), "e2e-ci-token") || strings.Contains(string(log), "e2e-new-token-2") {
		t.Error("the node's log holds a create token")
	}
}

type errStatus int

func (e errStatus) Error() string { return http.StatusText(int(e)) }

// TestTerminalOutput reads a paste highlighted for a terminal, by URL and
// with pastectl get --color, while raw reads stay byte-exact and a burn
// paste is still read once.
func TestTerminalOutput(t *testing.T) {
	t.Parallel()
	n := startProc(t)
	code := "package main\n\nfunc main() { println(\"hi\") }\n"
	u, _ := curlPost(t, n.URL, []byte(code), "?lang=go")

	for _, q := range []string{"?fmt=ansi", "?fmt=ansi16", "?fmt=truecolor"} {
		b := string(do(t, http.MethodGet, u+q, nil).expect(t, "GET "+q, http.StatusOK).body)
		if !strings.Contains(b, "\x1b[") || !strings.Contains(b, "println") {
			t.Errorf("GET %s: got %q, want ANSI colours", q, b)
		}
	}
	if b := string(do(t, http.MethodGet, u, nil, "Accept", "text/x-ansi").body); !strings.Contains(b, "\x1b[38;5;") {
		t.Errorf("Accept: text/x-ansi: got %q, want 256 colours", b)
	}
	get(t, u, []byte(code))
	get(t, strings.Replace(u, n.URL, n.URL+"/raw", 1), []byte(code))

	if r := pastectl(t, n.URL, nil, "get", "--color=always", u); r.code != 0 || !strings.Contains(r.stdout, "\x1b[") {
		t.Errorf("get --color=always: exit %d, %q", r.code, r.stdout)
	}
	if r := pastectl(t, n.URL, nil, "get", u); r.code != 0 || r.stdout != code {
		t.Errorf("get to a pipe: exit %d, %q; want the exact bytes", r.code, r.stdout)
	}

	burn, _ := curlPost(t, n.URL, []byte(code), "?lang=go&burn=true")
	do(t, http.MethodGet, burn+"?fmt=ansi", nil).expect(t, "ansi of a burn paste", http.StatusConflict)
	if r := pastectl(t, n.URL, nil, "get", "--color=always", burn); r.code != 0 || r.stdout != code {
		t.Errorf("get --color=always of a burn paste: exit %d, %q; want it once, plain", r.code, r.stdout)
	}
	if r := pastectl(t, n.URL, nil, "get", "--color=always", burn); r.code != 1 {
		t.Errorf("second get of a burn paste: exit %d, want 1", r.code)
	}
}

// TestEncryptedFromShell: put --encrypt --burn and put --password through
// the real binaries; the node stores only ciphertext.
func TestEncryptedFromShell(t *testing.T) {
	t.Parallel()
	n := startProc(t)
	const secret = "from the shell, sealed\n"

	put := pastectl(t, n.URL, []byte(secret), "put", "--encrypt", "--burn")
	link := strings.TrimSpace(put.stdout)
	base, key, ok := strings.Cut(link, "#")
	if put.code != 0 || !ok || key == "" {
		t.Fatalf("put --encrypt --burn: exit %d, %q: %s", put.code, put.stdout, put.stderr)
	}
	id := base[strings.LastIndex(base, "/")+1:]
	meta := string(do(t, http.MethodGet, n.URL+"/api/v1/pastes/"+id, nil).expect(t, "meta", http.StatusOK).body)
	if !strings.Contains(meta, `"encrypted": true`) || !strings.Contains(meta, `"burn": true`) {
		t.Errorf("meta %s: want encrypted and burn", meta)
	}
	if r := pastectl(t, n.URL, nil, "get", base+"#"+strings.Repeat("B", 43)); r.code != 1 || r.stdout != "" {
		t.Errorf("get with a wrong key: exit %d, stdout %q; want 1 and nothing", r.code, r.stdout)
	}
	// The wrong key's read consumed the burn paste: encrypt another.
	put = pastectl(t, n.URL, []byte(secret), "put", "--encrypt", "--burn")
	link = strings.TrimSpace(put.stdout)
	if r := pastectl(t, n.URL, nil, "get", link); r.code != 0 || r.stdout != secret {
		t.Errorf("get URL#KEY: exit %d, %q (%s)", r.code, r.stdout, r.stderr)
	}
	if r := pastectl(t, n.URL, nil, "get", link); r.code != 1 {
		t.Errorf("second get of an encrypted burn paste: exit %d, want 1", r.code)
	}

	put = pastectl(t, n.URL, []byte(secret), "put", "--password=open sesame")
	pu := strings.TrimSpace(put.stdout)
	raw := string(do(t, http.MethodGet, strings.Replace(pu, n.URL, n.URL+"/raw", 1), nil).body)
	if put.code != 0 || strings.Contains(pu, "#") || !strings.HasPrefix(raw, "pn1.p.600000.") || strings.Contains(raw, "sealed") {
		t.Fatalf("put --password: exit %d, URL %q, stored %q", put.code, pu, raw)
	}
	if r := pastectl(t, n.URL, nil, "get", "--password=open sesame", pu); r.code != 0 || r.stdout != secret {
		t.Errorf("get --password: exit %d, %q (%s)", r.code, r.stdout, r.stderr)
	}
	if r := pastectl(t, n.URL, nil, "get", "--password=wrong", pu); r.code != 1 || r.stdout != "" ||
		!strings.Contains(r.stderr, "wrong key or password") {
		t.Errorf("get --password=wrong: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
}
