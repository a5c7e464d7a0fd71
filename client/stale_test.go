package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestStaleReads(t *testing.T) {
	got := map[string]string{} // method -> X-Paste-Stale
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got[r.Method] = r.Header.Get("X-Paste-Stale")
		if r.Method == http.MethodPost {
			w.Header().Set("X-Paste-Id", "p1")
			w.Header().Set("Location", "http://x/p1")
			w.WriteHeader(http.StatusCreated)
			return
		}
		io.WriteString(w, "hi")
	}))
	defer srv.Close()
	for _, stale := range []bool{false, true} {
		clear(got)
		c, err := New([]string{srv.URL}, Options{Stale: stale})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Get(context.Background(), "p1"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Put(context.Background(), strings.NewReader("x"), PutOptions{}); err != nil {
			t.Fatal(err)
		}
		want := ""
		if stale {
			want = "true"
		}
		if got[http.MethodGet] != want || got[http.MethodPost] != "" {
			t.Errorf("Stale %v: GET sent X-Paste-Stale %q, POST %q; want %q and none", stale, got[http.MethodGet], got[http.MethodPost], want)
		}
	}
}
