package browser

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// openMine opens the front page and waits until its list of this
// browser's pastes has n entries, and returns the text of each by id.
func openMine(t *testing.T, ctx context.Context, n int) map[string]string {
	t.Helper()
	reload(t, ctx, suite.baseURL+"/")
	waitJS(t, ctx, fmt.Sprintf("%d pastes listed", n), fmt.Sprintf(`document.querySelectorAll("#mine-list > li").length === %d`, n))
	return eval[map[string]string](t, ctx, `Object.fromEntries(Array.from(document.querySelectorAll("#mine-list > li"), li => [li.dataset.id, li.innerText]))`)
}

// storedList is the list as the page keeps it in localStorage.
func storedList(t *testing.T, ctx context.Context) string {
	t.Helper()
	return eval[string](t, ctx, `localStorage.getItem("pastenode.pastes") || ""`)
}

// waitRequested waits until the tab has asked the server about each of
// the pastes.
func waitRequested(t *testing.T, log *requestLog, ids ...string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for _, id := range ids {
		for len(log.containing("/api/v1/pastes/"+id)) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the page never asked about paste %s", id)
			}
			time.Sleep(pollInterval) // polling the request log with a deadline
		}
	}
}

// TestYourPastes makes two pastes in the form, one encrypted with its key
// kept, and finds both listed on the front page, each looked up on its
// own. Deleting one from the list deletes it on the server; one deleted
// elsewhere drops from the list on the next load; the list can be
// cleared, which leaves the pastes on the server.
func TestYourPastes(t *testing.T) {
	ctx := newTab(t)
	var log requestLog
	log.listen(t, ctx)

	fillForm(t, ctx, pasteForm{content: "first\n", lang: "Go"})
	do(t, ctx, "title it", chromedp.SetValue(chromedp.ID("title"), "first paste"))
	first := submitPlain(t, ctx)
	fillForm(t, ctx, pasteForm{content: "second\n", encrypt: true})
	do(t, ctx, "title it, keep its key",
		chromedp.SetValue(chromedp.ID("title"), "second paste"),
		chromedp.SetValue(chromedp.CSS("select[name=expire]"), "1h"),
		chromedp.Click(chromedp.ID("keep-key"), chromedp.NodeVisible))
	second, key := submitEncrypted(t, ctx)

	rows := openMine(t, ctx, 2)
	if got := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#mine-list > li"), li => li.dataset.id)`); strings.Join(got, " ") != second+" "+first {
		t.Errorf("listed %v, want the newest first: %s %s", got, second, first)
	}
	for id, want := range map[string][]string{
		first:  {"first paste", "Go", "6 bytes", "made just now", "never expires"},
		second: {"second paste", "plain text", "made just now", "expires in 1 hour", "encrypted"},
	} {
		for _, w := range want {
			if !strings.Contains(rows[id], w) {
				t.Errorf("the entry of %s reads %q, want %q in it", id, rows[id], w)
			}
		}
	}
	if href := eval[string](t, ctx, `document.querySelector('#mine-list > li[data-id="`+second+`"] a').getAttribute("href")`); href != "/"+second+"#"+key {
		t.Errorf("the encrypted paste opens %q, want its link with the kept key", href)
	}
	waitRequested(t, &log, first, second)
	for _, u := range log.containing(first) {
		if strings.Contains(u, second) {
			t.Errorf("a request names both pastes: %s", u)
		}
	}

	do(t, ctx, "delete the first from the list",
		chromedp.Click(chromedp.CSS(`#mine-list > li[data-id="`+first+`"] .delete`)),
		chromedp.Click(chromedp.CSS(`#mine-list > li[data-id="`+first+`"] .delete-yes`), chromedp.NodeVisible))
	waitJS(t, ctx, "the first gone from the list", `!document.querySelector('#mine-list > li[data-id="`+first+`"]')`)
	if code := rawStatus(t, suite.baseURL, first); code != http.StatusNotFound {
		t.Errorf("after the delete from the list: GET /raw/%s = %d, want 404", first, code)
	}
	if code := rawStatus(t, suite.baseURL, second); code != http.StatusOK {
		t.Errorf("GET /raw/%s = %d, want the paste that was not deleted", second, code)
	}

	// Deleted elsewhere, with the token this browser kept.
	token := eval[string](t, ctx, `localStorage.getItem("pastenode.delete-token." + `+jsString(second)+`) || ""`)
	req, err := http.NewRequest(http.MethodDelete, suite.baseURL+"/"+second, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Delete-Token", token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE /%s from outside: status %d", second, res.StatusCode)
	}
	reload(t, ctx, suite.baseURL+"/")
	waitJS(t, ctx, "the deleted paste dropped", `document.getElementById("mine").hidden && localStorage.getItem("pastenode.pastes") === null`)

	fillForm(t, ctx, pasteForm{content: "third\n"})
	third := submitPlain(t, ctx)
	openMine(t, ctx, 1)
	do(t, ctx, "clear the list",
		chromedp.Click(chromedp.ID("mine-clear")),
		chromedp.Click(chromedp.ID("mine-clear-yes"), chromedp.NodeVisible))
	waitJS(t, ctx, "the list cleared", `document.getElementById("mine").hidden`)
	if list := storedList(t, ctx); list != "" {
		t.Errorf("after clearing, localStorage holds the list %s", list)
	}
	if code := rawStatus(t, suite.baseURL, third); code != http.StatusOK {
		t.Errorf("after clearing the list: GET /raw/%s = %d, want the paste still there", third, code)
	}
}
