package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/internal/freeport"
	"github.com/pastenode/pastenode/node"
	"github.com/pastenode/pastenode/ui"
)

// testNode is one real, single-voter Raft node served by httptest. Its
// data dir and Raft address stay the same across restarts, as Raft stores
// the address in its configuration.
type testNode struct {
	id       string
	dir      string
	raftAddr string
	cfg      Config        // the API's configuration; Store and UI are filled in
	budget   time.Duration // the pages' highlighting budget

	node   *node.Node
	server *Server
	srv    *httptest.Server
	URL    string
}

// testAdmin is the admin token of a test node whose Config gives none.
const testAdmin = "test-admin-token"

// asAdmin are the headers of an admin call to a test node.
var asAdmin = []string{"Authorization", "Bearer " + testAdmin, "Content-Type", "application/json"}

// startNode opens a new node with the API configured by cfg (zero
// MaxPasteSize means 1 MiB, no AdminToken means testAdmin) and waits until
// it is ready.
func startNode(tb testing.TB, cfg Config) *testNode {
	tb.Helper()
	return startNodeBudget(tb, cfg, testHighlightBudget)
}

// startNodeBudget is startNode with the given highlighting budget.
func startNodeBudget(tb testing.TB, cfg Config, budget time.Duration) *testNode {
	tb.Helper()
	if cfg.MaxPasteSize == 0 {
		cfg.MaxPasteSize = 1 << 20
	}
	if cfg.AdminToken == "" {
		cfg.AdminToken = testAdmin
	}
	tn := &testNode{id: "n1", dir: tb.TempDir(), raftAddr: freeport.Addr(tb), cfg: cfg, budget: budget}
	tn.open(tb)
	tb.Cleanup(tn.close)
	return tn
}

// testHighlightBudget is the highlighting budget of a test node's pages.
// Tests run side by side on few cores, and the highlighting slots are the
// process's: with the default budget a page under that load was sometimes
// served plain, which a test of highlighting took for a bug. The tests
// of the budget itself ask for the default (startNodeBudget).
const testHighlightBudget = 10 * time.Second

func (tn *testNode) open(tb testing.TB) {
	tb.Helper()
	n, err := node.New(node.Config{
		ID:              tn.id,
		DataDir:         tn.dir,
		RaftAddr:        tn.raftAddr,
		BootstrapExpect: 1,
		TimeScale:       0.1,
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := n.Open(context.Background()); err != nil {
		tb.Fatalf("open node: %v", err)
	}
	tn.node = n
	waitFor(tb, 10*time.Second, "node ready", func() error { return n.Ready() })
	// The leader's own entry that gives a new cluster its identity comes
	// just after it takes office: past it, the tests see only the entries
	// they cause.
	waitFor(tb, 10*time.Second, "a cluster id", func() error {
		if n.ClusterID() == "" {
			return errors.New("none yet")
		}
		return nil
	})

	pages, err := ui.New(ui.Options{BasePath: tn.cfg.BasePath, HighlightBudget: tn.budget})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := tn.cfg
	cfg.Store, cfg.UI = n, pages
	if tn.server, err = NewServer(cfg); err != nil {
		tb.Fatal(err)
	}
	tn.srv = httptest.NewServer(tn.server.Handler())
	tn.URL = tn.srv.URL
}

// close stops the HTTP server and the node; it may be called twice.
func (tn *testNode) close() {
	if tn.srv != nil {
		tn.srv.Close()
		tn.srv = nil
	}
	if tn.node != nil {
		tn.node.Close()
		tn.node = nil
	}
}

// restart closes the node and opens a new one on the same data dir and
// Raft address. The HTTP URL changes.
func (tn *testNode) restart(tb testing.TB) {
	tb.Helper()
	tn.close()
	tn.open(tb)
}

// waitFor polls cond until it returns nil or the timeout passes.
func waitFor(tb testing.TB, timeout time.Duration, what string, cond func() error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: still not true after %s: %v", what, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{
	Timeout:       30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// response is an answer with its body read.
type response struct {
	*http.Response
	body []byte
}

// do sends a request with the given headers ("Key", "value" pairs; an
// empty value sends no header) and reads the whole answer.
func do(tb testing.TB, method, url string, body []byte, headers ...string) response {
	tb.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] != "" {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return response{resp, b}
}

// wantStatus fails the test unless r has the status code want.
func (r response) wantStatus(tb testing.TB, want int) {
	tb.Helper()
	if r.StatusCode != want {
		tb.Fatalf("%s %s: got status %d, want %d; body: %.300q",
			r.Request.Method, r.Request.URL.Path, r.StatusCode, want, r.body)
	}
}

// wantReason checks that an error answer carries a one-line reason: a
// text line, or a JSON object with a non-empty "error".
func (r response) wantReason(tb testing.TB, asJSON bool) string {
	tb.Helper()
	ct := r.Header.Get("Content-Type")
	if asJSON {
		if !strings.HasPrefix(ct, "application/json") {
			tb.Fatalf("error Content-Type: got %q, want application/json", ct)
		}
		var e pastenode.ErrorBody
		if err := json.Unmarshal(r.body, &e); err != nil {
			tb.Fatalf("error body %q: %v", r.body, err)
		}
		if e.Error == "" || strings.Contains(e.Error, "\n") {
			tb.Fatalf("error reason: got %q, want one non-empty line", e.Error)
		}
		return e.Error
	}
	if !strings.HasPrefix(ct, "text/plain") {
		tb.Fatalf("error Content-Type: got %q, want text/plain", ct)
	}
	line, ok := strings.CutSuffix(string(r.body), "\n")
	if !ok || line == "" || strings.Contains(line, "\n") {
		tb.Fatalf("error body: got %q, want one line of text", r.body)
	}
	return line
}

// create posts content raw to POST / (as curl --data-binary does) with the
// query string query, and any headers, and returns the paste id and
// delete token.
func create(tb testing.TB, base string, content []byte, query string, headers ...string) (id, token string) {
	tb.Helper()
	u := base + "/"
	if query != "" {
		u += "?" + query
	}
	r := do(tb, http.MethodPost, u, content, append([]string{"Content-Type", "application/x-www-form-urlencoded"}, headers...)...)
	r.wantStatus(tb, http.StatusCreated)
	id, token = r.Header.Get("X-Paste-Id"), r.Header.Get("X-Delete-Token")
	if id == "" || token == "" {
		tb.Fatalf("create: got id %q and token %q, want both", id, token)
	}
	return id, token
}

// createJSON posts req to /api/v1/pastes and decodes the answer.
func createJSON(tb testing.TB, base string, req pastenode.CreateRequest) pastenode.Created {
	tb.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	r := do(tb, http.MethodPost, base+"/api/v1/pastes", b, "Content-Type", "application/json")
	r.wantStatus(tb, http.StatusCreated)
	var c pastenode.Created
	if err := json.Unmarshal(r.body, &c); err != nil {
		tb.Fatalf("create answer %q: %v", r.body, err)
	}
	return c
}
