package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestPprofNeedsAdmin shows that /debug/pprof/ serves Go's profiles to an
// admin and nothing to anyone else.
func TestPprofNeedsAdmin(t *testing.T) {
	tn := startNode(t, Config{AdminToken: "s3cret"})
	tests := []struct {
		name, path, auth string
		want             int
		wantBody         string
	}{
		{"index without token", "/debug/pprof/", "", http.StatusUnauthorized, ""},
		{"heap without token", "/debug/pprof/heap?debug=1", "", http.StatusUnauthorized, ""},
		{"cpu profile with a wrong token", "/debug/pprof/profile?seconds=1", "Bearer wrong", http.StatusUnauthorized, ""},
		{"index", "/debug/pprof/", "Bearer s3cret", http.StatusOK, "goroutine"},
		{"heap", "/debug/pprof/heap?debug=1", "Bearer s3cret", http.StatusOK, "heap profile"},
		{"goroutines", "/debug/pprof/goroutine?debug=1", "Bearer s3cret", http.StatusOK, "goroutine profile"},
		{"cmdline", "/debug/pprof/cmdline", "Bearer s3cret", http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, http.MethodGet, tn.URL+tt.path, nil, "Authorization", tt.auth)
			r.wantStatus(t, tt.want)
			if !strings.Contains(string(r.body), tt.wantBody) {
				t.Errorf("body %.200q lacks %q", r.body, tt.wantBody)
			}
		})
	}

	// Without the token, loopback is refused too: a reverse proxy on the
	// same host would make every client local.
	do(t, http.MethodGet, tn.URL+"/debug/pprof/heap", nil).wantStatus(t, http.StatusUnauthorized)
	cfg := tn.cfg
	cfg.AdminToken = ""
	cfg.Store, cfg.UI = tn.node, tn.server.cfg.UI
	closed, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := serve(closed.Handler(), http.MethodGet, "/debug/pprof/heap").Code; got != http.StatusForbidden {
		t.Errorf("heap from a node without an admin token: got %d, want 403", got)
	}
}
