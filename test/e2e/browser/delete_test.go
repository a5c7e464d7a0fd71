package browser

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// requestLog records the URL and Referer of every request a tab sends.
type requestLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *requestLog) listen(t *testing.T, ctx context.Context) {
	t.Helper()
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			l.mu.Lock()
			l.seen = append(l.seen, e.Request.URL+e.Request.URLFragment, fmt.Sprint(e.Request.Headers["Referer"]))
			l.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("listen to requests: %v", err)
	}
}

// containing returns the recorded URLs and Referers that contain s.
func (l *requestLog) containing(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, u := range l.seen {
		if strings.Contains(u, s) {
			out = append(out, u)
		}
	}
	return out
}

// TestDeleteControl creates a paste in the browser, at the root and under
// a base path, and deletes it from its page with the token the create
// script kept in localStorage; the token is in no request URL.
func TestDeleteControl(t *testing.T) {
	for name, base := range map[string]*string{"root": &suite.baseURL, "base path": &suite.prefixURL} {
		t.Run(name, func(t *testing.T) { testDelete(t, *base) })
	}
}

func testDelete(t *testing.T, base string) {
	ctx := newTab(t)
	var log requestLog
	log.listen(t, ctx)
	const secret = "a secret posted by mistake\n"
	do(t, ctx, "open the form",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS("form#new-paste")),
		chromedp.SetValue(chromedp.CSS("textarea[name=content]"), secret),
		chromedp.Click(chromedp.ID("submit")),
	)
	waitJS(t, ctx, "the new paste's page", `document.readyState === "complete" && document.querySelector("main article.paste")`)
	u := location(t, ctx)
	id := strings.TrimPrefix(u.String(), base+"/")
	if id == "" || strings.ContainsAny(id, "/?#") {
		t.Fatalf("the create ended on %s, not a paste page under %s", u, base)
	}
	token := eval[string](t, ctx, `localStorage.getItem("pastenode.delete-token." + `+jsString(id)+`) || ""`)
	if len(token) < 20 {
		t.Fatalf("localStorage holds token %q for %s, want the delete token", token, id)
	}

	waitJS(t, ctx, "the delete button", `!document.getElementById("delete").hidden`)
	do(t, ctx, "ask to delete, then keep it",
		chromedp.Click(chromedp.ID("delete")),
		chromedp.WaitVisible(chromedp.ID("delete-confirm")),
		chromedp.Click(chromedp.ID("delete-no")),
		chromedp.WaitNotVisible(chromedp.ID("delete-confirm")),
	)
	if code := rawStatus(t, base, id); code != http.StatusOK {
		t.Fatalf("after Keep it: GET /raw/%s = %d, want the paste", id, code)
	}
	do(t, ctx, "delete it",
		chromedp.Click(chromedp.ID("delete")),
		chromedp.Click(chromedp.ID("delete-yes"), chromedp.NodeVisible),
	)
	waitJS(t, ctx, "the page to say it is gone", `document.body.getAttribute("data-deleted") === "true" &&
		document.getElementById("delete-status").textContent.includes("deleted") && document.getElementById("paste").hidden`)
	if code := rawStatus(t, base, id); code != http.StatusNotFound {
		t.Errorf("after the delete: GET /raw/%s = %d, want 404", id, code)
	}
	if left := eval[bool](t, ctx, `localStorage.getItem("pastenode.delete-token." + `+jsString(id)+`) !== null`); left {
		t.Error("the token is still in localStorage after the delete")
	}
	if urls := log.containing(token); len(urls) > 0 {
		t.Errorf("the delete token is in request URLs or Referers: %q", urls)
	}
	if len(log.containing(id)) == 0 {
		t.Error("the request log saw no request for the paste: it records nothing")
	}

	// A paste this browser did not make has no delete control.
	other := postPaste(t, base, "made by curl\n", "")
	do(t, ctx, "open another paste", chromedp.Navigate(base+"/"+other), chromedp.WaitVisible(chromedp.ID("paste")))
	if shown := eval[bool](t, ctx, `!document.getElementById("delete").hidden`); shown {
		t.Error("the delete button shows on a paste made elsewhere")
	}
}

// rawStatus is the status of GET base/raw/id, outside the browser.
func rawStatus(t *testing.T, base, id string) int {
	t.Helper()
	res, err := http.Get(base + "/raw/" + id)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestDeleteBurnUnread deletes a burn paste this browser made from its
// burn notice, before anyone has read it.
func TestDeleteBurnUnread(t *testing.T) {
	ctx := newTab(t)
	fillForm(t, ctx, pasteForm{content: "burn me unread\n", burn: true})
	do(t, ctx, "submit", chromedp.Click(chromedp.ID("submit")))
	waitJS(t, ctx, "the burn notice", `document.readyState === "complete" && document.getElementById("reveal")`)
	id := pasteID(t, location(t, ctx))
	waitJS(t, ctx, "the delete button", `!document.getElementById("delete").hidden`)
	do(t, ctx, "delete it unread",
		chromedp.Click(chromedp.ID("delete")),
		chromedp.Click(chromedp.ID("delete-yes"), chromedp.NodeVisible),
	)
	waitJS(t, ctx, "the page to say it is gone", `document.body.getAttribute("data-deleted") === "true" && document.getElementById("burn").hidden`)
	if code := rawStatus(t, suite.baseURL, id); code != http.StatusNotFound {
		t.Errorf("after the delete: GET /raw/%s = %d, want 404", id, code)
	}
}
