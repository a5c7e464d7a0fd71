package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestRenderMarkdown checks what the rendering keeps and what it leaves
// out: raw HTML, dangerous link targets, images, ids and style attributes
// never reach the page, and every link is rel="nofollow noopener".
func TestRenderMarkdown(t *testing.T) {
	tests := []struct {
		name, src string
		contains  []string
		excludes  []string
	}{
		{"heading and emphasis", "# Title\n\nSome **bold** and _em_.\n",
			[]string{"<h1>Title</h1>", "<strong>bold</strong>", "<em>em</em>"}, []string{" id="}},
		{"raw HTML", "<script>alert(1)</script>\n\ntext <b onclick=x>b</b> <img src=x onerror=alert(1)>\n",
			[]string{"raw HTML omitted"}, []string{"<script", "<b", "<img", "onerror", "onclick"}},
		{"links", "[a](https://example.com/a) <https://example.com/b> www.example.com/c\n",
			[]string{`<a href="https://example.com/a" rel="nofollow noopener">a</a>`,
				`<a href="https://example.com/b" rel="nofollow noopener">`, `<a href="http://www.example.com/c" rel="nofollow noopener">`}, nil},
		{"dangerous link", "[x](javascript:alert(1)) [y](data:text/html,hi)\n",
			[]string{`<a href="" rel="nofollow noopener">x</a>`}, []string{"javascript:", "data:text"}},
		{"image", "![the *logo*](https://example.com/logo.png \"Logo\")\n",
			[]string{`<a href="https://example.com/logo.png" title="Logo" rel="nofollow noopener">the <em>logo</em></a>`}, []string{"<img"}},
		{"image in a link", "[![badge](https://example.com/b.svg)](https://example.com/ci)\n",
			[]string{`<a href="https://example.com/ci" rel="nofollow noopener">badge</a>`}, []string{"<img", "b.svg"}},
		{"table", "| a | b |\n|:-:|--:|\n| 1 | 2 |\n",
			[]string{`<th align="center">a</th>`, `<td align="right">2</td>`}, []string{"style="}},
		{"task list and strikethrough", "- [x] done ~~old~~\n",
			[]string{`<input checked="" disabled="" type="checkbox">`, "<del>old</del>"}, nil},
		{"attributes are not parsed", "# Title {#paste .x}\n",
			nil, []string{` id="`, `class="x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			html, ok := renderMarkdown(tt.src, time.Now().Add(time.Minute))
			if !ok {
				t.Fatal("not rendered")
			}
			for _, s := range tt.contains {
				if !strings.Contains(string(html), s) {
					t.Errorf("rendering lacks %q:\n%s", s, html)
				}
			}
			for _, s := range tt.excludes {
				if strings.Contains(string(html), s) {
					t.Errorf("rendering has %q:\n%s", s, html)
				}
			}
		})
	}
}

// TestMarkdownPage: the page of a Markdown paste shows the rendering and
// the source's lines; the second view is the cached one. An encrypted
// one is left to the page's script, which shows it as text.
func TestMarkdownPage(t *testing.T) {
	u := newUI(t, Options{})
	p := Paste{ID: "md", Lang: "markdown", Content: []byte("# Title\n\nSome **bold**.\n"), CreatedAt: now}
	for view := range 2 {
		var b bytes.Buffer
		if err := u.Paste(&b, p, now); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		for _, s := range []string{`<div id="rendered" class="markdown">`, "<h1>Title</h1>", "<strong>bold</strong>",
			`href="#paste">Source</a>`, `<pre id="paste" class="chroma d1">`, `id="L3"`} {
			if !strings.Contains(page, s) {
				t.Errorf("view %d: page lacks %q", view, s)
			}
		}
		checkPolicy(t, page)
	}
	if b, ok := u.cache.get("md\x00markdown\x00" + strconvNano(now)); !ok || !strings.Contains(string(b.markdown), "<h1>") {
		t.Errorf("the cache holds %+v, %v; want the rendering", b, ok)
	}

	// The server has only the ciphertext of an encrypted paste: nothing
	// to render.
	p.Encrypted, p.Content = true, []byte("pn1.k.AAECAwQFBgcICQoL.3q2-7wABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZ")
	var b bytes.Buffer
	if err := u.Paste(&b, p, now); err != nil {
		t.Fatal(err)
	}
	if page := b.String(); strings.Contains(page, `id="rendered"`) || !strings.Contains(page, "Decrypting…") {
		t.Errorf("the page of an encrypted Markdown paste shows a rendering, or not the decrypting placeholder")
	}
}

// hostileMarkdown are inputs on which goldmark takes time quadratic in
// their size, many seconds to minutes for a megabyte. Each stresses
// another part of it: block parsers, inline parsers, delimiter matching,
// paragraph transformers.
var hostileMarkdown = map[string]string{
	"nested quotes":    ">",
	"nested lists":     "- ",
	"delimiter runs":   "_*a",
	"unclosed links":   "[a](",
	"link definitions": "[a]: b\n",
}

// TestMarkdownBudget: a hostile Markdown paste is shown as source within
// the budget, and its render does not outlive the budget for long: the
// slot it held comes back, as it would not if a goldmark call ran on for
// its minutes. The verdict is cached.
func TestMarkdownBudget(t *testing.T) {
	const size = 1 << 20
	// A cache large enough to keep the plain pages of these pastes.
	u := newUI(t, Options{HighlightBudget: 100 * time.Millisecond, MaxHighlightBytes: size, HighlightCacheBytes: 1 << 30})
	for name, unit := range hostileMarkdown {
		t.Run(name, func(t *testing.T) {
			// The x ends the last list item: without it goldmark
			// takes a nesting of empty items in its stride.
			src := strings.Repeat(unit, (size-1)/len(unit)) + "x"
			p := Paste{ID: strings.ReplaceAll(name, " ", "-"), Lang: "markdown", Content: []byte(src), CreatedAt: now}
			start := time.Now()
			var b bytes.Buffer
			if err := u.Paste(&b, p, now); err != nil {
				t.Fatal(err)
			}
			// Unbounded, each of these renders for 20 s to minutes; the
			// page, a plain one of 1 MiB, takes half a second idle and
			// more beside a whole test run on two cores.
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the page took %s, want under 5 s", took)
			}
			if page := b.String(); !strings.Contains(page, "Rendering this Markdown took too long") || strings.Contains(page, `id="rendered"`) {
				t.Errorf("the page does not say that rendering was skipped, or shows a rendering")
			}
			waitSlotsFree(t, 2*time.Second)
			if c, ok := u.cache.get(p.ID + "\x00markdown\x00" + strconvNano(now)); !ok || c.mdRes != overBudget {
				t.Errorf("the cache holds %v, %v; want the verdict that rendering ran out of time", c.mdRes, ok)
			}
		})
	}
}

// waitSlotsFree waits until no tokeniser or render holds a slot.
func waitSlotsFree(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for len(tokeniserSlots) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d slots still held %s after the page was served: an abandoned render runs on", len(tokeniserSlots), within)
		}
		time.Sleep(5 * time.Millisecond) // polling the slots with a deadline
	}
}

// TestMarkdownMegabyte: a 1 MiB Markdown paste takes the budget that
// highlighting takes. Under the default size limit it is shown as source,
// as a paste that large is shown unhighlighted; with the limit raised it
// is rendered within the time budget or shown as source, never slower.
func TestMarkdownMegabyte(t *testing.T) {
	const budget = 100 * time.Millisecond
	var readme strings.Builder
	for readme.Len() < 1<<20 {
		readme.WriteString("## Section\n\nSome **bold** and _em_ text, a [link](https://example.com) and `code`.\n\n" +
			"- one\n- two\n\n```go\nfunc main() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> quoted\n\n")
	}
	for _, opts := range []Options{{HighlightBudget: budget}, {HighlightBudget: budget, MaxHighlightBytes: 2 << 20}} {
		u := newUI(t, opts)
		p := Paste{ID: "big", Lang: "markdown", Content: []byte(readme.String()), CreatedAt: now}
		start := time.Now()
		var b bytes.Buffer
		if err := u.Paste(&b, p, now); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("%+v: the page took %s, want under a second", opts, took)
		}
		page := b.String()
		rendered := strings.Contains(page, `id="rendered"`)
		switch {
		case opts.MaxHighlightBytes == 0 && (rendered || !strings.Contains(page, "shown as source, without rendering")):
			t.Errorf("%+v: rendered %v; want the source, with a note that the paste is too large", opts, rendered)
		case opts.MaxHighlightBytes != 0 && !rendered && !strings.Contains(page, "Rendering this Markdown took too long"):
			t.Errorf("%+v: neither rendered nor a note that it took too long", opts)
		}
		waitSlotsFree(t, 2*time.Second)
	}
}
