// Package browser drives the web UI in a real headless Chromium: the form
// post, server-side highlighting, encryption and decryption in the page,
// burn-after-reading, the delete control (at the root and under a base
// path), a browser without JavaScript, and screenshots of both themes.
//
// One single-voter Raft node serves the UI on httptest for the whole
// package, and one browser serves every test, each in a fresh tab of its
// own browser context. Without a Chromium or Chrome the tests skip, except
// under CI=true, where a missing browser is a failure. They skip in -short
// mode. A failed test leaves a screenshot of its tab (see
// keepFailureScreenshot).
package browser

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pastenode/pastenode/api"
	"github.com/pastenode/pastenode/node"
	"github.com/pastenode/pastenode/ui"
)

const (
	// testTimeout bounds one test's browser work.
	testTimeout = 45 * time.Second
	// waitTimeout bounds one wait for the page to reach a state. PBKDF2
	// with 600000 iterations takes about a second in a slow browser.
	waitTimeout = 20 * time.Second
	// pollInterval is how often a wait looks at the page again.
	pollInterval = 20 * time.Millisecond
)

// suite is what TestMain set up for the tests.
var suite struct {
	baseURL  string // the UI's httptest server
	tokenURL string // the same node's API with --create-tokens (token "browser-token")
	// prefixURL is the same node's UI under the base path /paste, on a
	// third httptest server.
	prefixURL string
	browser   context.Context // a chromedp context whose browser is running; nil without one
	skip      string          // why there is no browser
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if testing.Short() {
		suite.skip = "browser tests do not run in -short mode"
		return m.Run()
	}
	execPath := findBrowser()
	if execPath == "" {
		suite.skip = "no chromium, chromium-browser, google-chrome or google-chrome-stable in PATH"
		return m.Run()
	}

	dir, err := os.MkdirTemp("", "pastenode-browser-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	baseURL, stop, err := startServer(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "browser: start pastenode:", err)
		return 1
	}
	defer stop()

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(execPath),
			chromedp.NoSandbox, // CI containers run as root
			chromedp.Flag("disable-background-networking", true),
			chromedp.WindowSize(1280, 900),
		)...)
	defer cancelAlloc()
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	// The first Do starts the browser, bound to browserCtx: no timeout here.
	if err := chromedp.Do(browserCtx); err != nil {
		fmt.Fprintf(os.Stderr, "browser: start %s: %v\n", execPath, err)
		return 1
	}
	suite.baseURL, suite.browser = baseURL, browserCtx
	return m.Run()
}

// findBrowser returns the path of a Chromium or Chrome, or "".
func findBrowser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// startServer opens a single-voter node in dir and serves its API and UI
// on a loopback httptest server. stop closes both.
func startServer(dir string) (baseURL string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	raftAddr := ln.Addr().String()
	ln.Close()

	n, err := node.New(node.Config{
		ID:              "browser1",
		DataDir:         dir,
		RaftAddr:        raftAddr,
		BootstrapExpect: 1,
		TimeScale:       0.2,
	})
	if err != nil {
		return "", nil, err
	}
	if err := n.Open(context.Background()); err != nil {
		return "", nil, fmt.Errorf("open node: %w", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for err := n.Ready(); err != nil; err = n.Ready() {
		if time.Now().After(deadline) {
			n.Close()
			return "", nil, fmt.Errorf("node not ready: %w", err)
		}
		time.Sleep(pollInterval) // polling Ready with a deadline
	}

	pages, err := ui.New(ui.Options{})
	if err != nil {
		n.Close()
		return "", nil, err
	}
	srv, err := api.NewServer(api.Config{Store: n, UI: pages, MaxPasteSize: 1 << 20})
	if err != nil {
		n.Close()
		return "", nil, err
	}
	prefixed, err := prefixedServer(n)
	if err != nil {
		n.Close()
		return "", nil, err
	}
	ts := httptest.NewServer(srv.Handler())
	tokens := filepath.Join(dir, "create-tokens")
	if err := os.WriteFile(tokens, []byte("browser:browser-token\n"), 0o600); err != nil {
		ts.Close()
		prefixed.Close()
		n.Close()
		return "", nil, err
	}
	tokenSrv, err := api.NewServer(api.Config{Store: n, UI: pages, MaxPasteSize: 1 << 20, CreateTokensFile: tokens})
	if err != nil {
		ts.Close()
		prefixed.Close()
		n.Close()
		return "", nil, err
	}
	tts := httptest.NewServer(tokenSrv.Handler())
	suite.tokenURL = tts.URL
	return ts.URL, func() {
		tts.Close()
		ts.Close()
		prefixed.Close()
		n.Close()
	}, nil
}

// prefixedServer serves n's API and UI under the base path /paste and
// records its URL in suite.prefixURL.
func prefixedServer(n *node.Node) (*httptest.Server, error) {
	pages, err := ui.New(ui.Options{BasePath: "/paste"})
	if err != nil {
		return nil, err
	}
	srv, err := api.NewServer(api.Config{Store: n, UI: pages, MaxPasteSize: 1 << 20, BasePath: "/paste"})
	if err != nil {
		return nil, err
	}
	ts := httptest.NewServer(srv.Handler())
	suite.prefixURL = ts.URL + "/paste"
	return ts, nil
}

// newTab returns the context of a new tab, in a browser context of its own
// (no cookies or cache shared with other tests), closed when the test ends.
// It skips the test when there is no browser, or fails it under CI=true.
func newTab(t *testing.T) context.Context {
	t.Helper()
	if suite.browser == nil {
		if os.Getenv("CI") == "true" && !testing.Short() {
			t.Fatalf("CI=true but the browser tests cannot run: %s", suite.skip)
		}
		t.Skip(suite.skip)
	}
	tab, cancelTab := chromedp.NewContext(suite.browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancelTab)
	// Open the tab without a timeout, which would close it; then bound
	// the test's actions.
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open tab: %v", err)
	}
	ctx, cancel := context.WithTimeout(tab, testTimeout)
	t.Cleanup(cancel)
	// Registered last, so it runs first, while the tab is still open.
	t.Cleanup(func() { keepFailureScreenshot(t, tab) })
	return ctx
}

// failuresDir keeps the screenshots of failed tests when go test runs
// without -artifacts.
var failuresDir = filepath.Join(os.TempDir(), "pastenode-browser-failures")

// keepFailureScreenshot saves a screenshot of the tab of a test that
// failed, as the test left the page: in the test's artifact directory
// under go test -artifacts, else in failuresDir, which is not removed. It
// takes the tab's own context, as the test's may have run out.
func keepFailureScreenshot(t *testing.T, tab context.Context) {
	if !t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("no screenshot of the failure: %v", err)
		return
	}
	dir := failuresDir
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() == "true" {
		dir = t.ArtifactDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("no screenshot of the failure: %v", err)
		return
	}
	path := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Logf("no screenshot of the failure: %v", err)
		return
	}
	t.Logf("screenshot of the failure: %s", path)
}

// do runs browser actions and fails the test on error.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// get runs one browser action that returns a value and fails the test on
// error.
func get[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	return get(t, ctx, "evaluate "+expr, chromedp.Evaluate[T](expr))
}

// waitJS polls the page until the JavaScript expression is true. It polls
// from Go, with Runtime.evaluate, because chromedp.Poll compiles its
// predicate with new Function, which the UI's CSP forbids. Errors while a
// navigation replaces the page count as "not yet".
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	var last error
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		if err == nil && ok {
			return
		}
		last = err
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(pollInterval):
		}
	}
	url, _ := chromedp.Run(ctx, chromedp.Location())
	html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	t.Fatalf("waiting for %s: %s is still false after %s (last error: %v)\npage %s:\n%s",
		what, expr, waitTimeout, last, url, html)
}

// location returns the tab's URL.
func location(t *testing.T, ctx context.Context) *url.URL {
	t.Helper()
	u, err := url.Parse(get(t, ctx, "location", chromedp.Location()))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// pasteID returns the paste id in the path of u, or fails the test.
func pasteID(t *testing.T, u *url.URL) string {
	t.Helper()
	id := strings.TrimPrefix(u.Path, "/")
	if id == "" || strings.Contains(id, "/") {
		t.Fatalf("URL %s is not a paste's page", u)
	}
	return id
}

// httpGet fetches path from the server with net/http, outside the browser.
func httpGet(t *testing.T, path, accept string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, suite.baseURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", path, err)
	}
	return res.StatusCode, string(body)
}

// postPaste creates a paste at base from outside the browser, as curl
// does, with the create options in query, and returns its id.
func postPaste(t *testing.T, base, content, query string) string {
	t.Helper()
	res, err := http.Post(base+"/?"+query, "text/plain", strings.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	id := res.Header.Get("X-Paste-Id")
	if res.StatusCode != http.StatusCreated || id == "" {
		t.Fatalf("create: status %d, id %q", res.StatusCode, id)
	}
	return id
}

// jsString quotes s as a JavaScript string literal (JSON's escaping is
// enough, and encoding/json escapes U+2028 and U+2029 too).
func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
}
