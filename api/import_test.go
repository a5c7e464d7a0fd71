package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pastenode/pastenode"
)

// putImport sends an import of content under id with the query q, as an
// admin unless headers say otherwise.
func putImport(t *testing.T, base, id string, content []byte, q url.Values, headers ...string) response {
	t.Helper()
	u := base + "/api/v1/pastes/" + id
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	if headers == nil {
		headers = []string{"Authorization", "Bearer " + testAdmin}
	}
	return do(t, http.MethodPut, u, content, headers...)
}

func TestImport(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	created := time.Date(2020, 2, 29, 12, 0, 0, 0, time.UTC)
	expires := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Second)
	// Not UTF-8, with a NUL: an import keeps every byte.
	content := []byte("U2FsdGVkX1\x00\xff\xfe old bytes\n")
	q := url.Values{
		"title": {"from the old one"}, "lang": {"python"}, "encrypted": {"true"},
		"created_at": {created.Format(time.RFC3339)}, "expires_at": {expires.Format(time.RFC3339)},
	}
	const id = "0ld-L1nk_Il0O"
	r := putImport(t, tn.URL, id, content, q)
	r.wantStatus(t, http.StatusCreated)
	var c pastenode.Created
	if err := json.Unmarshal(r.body, &c); err != nil {
		t.Fatalf("import answer %q: %v", r.body, err)
	}
	if c.ID != id || !strings.HasSuffix(c.URL, "/"+id) || c.DeleteToken == "" || c.ExpiresAt == nil || !c.ExpiresAt.Equal(expires) {
		t.Errorf("import answer: %+v; want the id kept, its URL, a delete token and the expiry given", c)
	}
	readRaw(t, tn.URL, id, content)
	m := meta(t, tn.URL, id)
	if !m.CreatedAt.Equal(created) || m.ExpiresAt == nil || !m.ExpiresAt.Equal(expires) ||
		m.Title != "from the old one" || m.Lang != "Python" || !m.Encrypted || m.Burn {
		t.Errorf("metadata: %+v; want the times, title, lang and flags of the import", m)
	}

	// The same id again: 409, nothing changes and nothing is proposed.
	before := tn.node.Info().CommitIndex
	again := putImport(t, tn.URL, id, []byte("another"), nil)
	again.wantStatus(t, http.StatusConflict)
	again.wantReason(t, true)
	readRaw(t, tn.URL, id, content)
	if after := tn.node.Info().CommitIndex; after != before {
		t.Errorf("a taken id moved the commit index from %d to %d: it was proposed", before, after)
	}

	// An id a create drew, and an id deleted moments ago, are taken too.
	drawn, token := create(t, tn.URL, []byte("drawn"), "")
	putImport(t, tn.URL, drawn, []byte("x"), nil).wantStatus(t, http.StatusConflict)
	do(t, http.MethodDelete, tn.URL+"/"+drawn, nil, "X-Delete-Token", token).wantStatus(t, http.StatusNoContent)
	putImport(t, tn.URL, drawn, []byte("x"), nil).wantStatus(t, http.StatusConflict)

	// No times: created now, never expires. burn=true burns as any paste.
	before2 := time.Now()
	putImport(t, tn.URL, "burn-me-once", []byte("once"), url.Values{"burn": {"true"}}).wantStatus(t, http.StatusCreated)
	if m := meta(t, tn.URL, "burn-me-once"); m.CreatedAt.Before(before2.Add(-time.Second)) || m.ExpiresAt != nil || !m.Burn {
		t.Errorf("import without times: %+v; want created now, never expiring, burning", m)
	}
	readRaw(t, tn.URL, "burn-me-once", []byte("once"))
	do(t, http.MethodGet, tn.URL+"/raw/burn-me-once", nil).wantStatus(t, http.StatusNotFound)
}

func TestImportIsAdminOnly(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{})
	for _, h := range [][]string{
		{"Content-Type", "text/plain"},
		{"Authorization", "Bearer wrong"},
		{"Authorization", "Basic " + testAdmin},
	} {
		r := putImport(t, tn.URL, "not-for-you", []byte("x"), nil, h...)
		r.wantStatus(t, http.StatusUnauthorized)
		r.wantReason(t, true)
	}
	do(t, http.MethodGet, tn.URL+"/api/v1/pastes/not-for-you", nil).wantStatus(t, http.StatusNotFound)

	// A node without an admin token refuses it whatever is sent.
	cfg := tn.cfg
	cfg.AdminToken = ""
	cfg.Store, cfg.UI = tn.node, tn.server.cfg.UI
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPut, "/api/v1/pastes/not-for-you", strings.NewReader("x"))
	req.Header.Set("Authorization", "Bearer "+testAdmin)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("import on a node without an admin token: got %d, want 403", rec.Code)
	}
}

func TestImportStoreFull(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{MaxStoreBytes: 8})
	putImport(t, tn.URL, "fits-in-it", []byte("12345678"), nil).wantStatus(t, http.StatusCreated)
	r := putImport(t, tn.URL, "one-too-many", []byte("9"), nil)
	r.wantStatus(t, http.StatusInsufficientStorage)
	r.wantReason(t, true)
}

func TestImportBadInput(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{MaxPasteSize: 64})
	now := time.Now().UTC()
	for _, c := range []struct {
		name, id string
		content  []byte
		q        url.Values
		code     int
		reason   string
	}{
		{"short id", "short", []byte("x"), nil, 400, "want 10 to 64"},
		{"long id", strings.Repeat("a", 65), []byte("x"), nil, 400, "want 10 to 64"},
		{"dotted id", "has.a.dot.in", []byte("x"), nil, 400, "letters, digits, - and _"},
		{"escaped id", "abc%20defghijk", []byte("x"), nil, 400, "letters, digits"},
		{"empty", "empty-paste", nil, nil, 400, "empty paste"},
		{"too large", "large-paste", bytes.Repeat([]byte("x"), 65), nil, 413, "larger than"},
		{"unknown lang", "lang-paste1", []byte("x"), url.Values{"lang": {"nobodys"}}, 400, "unknown lang"},
		{"bad burn", "burn-paste1", []byte("x"), url.Values{"burn": {"maybe"}}, 400, "bad burn"},
		{"relative expiry", "rel-expiry1", []byte("x"), url.Values{"expire": {"1h"}}, 400, "expires_at"},
		{"ttl", "ttl-expiry1", []byte("x"), url.Values{"ttl": {"60"}}, 400, "expires_at"},
		{"bad created", "bad-created", []byte("x"), url.Values{"created_at": {"yesterday"}}, 400, "RFC 3339"},
		{"future created", "future-made", []byte("x"), url.Values{"created_at": {now.Add(time.Hour).Format(time.RFC3339)}}, 400, "in the future"},
		{"before 1970", "very-old-one", []byte("x"), url.Values{"created_at": {"1960-01-01T00:00:00Z"}}, 400, "before 1970"},
		{"bad expires", "bad-expires", []byte("x"), url.Values{"expires_at": {"1700000000"}}, 400, "RFC 3339"},
		{"expired", "expired-one", []byte("x"), url.Values{"expires_at": {now.Add(-time.Minute).Format(time.RFC3339)}}, 400, "has passed"},
		{"too far", "far-future1", []byte("x"), url.Values{"expires_at": {"2999-01-01T00:00:00Z"}}, 400, "100 years"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := putImport(t, tn.URL, c.id, c.content, c.q)
			r.wantStatus(t, c.code)
			if reason := r.wantReason(t, true); !strings.Contains(reason, c.reason) {
				t.Errorf("reason %q: want it to say %q", reason, c.reason)
			}
		})
	}
	if n, _ := tn.node.Stats(); n != 0 {
		t.Errorf("the store holds %d pastes after refused imports, want none", n)
	}
}

// A migration sends one write per paste: the import is not held to the
// rate limit that a create from the same address is.
func TestImportIsNotRateLimited(t *testing.T) {
	t.Parallel()
	tn := startNode(t, Config{RateLimit: 1})
	create(t, tn.URL, []byte("the one create a minute"), "")
	do(t, http.MethodPost, tn.URL+"/", []byte("one too many"), "Content-Type", formType).wantStatus(t, http.StatusTooManyRequests)
	for _, id := range []string{"imported-01", "imported-02", "imported-03", "imported-04"} {
		putImport(t, tn.URL, id, []byte(id), nil).wantStatus(t, http.StatusCreated)
	}
}
