package browser

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pastenode/pastenode/ui"
)

// TestMirrorTimesReadRelative opens a mirror's page of a paste, which
// carries fixed UTC times so that an export stays true, and checks that
// the script shows them relative to the reader's clock, as a live page
// says them.
func TestMirrorTimesReadRelative(t *testing.T) {
	ctx := newTab(t)
	u, err := ui.New(ui.Options{Mirror: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	p := ui.Paste{ID: "mirrored", Content: []byte("hello\n"), CreatedAt: now.Add(-3 * time.Hour), ExpiresAt: now.Add(50 * time.Hour)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name, ok := strings.CutPrefix(r.URL.Path, "/static/"); ok {
			body, ctype, found := u.Asset(name)
			if !found {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", ctype)
			w.Write(body)
			return
		}
		h := w.Header()
		ui.SetPageHeaders(h)
		// A month after the export: the page must not say "just now".
		if err := u.Paste(w, p, now.Add(-30*24*time.Hour)); err != nil {
			t.Error(err)
		}
	}))
	defer srv.Close()

	reload(t, ctx, srv.URL+"/"+p.ID)
	waitJS(t, ctx, "the times read relative", `!document.querySelector("time[data-relative]").textContent.includes("UTC")`)
	got := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("time[data-relative]")).map(el => el.textContent)`)
	if want := []string{"3 hours ago", "in 2 days"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the page's times read %q, want %q", got, want)
	}
}
