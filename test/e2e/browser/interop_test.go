package browser

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// wire is a recording proxy in front of the UI's server: every request,
// from the browser or from pastectl, passes through it, so a test can show
// what the server was sent.
type wire struct {
	URL string
	mu  sync.Mutex
	log bytes.Buffer // each request's line, headers and body
}

func newWire(t *testing.T) *wire {
	t.Helper()
	target, err := url.Parse(suite.baseURL)
	if err != nil {
		t.Fatal(err)
	}
	w := &wire{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		w.mu.Lock()
		r.Write(&w.log) // the request as sent: line, headers, body
		w.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	w.URL = srv.URL
	return w
}

// saw reports whether any request the server got held s.
func (w *wire) saw(s string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Contains(w.log.String(), s)
}

var (
	pastectlOnce sync.Once
	pastectlPath string
	pastectlErr  error
)

// pastectl runs the real pastectl binary, built once, against addr.
func pastectl(t *testing.T, addr string, env []string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	pastectlOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pastenode-browser-bin-")
		if err != nil {
			pastectlErr = err
			return
		}
		pastectlPath = filepath.Join(dir, "pastectl")
		out, err := exec.Command("go", "build", "-o", pastectlPath, "github.com/pastenode/pastenode/cmd/pastectl").CombinedOutput()
		if err != nil {
			pastectlErr = &buildError{err, out}
		}
	})
	if pastectlErr != nil {
		t.Fatalf("build pastectl: %v", pastectlErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, pastectlPath, append([]string{"--addr", addr}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PASTE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("pastectl %v: %v", args, err)
		}
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + ": " + string(e.out) }

// TestPastectlEncryptedOpensInBrowser: pastectl encrypts, the page
// decrypts, and the server saw neither the plaintext nor the key.
func TestPastectlEncryptedOpensInBrowser(t *testing.T) {
	const secret = "sealed by pastectl: the vault code is 4711\n"
	ctx := newTab(t)
	w := newWire(t)

	code, out, errOut := pastectl(t, w.URL, nil, secret, "put", "--encrypt")
	if code != 0 {
		t.Fatalf("pastectl put --encrypt: exit %d: %s", code, errOut)
	}
	link, err := url.Parse(strings.TrimSpace(out))
	if err != nil || len(link.Fragment) != 43 {
		t.Fatalf("pastectl printed %q, want URL#KEY", out)
	}
	id := pasteID(t, link)
	if !w.saw("pn1.k.") {
		t.Fatal("the proxy did not record the ciphertext: it records nothing")
	}
	if w.saw("vault code") || w.saw(link.Fragment) {
		t.Fatal("the server was sent the plaintext or the key")
	}
	if _, raw := httpGet(t, "/raw/"+id, ""); !strings.HasPrefix(raw, "pn1.k.") || strings.Contains(raw, "vault") {
		t.Fatalf("the stored paste is %q, want pn1.k ciphertext only", raw)
	}
	do(t, ctx, "open pastectl's link", chromedp.Navigate(link.String()))
	waitJS(t, ctx, "the paste decrypted in the page", `document.getElementById("paste").textContent === `+jsString(secret))

	// A password paste, with burn: the page asks, reveals and decrypts once.
	const pw = "pastectl and the browser agree"
	code, out, errOut = pastectl(t, w.URL, []string{"PASTE_PASSWORD=" + pw}, secret, "put", "--burn")
	if code != 0 || strings.Contains(out, "#") {
		t.Fatalf("pastectl put with PASTE_PASSWORD: exit %d, %q: %s", code, out, errOut)
	}
	if w.saw(pw) {
		t.Fatal("the server was sent the password")
	}
	do(t, ctx, "open the burn page", chromedp.Navigate(strings.TrimSpace(out)),
		chromedp.Click(chromedp.ID("reveal")),
		chromedp.WaitVisible(chromedp.ID("unlock-password")),
		chromedp.SetValue(chromedp.ID("unlock-password"), pw),
		chromedp.Click(chromedp.ID("unlock")))
	waitJS(t, ctx, "the burn paste decrypted", `document.getElementById("paste").textContent === `+jsString(secret))
}

// TestBrowserEncryptedOpensWithPastectl: the page encrypts, pastectl
// decrypts, and the server saw neither the plaintext nor the key.
func TestBrowserEncryptedOpensWithPastectl(t *testing.T) {
	const secret = "sealed in the browser: ünïcode and <tags>\nline 2\n"
	ctx := newTab(t)
	w := newWire(t)

	for _, pw := range []string{"", "browser to shell"} {
		do(t, ctx, "fill the form through the proxy",
			chromedp.Navigate(w.URL+"/"),
			chromedp.WaitVisible(chromedp.CSS("form#new-paste")),
			chromedp.SetValue(chromedp.CSS("textarea[name=content]"), secret),
			chromedp.Click(chromedp.CSS("input[name=encrypt]")))
		if pw != "" {
			do(t, ctx, "type the password",
				chromedp.SendKeys(chromedp.CSS("input[name=password]"), pw, chromedp.NodeVisible, chromedp.NodeEnabled))
		}
		id, key := submitEncrypted(t, ctx)
		if !w.saw(`"encrypted":true`) {
			t.Fatal("the proxy did not record the browser's create")
		}
		if w.saw("ünïcode") || w.saw("sealed in the browser") || (key != "" && w.saw(key)) || (pw != "" && w.saw(pw)) {
			t.Fatal("the server was sent the plaintext, the key or the password")
		}
		if _, raw := httpGet(t, "/raw/"+id, ""); !strings.HasPrefix(raw, "pn1.") || strings.Contains(raw, "sealed") ||
			(key != "" && strings.Contains(raw, key)) {
			t.Fatalf("the stored paste is %q, want pn1 ciphertext only", raw)
		}

		args := []string{"get", w.URL + "/" + id + "#" + key}
		if pw != "" {
			args = []string{"get", "--password=" + pw, id}
		}
		code, out, errOut := pastectl(t, w.URL, nil, "", args...)
		if code != 0 || out != secret {
			t.Fatalf("pastectl %v: exit %d, %q (%s); want the plaintext", args, code, out, errOut)
		}

		// A wrong secret: exit 1, a clear reason, nothing on stdout.
		bad := []string{"get", w.URL + "/" + id + "#" + strings.Repeat("A", 43)}
		if pw != "" {
			bad = []string{"get", "--password=not it", id}
		}
		code, out, errOut = pastectl(t, w.URL, nil, "", bad...)
		if code != 1 || out != "" || !strings.Contains(errOut, "wrong key or password") {
			t.Errorf("pastectl %v: exit %d, stdout %q, stderr %q; want 1, nothing, the reason", bad, code, out, errOut)
		}
	}
}
