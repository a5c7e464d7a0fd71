package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/node"
	"github.com/pastenode/pastenode/ui"
)

// cutOffStore is a node that cannot confirm any read with the cluster, as
// one cut off from the quorum: only stale reads answer, from its copy.
type cutOffStore struct{ *node.Node }

func (s cutOffStore) Read(ctx context.Context, id string, stale bool) (*fsm.Paste, error) {
	if stale {
		return s.Node.Read(ctx, id, true)
	}
	return nil, node.ErrUnavailable
}

func (s cutOffStore) ReadRaw(ctx context.Context, id string, stale bool, into *fsm.Paste, buf []byte) ([]byte, *fsm.Content, error) {
	p, err := s.Read(ctx, id, stale)
	if err != nil {
		return buf, nil, err
	}
	*into = *p
	return buf, nil, nil
}

// TestUnconfirmedReadsAre503: a read the node cannot confirm answers 503
// with Retry-After on every read path, never 404 and never the content;
// ?stale=true or X-Paste-Stale: true answers from the local copy.
func TestUnconfirmedReadsAre503(t *testing.T) {
	tn := startNode(t, Config{})
	id, _ := create(t, tn.URL, []byte("kept"), "")
	pages, err := ui.New(ui.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(Config{Store: cutOffStore{tn.node}, UI: pages, MaxPasteSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	get := func(path string, header ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, path := range []string{"/raw/" + id, "/" + id, "/api/v1/pastes/" + id, "/raw/nosuchpaste"} {
		rec := get(path)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Errorf("GET %s: %d, Retry-After %q; want 503 with Retry-After", path, rec.Code, rec.Header().Get("Retry-After"))
		}
		if strings.Contains(rec.Body.String(), "kept") {
			t.Errorf("GET %s: the content in a 503", path)
		}
	}
	for _, rec := range []*httptest.ResponseRecorder{
		get("/raw/" + id + "?stale=true"),
		get("/raw/"+id, "X-Paste-Stale", "true"),
	} {
		if body, _ := io.ReadAll(rec.Body); rec.Code != http.StatusOK || string(body) != "kept" {
			t.Errorf("stale read: %d %q; want 200 with the local copy", rec.Code, body)
		}
	}
	if rec := get("/raw/nosuchpaste?stale=1"); rec.Code != http.StatusNotFound {
		t.Errorf("stale miss: %d, want 404", rec.Code)
	}
}
