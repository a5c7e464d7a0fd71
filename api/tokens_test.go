package api

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/pastenode/pastenode"
)

func TestParseCreateTokens(t *testing.T) {
	got, err := parseCreateTokens([]byte("# ci and people\n\nci:tok-ci\n  tok-plain  \nalice : tok-alice\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []createToken{{"ci", []byte("tok-ci")}, {"unnamed", []byte("tok-plain")}, {"alice", []byte("tok-alice")}}
	if len(got) != len(want) {
		t.Fatalf("got %d tokens, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].name != want[i].name || !bytes.Equal(got[i].value, want[i].value) {
			t.Errorf("token %d: got %s:%s, want %s:%s", i, got[i].name, got[i].value, want[i].name, want[i].value)
		}
	}
	for _, bad := range []string{"", "# only a comment\n", "name:\n", ":tok\n", "two words\n"} {
		if _, err := parseCreateTokens([]byte(bad)); err == nil {
			t.Errorf("parseCreateTokens(%q): no error", bad)
		}
	}
}

// tokenNode starts a node that requires the tokens in a file it returns.
func tokenNode(t *testing.T, content string, log *bytes.Buffer) (*testNode, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{CreateTokensFile: file, AdminToken: "admin-secret"}
	if log != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return startNode(t, cfg), file
}

func TestCreateTokensRequired(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	tn, _ := tokenNode(t, "ci:tok-ci-123\ntok-plain-456\n", &logs)
	jsonBody, _ := json.Marshal(pastenode.CreateRequest{Content: "json paste"})
	form, formType := multipartBody(t, map[string]string{"content": "form paste", "token": "tok-plain-456"}, nil)
	badForm, badType := multipartBody(t, map[string]string{"content": "form paste", "token": "nope"}, nil)

	tests := []struct {
		name     string
		path     string
		body     []byte
		headers  []string
		want     int
		wantJSON bool
	}{
		{"raw without token", "/", []byte("x"), nil, http.StatusUnauthorized, false},
		{"raw wrong token", "/", []byte("x"), []string{"X-Paste-Token", "tok-ci"}, http.StatusUnauthorized, false},
		{"raw bearer", "/", []byte("x"), []string{"Authorization", "Bearer tok-ci-123"}, http.StatusCreated, false},
		{"raw header", "/", []byte("x"), []string{"X-Paste-Token", "tok-plain-456"}, http.StatusCreated, false},
		{"raw admin token", "/", []byte("x"), []string{"Authorization", "Bearer admin-secret"}, http.StatusCreated, false},
		{"json without token", "/api/v1/pastes", jsonBody, []string{"Content-Type", "application/json"}, http.StatusUnauthorized, true},
		{"json header", "/api/v1/pastes", jsonBody, []string{"Content-Type", "application/json", "X-Paste-Token", "tok-ci-123"}, http.StatusCreated, true},
		{"form field", "/", form, []string{"Content-Type", formType}, http.StatusCreated, false},
		{"form wrong field", "/", badForm, []string{"Content-Type", badType}, http.StatusUnauthorized, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, http.MethodPost, tn.URL+tt.path, tt.body, tt.headers...)
			r.wantStatus(t, tt.want)
			if tt.want != http.StatusUnauthorized {
				return
			}
			if got := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer ") {
				t.Errorf("WWW-Authenticate: got %q, want a Bearer challenge", got)
			}
			r.wantReason(t, tt.wantJSON)
		})
	}

	// Reads stay open.
	id, _ := create(t, tn.URL, []byte("open read"), "", "X-Paste-Token", "tok-ci-123")
	do(t, http.MethodGet, tn.URL+"/raw/"+id, nil).wantStatus(t, http.StatusOK)

	metrics := string(do(t, http.MethodGet, tn.URL+"/metrics", nil).body)
	for _, want := range []string{`pastenode_token_creates_total{token="ci"} 3`,
		`pastenode_token_creates_total{token="unnamed"} 2`, `pastenode_token_creates_total{token="admin"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	for _, secret := range []string{"tok-ci-123", "tok-plain-456", "admin-secret"} {
		if strings.Contains(metrics, secret) || strings.Contains(logs.String(), secret) {
			t.Errorf("a token appears in the metrics or the log: %s", secret)
		}
	}
}

func TestCreateTokensReload(t *testing.T) {
	t.Parallel()
	tn, file := tokenNode(t, "old-token\n", nil)
	create(t, tn.URL, []byte("x"), "", "X-Paste-Token", "old-token")

	if err := os.WriteFile(file, []byte("# rotated\nnew:new-token-longer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the new token to be accepted", func() error {
		r := do(t, http.MethodPost, tn.URL+"/", []byte("x"), "X-Paste-Token", "new-token-longer")
		if r.StatusCode != http.StatusCreated {
			return errorf(r.StatusCode, "got %d", r.StatusCode)
		}
		return nil
	})
	do(t, http.MethodPost, tn.URL+"/", []byte("x"), "X-Paste-Token", "old-token").wantStatus(t, http.StatusUnauthorized)

}

func TestCreateTokensBrokenFileKeepsTokens(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("ci:good\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ct, err := loadCreateTokens(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("# emptied by mistake\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	name, ok, reloadErr := ct.match("good", time.Now().Add(2*tokenRecheck))
	if !ok || name != "ci" || reloadErr == nil {
		t.Errorf("after a broken reload: got %q, %v, %v; want ci, true and the reload error", name, ok, reloadErr)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if _, ok, reloadErr := ct.match("good", time.Now().Add(4*tokenRecheck)); !ok || reloadErr == nil {
		t.Errorf("after the file went away: got %v, %v; want true and an error", ok, reloadErr)
	}
}

func TestIndexTokenField(t *testing.T) {
	t.Parallel()
	open := startNode(t, Config{})
	closed, _ := tokenNode(t, "tok\n", nil)
	if page := string(do(t, http.MethodGet, open.URL+"/", nil, "Accept", "text/html").body); strings.Contains(page, `id="token"`) {
		t.Error("the form of an open node shows a token field")
	}
	if page := string(do(t, http.MethodGet, closed.URL+"/", nil, "Accept", "text/html").body); !strings.Contains(page, `name="token"`) {
		t.Error("the form of a node with --create-tokens has no token field")
	}
}

// TestEveryCreateRouteNeedsToken walks the router: every route that takes
// a POST or PUT and is not an admin call or a burn reveal is a create, and
// must refuse a request without a token. A create route added later
// without the check fails here.
func TestEveryCreateRouteNeedsToken(t *testing.T) {
	t.Parallel()
	tn, _ := tokenNode(t, "tok\n", nil)
	notCreates := map[string]bool{"join": true, "snapshot": true, "reveal": true, "remove": true}
	var checked []string
	err := tn.server.router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		methods, _ := route.GetMethods()
		path, err := route.GetPathTemplate()
		if err != nil || notCreates[route.GetName()] {
			return nil
		}
		for _, m := range methods {
			if m != http.MethodPost && m != http.MethodPut {
				continue
			}
			path = strings.ReplaceAll(path, "{id}", "someid")
			r := do(t, m, tn.URL+path, []byte(`{"content":"x"}`), "Content-Type", "application/json")
			if r.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s (route %s) without a token: got %d, want 401", m, path, route.GetName(), r.StatusCode)
			}
			checked = append(checked, m+" "+path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(checked) < 2 {
		t.Fatalf("checked only %v: want at least POST / and POST /api/v1/pastes", checked)
	}
}
