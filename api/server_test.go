package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pastenode/pastenode"
)

func TestAdminToken(t *testing.T) {
	t.Parallel()
	const admin = "admin-secret"
	tn := startNode(t, Config{AdminToken: admin})
	create(t, tn.URL, []byte("something to snapshot"), "")
	tests := []struct {
		name string
		auth string
		want []int
	}{
		{"none", "", []int{401}},
		{"wrong", "Bearer nope", []int{401}},
		{"no bearer prefix", admin, []int{401}},
		{"right", "Bearer " + admin, []int{200, 204}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, http.MethodPost, tn.URL+"/api/v1/snapshot", nil, "Authorization", tt.auth, "Content-Type", "application/json")
			if !containsInt(tt.want, r.StatusCode) {
				t.Fatalf("POST /api/v1/snapshot: got %d, want one of %v; body %q", r.StatusCode, tt.want, r.body)
			}
			if r.StatusCode >= 400 {
				r.wantReason(t, true)
			}
		})
	}
}

// TestAdminNeedsToken: admin calls always need the token. A node without
// one refuses them from loopback too, where a reverse proxy on the same
// host would put every client.
func TestAdminNeedsToken(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	create(t, tn.URL, []byte("something to snapshot"), "")

	r := do(t, http.MethodPost, tn.URL+"/api/v1/snapshot", nil, asAdmin...)
	r.wantStatus(t, http.StatusOK)
	var snap struct{ Index uint64 }
	if err := json.Unmarshal(r.body, &snap); err != nil || snap.Index == 0 {
		t.Errorf("snapshot answer: got %s (%v), want an index", r.body, err)
	}
	// Nothing was written since: there is nothing new to snapshot.
	if r := do(t, http.MethodPost, tn.URL+"/api/v1/snapshot", nil, asAdmin...); r.StatusCode != http.StatusNoContent {
		t.Errorf("second snapshot: got %d, want 204", r.StatusCode)
	}
	// From loopback, without the token: refused.
	for _, path := range []string{"/api/v1/snapshot", "/api/v1/cluster/join"} {
		r := do(t, http.MethodPost, tn.URL+path, []byte(`{"addrs":["127.0.0.1:1"]}`), "Content-Type", "application/json")
		r.wantStatus(t, http.StatusUnauthorized)
	}
	do(t, http.MethodGet, tn.URL+"/api/v1/export.cdb", nil).wantStatus(t, http.StatusUnauthorized)

	// A node configured without a token refuses every admin call.
	cfg := tn.cfg
	cfg.AdminToken = ""
	cfg.Store, cfg.UI = tn.node, tn.server.cfg.UI
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range []string{"", "Bearer ", "Bearer " + testAdmin} {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/snapshot", nil)
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req) // RemoteAddr 192.0.2.1; loopback is no different
		if rec.Code != http.StatusForbidden {
			t.Errorf("snapshot on a node without a token, Authorization %q: got %d, want 403", auth, rec.Code)
		}
	}
}

// TestAdminContentType: an admin POST must say application/json, which a
// cross-site form cannot send.
func TestAdminContentType(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		for _, path := range []string{"/api/v1/snapshot", "/api/v1/cluster/join"} {
			r := do(t, http.MethodPost, tn.URL+path, []byte(`{"addrs":["127.0.0.1:1"]}`),
				"Authorization", "Bearer "+testAdmin, "Content-Type", ct)
			r.wantStatus(t, http.StatusUnsupportedMediaType)
			r.wantReason(t, true)
		}
	}
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func TestOperations(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	for range 3 {
		create(t, tn.URL, []byte("counted"), "")
	}

	h := do(t, http.MethodGet, tn.URL+"/healthz", nil)
	h.wantStatus(t, http.StatusOK)
	if got := strings.TrimSpace(string(h.body)); got != "ok" {
		t.Errorf("/healthz: got %q, want ok", got)
	}
	// Raft raises the commit index a moment before it records the entry as
	// applied, so /readyz may say 503 for that moment after a write.
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		waitFor(t, 5*time.Second, method+" /readyz is 200", func() error {
			if r := do(t, method, tn.URL+"/readyz", nil); r.StatusCode != http.StatusOK {
				return fmt.Errorf("got %d: %s", r.StatusCode, r.body)
			}
			return nil
		})
	}

	do(t, http.MethodGet, tn.URL+"/no/such/route", nil).wantStatus(t, http.StatusNotFound)
	do(t, http.MethodPut, tn.URL+"/api/v1/status", nil).wantStatus(t, http.StatusMethodNotAllowed)
	m := do(t, http.MethodGet, tn.URL+"/metrics", nil)
	m.wantStatus(t, http.StatusOK)
	for _, want := range []string{"pastenode_http_requests_total{", "pastenode_pastes 3", "pastenode_raft_leader 1",
		`pastenode_http_requests_total{code="404",method="GET",route="unknown"} 1`,
		`pastenode_http_requests_total{code="405",method="PUT",route="unknown"} 1`} {
		if !bytes.Contains(m.body, []byte(want)) {
			t.Errorf("/metrics has no %q", want)
		}
	}

	s := do(t, http.MethodGet, tn.URL+"/api/v1/status", nil)
	s.wantStatus(t, http.StatusOK)
	var st pastenode.Status
	if err := json.Unmarshal(s.body, &st); err != nil {
		t.Fatalf("status %s: %v", s.body, err)
	}
	if st.Node.ID != tn.id || st.Node.State != "leader" || st.Node.LeaderID != tn.id {
		t.Errorf("status node: got id %q state %q leader %q, want %q, leader, %q",
			st.Node.ID, st.Node.State, st.Node.LeaderID, tn.id, tn.id)
	}
	if st.Store.Pastes != 3 || st.Store.Bytes != 3*int64(len("counted")) {
		t.Errorf("status store: got %+v, want 3 pastes of 7 bytes", st.Store)
	}
	if st.Node.Term == 0 || st.Node.AppliedIndex < st.Node.CommitIndex || st.Node.CommitIndex == 0 {
		t.Errorf("status raft: got %+v", st.Node)
	}
}

func TestRestart(t *testing.T) {
	t.Parallel()
	for _, snapshot := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%v", snapshot), func(t *testing.T) {
			t.Parallel()
			tn := startNode(t, Config{})
			live := map[string][]byte{}
			add := func(content []byte, query string) string {
				id, _ := create(t, tn.URL, content, query)
				live[id] = content
				return id
			}
			add([]byte("text paste\n"), "")
			add([]byte{0, 0xff, 1, 0xfe}, "title=bin")
			add([]byte("func main() {}\n"), "lang=go&expire=1h")
			keptBurn := add([]byte("burn kept for later"), "burn=true")
			burned, _ := create(t, tn.URL, []byte("burned before restart"), "burn=true")
			readRaw(t, tn.URL, burned, []byte("burned before restart"))
			deleted, token := create(t, tn.URL, []byte("deleted before restart"), "")
			do(t, http.MethodDelete, tn.URL+"/"+deleted, nil, "X-Delete-Token", token).wantStatus(t, http.StatusNoContent)

			if snapshot {
				do(t, http.MethodPost, tn.URL+"/api/v1/snapshot", nil, asAdmin...).wantStatus(t, http.StatusOK)
				// And some log after the snapshot.
				add([]byte("after the snapshot"), "")
			}
			tn.restart(t)

			delete(live, keptBurn)
			for id, content := range live {
				readRaw(t, tn.URL, id, content)
			}
			for _, id := range []string{burned, deleted} {
				do(t, http.MethodGet, tn.URL+"/raw/"+id, nil).wantStatus(t, http.StatusNotFound)
			}
			readRaw(t, tn.URL, keptBurn, []byte("burn kept for later"))
			do(t, http.MethodGet, tn.URL+"/raw/"+keptBurn, nil).wantStatus(t, http.StatusNotFound)
		})
	}
}
