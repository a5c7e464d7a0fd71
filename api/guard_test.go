package api

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/node"
	"github.com/pastenode/pastenode/ui"
)

// TestFloodUnknownIDs: deletes and reveals of ids this node does not have,
// and deletes with a wrong token, are answered without a Raft entry.
func TestFloodUnknownIDs(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	id, _ := create(t, tn.URL, []byte("kept"), "")
	burn, _ := create(t, tn.URL, []byte("burn kept"), "burn=1")
	plain, _ := create(t, tn.URL, []byte("not a burn paste"), "")
	before := tn.node.Raft().LastIndex()
	for i := range 50 {
		unknown := "unknown" + strconv.Itoa(i)
		do(t, http.MethodDelete, tn.URL+"/"+unknown, nil, "X-Delete-Token", "whatever").wantStatus(t, http.StatusNotFound)
		do(t, http.MethodPost, tn.URL+"/"+unknown+"/reveal", nil).wantStatus(t, http.StatusNotFound)
		do(t, http.MethodGet, tn.URL+"/raw/"+unknown, nil).wantStatus(t, http.StatusNotFound)
		do(t, http.MethodDelete, tn.URL+"/"+id, nil, "X-Delete-Token", "wrong").wantStatus(t, http.StatusForbidden)
	}
	// Revealing a paste that does not burn shows it without consuming.
	r := do(t, http.MethodPost, tn.URL+"/"+plain+"/reveal", nil, "Accept", "text/html")
	r.wantStatus(t, http.StatusOK)
	if got := tn.node.Raft().LastIndex(); got != before {
		t.Fatalf("raft last index moved from %d to %d under a flood of unknown ids", before, got)
	}
	readRaw(t, tn.URL, id, []byte("kept"))
	readRaw(t, tn.URL, burn, []byte("burn kept"))
}

// TestAdminWritesAreNotRateLimited: an operator with the admin token is
// never locked out by the per-address limit, even from an address that
// spent its budget (the spammer's NAT), and still gets 429 without it.
func TestAdminWritesAreNotRateLimited(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{RateLimit: 1})
	h := tn.server.Handler()
	send := func(method, path, body string, hdr ...string) int {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.RemoteAddr = "198.51.100.77:5000"
		for j := 0; j+1 < len(hdr); j += 2 {
			req.Header.Set(hdr[j], hdr[j+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	if got := send(http.MethodPost, "/", "spam"); got != http.StatusCreated {
		t.Fatalf("first create: %d, want 201", got)
	}
	if got := send(http.MethodPost, "/", "spam"); got != http.StatusTooManyRequests {
		t.Fatalf("second create without the token: %d, want 429", got)
	}
	admin := []string{"Authorization", asAdmin[1], "Content-Type", "application/json"}
	for i := range 5 {
		if got := send(http.MethodPost, "/", "by the operator", admin...); got != http.StatusCreated {
			t.Fatalf("admin create %d from the same address: %d, want 201", i, got)
		}
		if got := send(http.MethodDelete, "/nosuchpaste", "", admin...); got != http.StatusNotFound {
			t.Fatalf("admin delete %d from the same address: %d, want 404", i, got)
		}
	}
	if got := send(http.MethodPost, "/", "spam", "Authorization", "Bearer wrong"); got != http.StatusTooManyRequests {
		t.Fatalf("create with a wrong token: %d, want 429", got)
	}
}

// TestRateLimitWrites: the limit covers every write, and Retry-After says
// when the next token is due.
func TestRateLimitWrites(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{RateLimit: 2})
	writes := []struct {
		name   string
		method string
		path   string
		hdr    []string
	}{
		{"create", http.MethodPost, "/", nil},
		{"create JSON", http.MethodPost, "/api/v1/pastes", []string{"Content-Type", "application/json"}},
		{"delete", http.MethodDelete, "/nosuchpaste", []string{"X-Delete-Token", "x"}},
		{"reveal", http.MethodPost, "/nosuchpaste/reveal", nil},
	}
	// Each write spends the budget of its own client address.
	for i, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			h := tn.server.Handler()
			body := `{"content":"x"}`
			var codes []int
			var last *httptest.ResponseRecorder
			for range 3 {
				req := httptest.NewRequest(w.method, w.path, strings.NewReader(body))
				req.RemoteAddr = "198.51.100." + strconv.Itoa(i+1) + ":5000"
				for j := 0; j+1 < len(w.hdr); j += 2 {
					req.Header.Set(w.hdr[j], w.hdr[j+1])
				}
				last = httptest.NewRecorder()
				h.ServeHTTP(last, req)
				codes = append(codes, last.Code)
			}
			if codes[2] != http.StatusTooManyRequests || codes[0] == http.StatusTooManyRequests {
				t.Fatalf("codes %v: want the third write refused with 429", codes)
			}
			// Two a minute: the next token is 30 s away.
			if ra, _ := strconv.Atoi(last.Header().Get("Retry-After")); ra < 25 || ra > 30 {
				t.Errorf("Retry-After: got %q, want the time until a token (about 30)", last.Header().Get("Retry-After"))
			}
		})
	}
}

// TestMaxStoreBytes: creates past the store's quota are a 507 with a
// one-line reason.
func TestMaxStoreBytes(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{MaxStoreBytes: 100})
	create(t, tn.URL, bytes.Repeat([]byte("a"), 60), "")
	r := do(t, http.MethodPost, tn.URL+"/", bytes.Repeat([]byte("b"), 60))
	r.wantStatus(t, http.StatusInsufficientStorage)
	r.wantReason(t, false)
	create(t, tn.URL, bytes.Repeat([]byte("c"), 40), "")
}

// TestTrustedProxies: X-Forwarded-* are believed from a trusted proxy only,
// for the returned URLs and for the rate limit's client address.
func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{RateLimit: 1, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	h := tn.server.Handler()
	post := func(peer, xff string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "http://node.internal/", strings.NewReader("hello"))
		req.RemoteAddr = peer + ":4000"
		req.Header.Set("X-Forwarded-Proto", "https")
		req.Header.Set("X-Forwarded-Host", "paste.example")
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := post("10.1.2.3", "203.0.113.9, 192.0.2.1")
	if rec.Code != http.StatusCreated || !strings.HasPrefix(rec.Body.String(), "https://paste.example/") {
		t.Fatalf("through a trusted proxy: got %d %q, want 201 and an https://paste.example/ URL", rec.Code, rec.Body)
	}
	// The client is the rightmost untrusted hop, 192.0.2.1; whatever it
	// writes to the left does not give it a new budget.
	if rec := post("10.1.2.3", "198.51.100.77, 192.0.2.1"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("same client, forged left hop: got %d, want 429", rec.Code)
	}
	if rec := post("10.1.2.3", "192.0.2.2, 10.9.9.9"); rec.Code != http.StatusCreated {
		t.Errorf("another client behind two proxies: got %d, want 201", rec.Code)
	}
	// From an untrusted peer the headers are ignored.
	rec = post("203.0.113.50", "192.0.2.99")
	if rec.Code != http.StatusCreated || !strings.HasPrefix(rec.Body.String(), "http://node.internal/") {
		t.Fatalf("from an untrusted peer: got %d %q, want 201 and the request's own host", rec.Code, rec.Body)
	}
	if rec := post("203.0.113.50", "192.0.2.100"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("untrusted peer with a new X-Forwarded-For: got %d, want 429 (the peer is the key)", rec.Code)
	}
}

// TestBurnViewNeverConsumes: GET /{id} never hands out a burn paste,
// whatever the Accept header; non-browsers get one line naming the raw URL.
func TestBurnViewNeverConsumes(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	id, _ := create(t, tn.URL, []byte("top secret"), "burn=1")
	for _, accept := range []string{"", "*/*", "text/*", "text/plain", "application/json", "text/html"} {
		r := do(t, http.MethodGet, tn.URL+"/"+id, nil, "Accept", accept)
		r.wantStatus(t, http.StatusOK)
		if bytes.Contains(r.body, []byte("top secret")) {
			t.Fatalf("GET /%s with Accept %q handed out the content", id, accept)
		}
		if accept != "text/html" && (!bytes.Contains(r.body, []byte("/raw/"+id)) || bytes.Count(r.body, []byte("\n")) != 1) {
			t.Errorf("Accept %q: got %q, want one line naming the raw URL", accept, r.body)
		}
	}
	// A consuming read ignores If-None-Match and Range.
	etag := do(t, http.MethodHead, tn.URL+"/raw/"+id, nil).Header.Get("Etag")
	r := do(t, http.MethodGet, tn.URL+"/raw/"+id, nil, "If-None-Match", etag, "Range", "bytes=0-2")
	r.wantStatus(t, http.StatusOK)
	if string(r.body) != "top secret" {
		t.Fatalf("consuming read: got %q, want the whole content", r.body)
	}
	do(t, http.MethodGet, tn.URL+"/raw/"+id, nil).wantStatus(t, http.StatusNotFound)
}

// TestExpireOverflow: expiries past 100 years are refused instead of
// overflowing into the past.
func TestExpireOverflow(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	for _, q := range []string{"expire=100000d", "expire=2562047h", "ttl=9223372036", "ttl=99999999999999",
		"expire=20000w", "expire=36526d", "expire=5218w", "expire=877000h", "expire=9223372036854775807ns"} {
		r := do(t, http.MethodPost, tn.URL+"/?"+q, []byte("x"))
		r.wantStatus(t, http.StatusBadRequest)
		r.wantReason(t, false)
	}
	for _, q := range []string{"expire=36525d", "expire=5217w", "ttl=3153600000"} {
		r := do(t, http.MethodPost, tn.URL+"/?"+q, []byte("x"))
		r.wantStatus(t, http.StatusCreated)
		readRaw(t, tn.URL, r.Header.Get("X-Paste-Id"), []byte("x"))
	}
}

// TestNoCleanRedirect: paths that mux would clean are a 404, not a 301.
func TestNoCleanRedirect(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	for _, p := range []string{"/raw/..%2f..%2fetc%2fpasswd", "/api/v1/pastes/..%2F..%2F", "/raw/../x", "//x", "/a/./b"} {
		req, _ := http.NewRequest(http.MethodGet, tn.URL+"/", nil)
		req.URL.Opaque = p // sent as written
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: got %d (Location %q), want 404", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}

// TestNosniffEverywhere: every answer says nosniff.
func TestNosniffEverywhere(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	id, _ := create(t, tn.URL, []byte("x"), "")
	checks := []response{
		do(t, http.MethodPost, tn.URL+"/", []byte("y")),
		do(t, http.MethodGet, tn.URL+"/api/v1/pastes/"+id, nil),
		do(t, http.MethodGet, tn.URL+"/api/v1/status", nil),
		do(t, http.MethodGet, tn.URL+"/healthz", nil),
		do(t, http.MethodGet, tn.URL+"/readyz", nil),
		do(t, http.MethodGet, tn.URL+"/metrics", nil),
		do(t, http.MethodGet, tn.URL+"/nosuch/path/here", nil),
		do(t, http.MethodPost, tn.URL+"/api/v1/snapshot", nil, asAdmin...),
	}
	for _, r := range checks {
		if r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s (%d): no nosniff", r.Request.Method, r.Request.URL.Path, r.StatusCode)
		}
	}
}

// TestHighlightBomb: a paste that takes chroma's makefile lexer tens of
// seconds is served within a second, and four parallel first views of
// another each answer within a second.
func TestHighlightBomb(t *testing.T) {
	t.Parallel()
	tn := startNodeBudget(t, Config{}, ui.DefaultHighlightBudget)
	bomb, _ := create(t, tn.URL, bytes.Repeat([]byte("a"), 32<<10), "lang=makefile")
	start := time.Now()
	do(t, http.MethodGet, tn.URL+"/"+bomb, nil, "Accept", "text/html").wantStatus(t, http.StatusOK)
	if took := time.Since(start); took > time.Second {
		t.Errorf("32 KiB makefile bomb: took %s, want under a second", took)
	}
	shared, _ := create(t, tn.URL, bytes.Repeat([]byte("a"), 16<<10), "lang=makefile")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			start := time.Now()
			r := do(t, http.MethodGet, tn.URL+"/"+shared, nil, "Accept", "text/html")
			if took := time.Since(start); took > time.Second || r.StatusCode != http.StatusOK {
				t.Errorf("parallel first view: %d after %s, want 200 within a second", r.StatusCode, took)
			}
		})
	}
	wg.Wait()
}

// TestRetryAfterNoQuorum: a write refused for want of a leader says to come
// back after about one election, not after a fixed second; one a busy
// cluster did not confirm in time says so, and not that there is no quorum,
// and marks its outcome unknown so that no client sends it again blindly.
// A node in no cluster says how to put it in one.
func TestRetryAfterNoQuorum(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{NoQuorumWait: 3500 * time.Millisecond})
	for _, c := range []struct {
		err        error
		retryAfter string
		reason     string
		outcome    string
	}{
		{node.ErrNoLeader, "4", "no quorum", ""},
		{node.ErrNoCluster, "4", "not in a cluster yet: run pastectl join\n", ""},
		{node.ErrTimeout, "1", "the cluster is busy; it may still be applied", "unknown"},
	} {
		rec := httptest.NewRecorder()
		tn.server.error(rec, httptest.NewRequest(http.MethodPost, "/", nil), fmt.Errorf("create: %w", c.err))
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != c.retryAfter || !strings.Contains(rec.Body.String(), c.reason) {
			t.Errorf("%v: got %d with Retry-After %q and %q, want 503, %s and %q", c.err, rec.Code, rec.Header().Get("Retry-After"), rec.Body.String(), c.retryAfter, c.reason)
		}
		if got := rec.Header().Get(pastenode.OutcomeHeader); got != c.outcome {
			t.Errorf("%v: %s %q, want %q", c.err, pastenode.OutcomeHeader, got, c.outcome)
		}
	}
}

func TestClientKey(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"},
		{"not an ip", "not an ip"},
	} {
		if got := ClientKey(c.in); got != c.want {
			t.Errorf("ClientKey(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestLimiterBounded: a stream of new clients never grows the limiter past
// maxClients, even when every one of them is busy, and a /64 is one client.
func TestLimiterBounded(t *testing.T) {
	l := newLimiter(60)
	for i := range maxClients + 500 {
		l.reserve(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255))
	}
	if n := len(l.clients); n > maxClients {
		t.Errorf("limiter holds %d clients, want at most %d", n, maxClients)
	}
	l = newLimiter(2)
	for i := range 3 {
		if wait := l.reserve(fmt.Sprintf("2001:db8::%x", i+1)); i < 2 && wait != 0 {
			t.Fatalf("write %d of a /64 refused", i)
		} else if i == 2 && wait == 0 {
			t.Error("a third write from the same /64 was let through: each address got its own budget")
		}
	}
}
