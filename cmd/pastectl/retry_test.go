package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestPutRetriesRateLimit: a 429 with Retry-After is waited out and the
// create made again within --timeout, saying so on stderr; a wait past
// --timeout is not begun.
func TestPutRetriesRateLimit(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many writes from your address, retry in 1s", http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Location", "http://h/x1")
		w.Header().Set("X-Paste-Id", "x1")
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)

	code, stdout, stderr := pastectl(t, "content", "--addr", srv.URL, "--timeout", "5s", "put")
	if code != 0 || stdout != "http://h/x1\n" || calls.Load() != 2 ||
		!strings.HasPrefix(stderr, "pastectl: 429 Too Many Requests: too many writes from your address, retry in 1s; retrying in 1s\n") {
		t.Errorf("exit %d, %d calls, stdout %q, stderr %q; want the retry told and the paste made", code, calls.Load(), stdout, stderr)
	}

	calls.Store(0)
	code, _, stderr = pastectl(t, "content", "--addr", srv.URL, "--timeout", "500ms", "put")
	if code != 1 || calls.Load() != 1 || stderr != "pastectl: 429 Too Many Requests: too many writes from your address, retry in 1s\n" {
		t.Errorf("--timeout shorter than Retry-After: exit %d, %d calls, stderr %q; want 1 at once", code, calls.Load(), stderr)
	}
}
