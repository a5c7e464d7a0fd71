package browser

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestCreateTokenField: the form shows a token field only where the node
// requires one; a plain and an encrypted paste go through with it, and the
// token is remembered only when the user asks.
func TestCreateTokenField(t *testing.T) {
	ctx := newTab(t)
	do(t, ctx, "open the form of an open node", chromedp.Navigate(suite.baseURL+"/"),
		chromedp.WaitVisible(chromedp.CSS("form#new-paste")))
	if eval[bool](t, ctx, `!!document.getElementById("token")`) {
		t.Fatal("an open node's form has a token field")
	}

	do(t, ctx, "a plain paste with the token, remembered",
		chromedp.Navigate(suite.tokenURL+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SetValue(chromedp.CSS("textarea[name=content]"), "with a token\n"),
		chromedp.SendKeys(chromedp.ID("token"), "browser-token"),
		chromedp.Click(chromedp.ID("remember-token"), chromedp.NodeVisible))
	id := submitPlain(t, ctx)
	if _, raw := httpGet(t, "/raw/"+id, ""); raw != "with a token\n" {
		t.Fatalf("the paste made with the token holds %q", raw)
	}
	if got := eval[string](t, ctx, `localStorage.getItem("pastenode.createToken") || ""`); got != "browser-token" {
		t.Fatalf("localStorage holds %q, want the remembered token", got)
	}

	// The form comes back filled; an encrypted paste sends it as a header.
	do(t, ctx, "an encrypted paste with the remembered token",
		chromedp.Navigate(suite.tokenURL+"/"),
		chromedp.WaitVisible(chromedp.ID("token")))
	if got := eval[string](t, ctx, `document.getElementById("token").value`); got != "browser-token" {
		t.Fatalf("the token field holds %q, want the remembered token", got)
	}
	do(t, ctx, "fill and untick remember",
		chromedp.SetValue(chromedp.CSS("textarea[name=content]"), "encrypted with a token\n"),
		chromedp.Click(chromedp.CSS("input[name=encrypt]")),
		chromedp.Click(chromedp.ID("remember-token")))
	id, key := submitEncrypted(t, ctx)
	if key == "" || id == "" {
		t.Fatalf("no encrypted paste: id %q, key %q", id, key)
	}
	if got := eval[bool](t, ctx, `localStorage.getItem("pastenode.createToken") === null`); !got {
		t.Error("the token is still stored after remember was unticked")
	}

	// A wrong token: the form shows the server's reason.
	do(t, ctx, "an encrypted paste with a wrong token",
		chromedp.Navigate(suite.tokenURL+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SetValue(chromedp.CSS("textarea[name=content]"), "nope\n"),
		chromedp.SetValue(chromedp.ID("token"), "wrong"),
		chromedp.Click(chromedp.CSS("input[name=encrypt]")),
		chromedp.Click(chromedp.ID("submit")))
	waitJS(t, ctx, "the 401 reason", `!document.getElementById("form-error").hidden`)
	if msg := eval[string](t, ctx, `document.getElementById("form-error").textContent`); !strings.Contains(msg, "token") {
		t.Errorf("form error %q, want the token's reason", msg)
	}
}
