package browser

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
)

// markdownPaste has a heading, bold text and a link, and the markup a
// rendering must not let through: a script, an element with a handler,
// a javascript: link and an image from another host.
const markdownPaste = "# Release notes\n\nThis is **important**, see [the docs](https://example.com/docs).\n\n" +
	"<script>window.pwned = 'script'</script>\n\n<img src=x onerror=\"window.pwned = 'onerror'\">\n\n" +
	"[click me](javascript:window.pwned='link') ![logo](https://example.com/logo.png)\n"

// TestMarkdownPaste makes a Markdown paste in the form: the page shows it
// rendered, with an <h1> and a <strong>, runs none of the script in it,
// links out with rel="nofollow noopener", switches to the highlighted
// source and back, and opens on the source for a link to a line. /raw is
// the bytes posted.
func TestMarkdownPaste(t *testing.T) {
	ctx := newTab(t)
	fillForm(t, ctx, pasteForm{content: markdownPaste, lang: "markdown"})
	id := submitPlain(t, ctx)
	waitJS(t, ctx, "the page's script", `document.readyState === "complete"`)

	if got := eval[string](t, ctx, `document.querySelector("#rendered h1").textContent`); got != "Release notes" {
		t.Errorf("the rendering's <h1> says %q, want Release notes", got)
	}
	if got := eval[string](t, ctx, `document.querySelector("#rendered strong").textContent`); got != "important" {
		t.Errorf("the rendering's <strong> says %q, want important", got)
	}
	if got := eval[string](t, ctx, `String(window.pwned)`); got != "undefined" {
		t.Errorf("script from the paste ran: window.pwned is %q", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#rendered script, #rendered img, #rendered [onerror]").length`); n != 0 {
		t.Errorf("the rendering holds %d script, img or handler elements, want none", n)
	}
	rels := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#rendered a"), a => a.rel + " " + a.getAttribute("href"))`)
	if len(rels) != 3 {
		t.Errorf("the rendering has links %q, want the docs, the javascript: one emptied and the image's", rels)
	}
	for _, r := range rels {
		if r != "nofollow noopener https://example.com/docs" && r != "nofollow noopener " && r != "nofollow noopener https://example.com/logo.png" {
			t.Errorf("link %q: want rel nofollow noopener and no javascript:", r)
		}
	}
	if status, raw := httpGet(t, "/raw/"+id, ""); status != http.StatusOK || raw != markdownPaste {
		t.Errorf("GET /raw/%s: status %d, %q; want 200 and the bytes posted", id, status, raw)
	}

	shown := func() []bool {
		return eval[[]bool](t, ctx, `["rendered", "paste"].map(id => getComputedStyle(document.getElementById(id)).display !== "none")`)
	}
	if got := shown(); !got[0] || got[1] {
		t.Fatalf("rendered, source shown: %v; want the rendering only", got)
	}
	do(t, ctx, "switch to the source", chromedp.Click(chromedp.ID("show-source")))
	waitJS(t, ctx, "the source shown", `getComputedStyle(document.getElementById("paste")).display !== "none"`)
	if got := shown(); got[0] {
		t.Errorf("rendered, source shown: %v; want the source only", got)
	}
	if got := eval[string](t, ctx, `document.getElementById("paste").textContent`); got != markdownPaste {
		t.Errorf("the source reads %q, want the paste", got)
	}
	do(t, ctx, "switch back", chromedp.Click(chromedp.ID("show-rendered")))
	waitJS(t, ctx, "the rendering shown", `getComputedStyle(document.getElementById("rendered")).display !== "none"`)
	if got := shown(); got[1] {
		t.Errorf("rendered, source shown: %v; want the rendering only", got)
	}

	reload(t, ctx, suite.baseURL+"/"+id+"#L3")
	if got := shown(); got[0] || !got[1] {
		t.Errorf("/%s#L3: rendered, source shown: %v; want the source", id, got)
	}
	if !eval[bool](t, ctx, `document.getElementById("L3").getBoundingClientRect().top < innerHeight`) {
		t.Errorf("/%s#L3: line 3 is not in view", id)
	}
}

// TestEncryptedMarkdown: an encrypted Markdown paste is decrypted in the
// page and shown as text; no renderer runs on it there.
func TestEncryptedMarkdown(t *testing.T) {
	ctx := newTab(t)
	fillForm(t, ctx, pasteForm{content: markdownPaste, lang: "markdown", encrypt: true})
	submitEncrypted(t, ctx)
	waitJS(t, ctx, "the paste decrypted", `document.getElementById("paste").textContent === `+jsString(markdownPaste))
	if n := eval[int](t, ctx, `document.querySelectorAll("#rendered, #paste h1, #paste strong, #paste script").length`); n != 0 {
		t.Errorf("the decrypted paste became markup (%d elements), want text", n)
	}
	if got := eval[string](t, ctx, `String(window.pwned)`); got != "undefined" {
		t.Errorf("script from the paste ran: window.pwned is %q", got)
	}
}
