package e2e

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pastenode/pastenode/internal/freeport"
)

// jsonObject decodes out as exactly one JSON object.
func jsonObject(t *testing.T, out string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var v map[string]any
	if err := dec.Decode(&v); err != nil || dec.More() {
		t.Fatalf("want one JSON object, got %q (%v)", out, err)
	}
	return v
}

// TestVersionNamesTheCommit builds both binaries as `make build` does and
// checks that --version names the commit they were built from, and marks
// a tree with uncommitted changes dirty; a node reports the version its
// --version prints.
func TestVersionNamesTheCommit(t *testing.T) {
	t.Parallel()
	binary(t, "pastenode") // skips in -short mode
	for _, tool := range []string{"make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		if err != nil {
			t.Skipf("git %s: %v (not a git checkout?)", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	head := git("rev-parse", "HEAD")[:12]
	dirty := git("status", "--porcelain") != ""

	bin := t.TempDir()
	if out, err := exec.Command("make", "-s", "-C", root, "build", "BIN="+bin).CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	for _, name := range []string{"pastenode", "pastectl"} {
		out, err := exec.Command(filepath.Join(bin, name), "--version").Output()
		line := strings.TrimSpace(string(out))
		if err != nil || !strings.HasPrefix(line, name+" version ") || !strings.Contains(line, head) {
			t.Errorf("%s --version: %q (%v), want it to name commit %s", name, line, err, head)
		}
		if strings.Contains(line, "dirty") != dirty {
			t.Errorf("%s --version: %q, want dirty only when git status shows changes (%v)", name, line, dirty)
		}
	}

	// A node says in its status what its --version says.
	n := startProc(t)
	want := strings.TrimPrefix(strings.TrimSpace(run(t, "pastenode", nil, nil, "--version").stdout), "pastenode version ")
	r := pastectl(t, n.URL, nil, "-o", "json", "status")
	if node, _ := jsonObject(t, r.stdout)["node"].(map[string]any); node["version"] != want {
		t.Errorf("status version %v, want %q", node["version"], want)
	}
}

// TestPastectlOnAnotherPort: on a node that does not serve on the default
// port, --data-dir alone finds it, and a paste URL is fetched from the node
// it names whatever --addr says, encrypted ones included.
func TestPastectlOnAnotherPort(t *testing.T) {
	t.Parallel()
	n := startProc(t)
	elsewhere := "http://" + freeport.Addr(t) // nothing listens there
	dataDir := func(args ...string) result {
		return run(t, "pastectl", []byte("secret words\n"), nil, append([]string{"--data-dir", n.dataDir}, args...)...)
	}
	if r := dataDir("snapshot"); r.code != 0 || r.stdout != "snapshot taken\n" {
		t.Fatalf("--data-dir snapshot: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	put := dataDir("-o", "json", "put")
	created := jsonObject(t, put.stdout)
	url, _ := created["url"].(string)
	if put.code != 0 || !strings.HasPrefix(url, n.URL+"/") {
		t.Fatalf("--data-dir put: exit %d, %q; want a URL of %s", put.code, put.stdout, n.URL)
	}

	if r := pastectl(t, elsewhere, nil, "get", url); r.code != 0 || r.stdout != "secret words\n" {
		t.Errorf("get URL with --addr elsewhere: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := pastectl(t, elsewhere, nil, "-o", "json", "info", url); r.code != 0 || jsonObject(t, r.stdout)["url"] != url {
		t.Errorf("info URL: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	enc := dataDir("put", "--encrypt")
	keyed := strings.TrimSpace(enc.stdout)
	if enc.code != 0 || !strings.Contains(keyed, "#") {
		t.Fatalf("put --encrypt: exit %d, %q", enc.code, enc.stdout)
	}
	if r := pastectl(t, elsewhere, nil, "get", keyed); r.code != 0 || r.stdout != "secret words\n" {
		t.Errorf("get URL#KEY with --addr elsewhere: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	token, _ := created["delete_token"].(string)
	if r := pastectl(t, elsewhere, nil, "delete", url, "--token", token); r.code != 0 {
		t.Errorf("delete URL: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := dataDir("get", url); r.code != 1 || !strings.Contains(r.stderr, "404") {
		t.Errorf("get after delete: exit %d, stderr %q, want a 404", r.code, r.stderr)
	}
}

// TestPastectlJSONFailure: with -o json a failing command prints one JSON
// object, the reason and the HTTP status (0 when no answer came), and
// exits non-zero.
func TestPastectlJSONFailure(t *testing.T) {
	t.Parallel()
	n := startProc(t)
	r := pastectl(t, n.URL, nil, "-o", "json", "get", "nosuchpaste")
	if v := jsonObject(t, r.stdout); r.code != 1 || v["status"] != 404.0 || v["error"] != "404 Not Found: paste not found" || r.stderr != "" {
		t.Errorf("get of an unknown id: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = pastectl(t, "http://"+freeport.Addr(t), nil, "-o", "json", "status")
	if v := jsonObject(t, r.stdout); r.code != 1 || v["status"] != 0.0 || !strings.Contains(v["error"].(string), "connection refused") {
		t.Errorf("status of no node: exit %d, stdout %q", r.code, r.stdout)
	}
}

// TestRetryOnRateLimit: a node allows one write a minute; pastectl waits
// out the 429's Retry-After and writes, saying so, when --timeout allows
// the wait, and fails at once with the 429 when it does not.
func TestRetryOnRateLimit(t *testing.T) {
	t.Parallel()
	n := startProc(t, "--rate-limit", "1")
	if r := pastectl(t, n.URL, []byte("first"), "put"); r.code != 0 {
		t.Fatalf("first put: exit %d, stderr %q", r.code, r.stderr)
	}
	start := time.Now()
	r := pastectl(t, n.URL, []byte("second"), "-o", "json", "--timeout", "5s", "put")
	if v := jsonObject(t, r.stdout); r.code != 1 || v["status"] != 429.0 || time.Since(start) > 4*time.Second {
		t.Errorf("put over the limit, --timeout 5s: exit %d, stdout %q after %s; want the 429 at once", r.code, r.stdout, time.Since(start))
	}

	// The budget refills a minute after the first write.
	start = time.Now()
	cmd := exec.Command(binary(t, "pastectl"), "--addr", n.URL, "--timeout", "90s", "put")
	cmd.Env, cmd.Stdin = cleanEnv(), strings.NewReader("third")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil || !strings.HasPrefix(stdout.String(), n.URL+"/") ||
		!strings.Contains(stderr.String(), "429 Too Many Requests: too many writes from your address") || !strings.Contains(stderr.String(), "; retrying in ") {
		t.Errorf("put --timeout 90s: %v after %s, stdout %q, stderr %q; want a retry, told, then the URL", err, time.Since(start), stdout.String(), stderr.String())
	}
}

// TestNotInACluster: a node started to be joined and not joined answers
// a write at once with a 503 that says how to join it, and so does
// /readyz.
func TestNotInACluster(t *testing.T) {
	t.Parallel()
	n := newProc(t, "--bootstrap-expect", "0")
	n.start()
	n.waitOK("/healthz")

	start := time.Now()
	r := do(t, http.MethodPost, n.URL+"/", []byte("content"))
	if r.code != http.StatusServiceUnavailable || string(r.body) != "not in a cluster yet: run pastectl join\n" || r.header.Get("Retry-After") == "" {
		t.Errorf("create: %d %q Retry-After %q, want 503, the one line and a Retry-After", r.code, r.body, r.header.Get("Retry-After"))
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("create answered after %s, want at once", took)
	}
	r = do(t, http.MethodGet, n.URL+"/readyz", nil)
	if r.code != http.StatusServiceUnavailable || string(r.body) != "not ready: not in a cluster yet: run pastectl join\n" {
		t.Errorf("readyz: %d %q", r.code, r.body)
	}
	p := pastectl(t, n.URL, []byte("content"), "-o", "json", "--timeout", "0", "put")
	if v := jsonObject(t, p.stdout); p.code != 1 || v["status"] != 503.0 || !strings.Contains(v["error"].(string), "not in a cluster yet: run pastectl join") {
		t.Errorf("pastectl put: exit %d, stdout %q", p.code, p.stdout)
	}
}

// TestSizeLimitMessage: a body over the paste limit is refused with the
// same message whether it comes raw or as a multipart form, whose framing
// the node allows more bytes.
func TestSizeLimitMessage(t *testing.T) {
	t.Parallel()
	n := startProc(t)
	const want = "paste is larger than the limit of 1048576 bytes\n"
	over := bytes.Repeat([]byte("a"), 1<<20+1)
	r := do(t, http.MethodPost, n.URL+"/", over, "Content-Type", "application/octet-stream")
	if r.code != http.StatusRequestEntityTooLarge || string(r.body) != want {
		t.Errorf("raw: %d %q, want 413 %q", r.code, r.body, want)
	}
	for _, size := range []int{1<<20 + 1, 1<<20 + 200<<10} { // within and past the framing's allowance
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		fw, _ := mw.CreateFormFile("file", "big.txt")
		fw.Write(bytes.Repeat([]byte("a"), size))
		mw.Close()
		r := do(t, http.MethodPost, n.URL+"/", body.Bytes(), "Content-Type", mw.FormDataContentType())
		if r.code != http.StatusRequestEntityTooLarge || string(r.body) != want {
			t.Errorf("multipart of %d bytes: %d %q, want 413 %q", size, r.code, r.body, want)
		}
	}
}

// TestPastenodeHelp: the real binary's help lists the commands and the
// environment, and a bad flag is one line and a pointer to it, exit 2.
func TestPastenodeHelp(t *testing.T) {
	t.Parallel()
	r := run(t, "pastenode", nil, nil, "--help")
	for _, want := range []string{"keygen", "mirror", "restore", "--data-dir string", "PASTE_DATA_DIR"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("--help: exit %d, lacks %q", r.code, want)
		}
	}
	if r := run(t, "pastenode", nil, nil, "help", "mirror"); r.code != 0 || !strings.Contains(r.stdout, "--cdb string") {
		t.Errorf("help mirror: exit %d, %q", r.code, r.stdout)
	}
	r = run(t, "pastenode", nil, nil, "--nope")
	if r.code != 2 || r.stderr != "pastenode: unknown flag --nope\nRun 'pastenode --help' for usage.\n" {
		t.Errorf("--nope: exit %d, stderr %q", r.code, r.stderr)
	}
}
