package ui

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// now is the fixed clock of the page tests, so relative times are stable.
var now = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// testLangs keeps the index goldens independent of chroma's lexer list.
var testLangs = []Lang{{Name: "", Label: "plain text"}, {Name: "Go", Label: "Go"}, {Name: "Python", Label: "Python"}}

// markdownSource is a Markdown paste with what the rendering must not
// keep: raw HTML, an image.
const markdownSource = "# Notes\n\nSome **bold** text and a [link](https://example.com/).\n\n<script>alert(1)</script>\n\n![logo](https://example.com/logo.png)\n"

const goSource = "package main\n\nimport \"fmt\"\n\n// main greets.\nfunc main() {\n\tfmt.Println(\"hello, <world> & friends\")\n}\n"

func newUI(t *testing.T, opts Options) *UI {
	t.Helper()
	u, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return u
}

// versionRE matches the asset versions in a page. Goldens hold a
// placeholder, so that a change to the CSS or the script does not rewrite
// every golden file; TestAssetURLs checks the real versions.
var versionRE = regexp.MustCompile(`\?v=[0-9a-f]+`)

// golden compares got with testdata/NAME.golden.html, or rewrites the file
// under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	got = versionRE.ReplaceAll(got, []byte("?v=VERSION"))
	path := filepath.Join("testdata", name+".golden.html")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./ui -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Errorf("%s differs at line %d:\n got: %q\nwant: %q\n(run go test ./ui -update and review the diff)", path, i+1, g, w)
			return
		}
	}
}

// elementHTML returns the element that starts with open, up to its first
// closing tag: enough for the flat <pre> elements of the pages.
func elementHTML(t *testing.T, page, open, closing string) string {
	t.Helper()
	i := strings.Index(page, open)
	if i < 0 {
		t.Fatalf("page has no %s", open)
	}
	j := strings.Index(page[i:], closing)
	if j < 0 {
		t.Fatalf("%s is not closed by %s", open, closing)
	}
	return page[i : i+j+len(closing)]
}

var (
	attrRE     = regexp.MustCompile(`\s(href|src|action)="([^"]*)"`)
	scriptRE   = regexp.MustCompile(`<script\b[^>]*>`)
	styleAttrs = regexp.MustCompile(`(?i)\sstyle\s*=|<style\b`)
)

var (
	renderedRE = regexp.MustCompile(`(?s)<div id="rendered" class="markdown">.*?</div>\n<pre id="paste"`)
	linkTagRE  = regexp.MustCompile(`<a\b[^>]*>`)
)

// checkPolicy asserts what CSP requires of every page: no inline style or
// script, and no URL outside the site. A Markdown paste's rendering may
// link elsewhere, with rel="nofollow noopener", but loads nothing.
func checkPolicy(t *testing.T, page string) {
	t.Helper()
	if md := renderedRE.FindString(page); md != "" {
		for _, a := range linkTagRE.FindAllString(md, -1) {
			if !strings.Contains(a, ` rel="nofollow noopener"`) {
				t.Errorf("a link of the rendering has no rel=\"nofollow noopener\": %s", a)
			}
		}
		if strings.Contains(md, " src=") {
			t.Errorf("the rendering loads something: %s", md)
		}
		page = strings.Replace(page, md, `<pre id="paste"`, 1)
	}
	if loc := styleAttrs.FindStringIndex(page); loc != nil {
		t.Errorf("page has inline style: %q", page[loc[0]:min(loc[1]+40, len(page))])
	}
	for _, tag := range scriptRE.FindAllString(page, -1) {
		if !strings.Contains(tag, `src="/static/`) {
			t.Errorf("script not from /static/: %s", tag)
		}
	}
	if strings.Count(page, "<script") != strings.Count(page, "</script>") || strings.Count(page, "<script") != 1 {
		t.Errorf("want exactly one script element, the app's")
	}
	for _, m := range attrRE.FindAllStringSubmatch(page, -1) {
		u := m[2]
		if u == "data:," {
			continue
		}
		if !strings.HasPrefix(u, "/") && !strings.HasPrefix(u, "#") || strings.HasPrefix(u, "//") {
			t.Errorf("%s=%q does not stay on the site", m[1], u)
		}
	}
}

func TestPages(t *testing.T) {
	base := Paste{
		ID:        "abc123",
		Title:     "Greeting",
		Lang:      "Go",
		Content:   []byte(goSource),
		CreatedAt: now.Add(-3 * time.Minute),
		ExpiresAt: now.Add(time.Hour),
	}
	with := func(f func(p *Paste)) Paste {
		p := base
		f(&p)
		return p
	}
	script := "<script>alert(1)</script>\n"
	cipher := "pn1.k.AAECAwQFBgcICQoL.3q2-7wABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZ"

	tests := []struct {
		name     string
		opts     Options
		render   func(u *UI, w io.Writer) error
		contains []string
		excludes []string
	}{{
		name: "index",
		render: func(u *UI, w io.Writer) error {
			return u.Index(w, IndexData{Langs: testLangs, MaxSize: 1 << 20})
		},
		contains: []string{`<form id="new-paste"`, `method="post"`, `action="/"`, `enctype="multipart/form-data"`, `<option value="never" selected>`, "up to 1 MiB"},
		excludes: []string{`id="form-error" class="error" role="alert">`},
	}, {
		name: "index-clone",
		render: func(u *UI, w io.Writer) error {
			return u.Index(w, IndexData{Langs: testLangs, Prefill: script, PrefillLang: "golang", PrefillTitle: `"quoted" <title>`,
				PrefillExpire: "1d", PrefillBurn: true, Error: "paste is larger than 1 MiB"})
		},
		contains: []string{`&lt;script&gt;alert(1)&lt;/script&gt;`, `<option value="Go" selected>`, `<option value="1d" selected>`,
			`value="&#34;quoted&#34; &lt;title&gt;"`, `name="burn" value="true" checked`, `role="alert">paste is larger than 1 MiB</p>`},
		excludes: []string{"<script>alert", `<option value="never" selected>`},
	}, {
		name:     "index-mirror",
		opts:     Options{Mirror: true},
		render:   func(u *UI, w io.Writer) error { return u.Index(w, IndexData{}) },
		contains: []string{"Read-only mirror", "read-only mirror"},
		excludes: []string{"<form", `name="content"`, `>New paste<`},
	}, {
		name:     "paste-go",
		render:   func(u *UI, w io.Writer) error { return u.Paste(w, base, now) },
		contains: []string{`<pre id="paste" class="chroma d1">`, `<span class="kd">func</span>`, `<span class="c1">// main greets.`, `id="L6"`, `href="#L6"`, "8 lines", "3 minutes ago", "in 1 hour", `datetime="2026-03-14T16:09:26Z"`, `href="/raw/abc123"`, `download="abc123.go"`, `href="/?clone=abc123"`, "&lt;world&gt; &amp; friends"},
		excludes: []string{"<world>", `name="robots" content="index`},
	}, {
		name: "paste-script",
		render: func(u *UI, w io.Writer) error {
			return u.Paste(w, with(func(p *Paste) { p.Lang, p.Title, p.Content = "", script, []byte(script) }), now)
		},
		contains: []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "plain text", `download="abc123.txt"`},
		excludes: []string{"<script>alert"},
	}, {
		name: "paste-script-html",
		render: func(u *UI, w io.Writer) error {
			return u.Paste(w, with(func(p *Paste) { p.Lang, p.Content = "HTML", []byte(script) }), now)
		},
		contains: []string{`<span class="nt">script</span>`, `<span class="nx">alert</span>`},
		excludes: []string{"<script>alert"},
	}, {
		name: "paste-encrypted",
		render: func(u *UI, w io.Writer) error {
			return u.Paste(w, with(func(p *Paste) { p.Encrypted, p.Content = true, []byte(cipher) }), now)
		},
		contains: []string{"<pre id=\"ciphertext\" hidden>\n" + cipher + "</pre>", `<pre id="paste" class="chroma">Decrypting…</pre>`, `id="unlock-password"`, `id="unlock"`, `id="decrypt-error"`, "(encrypted)", "Raw (encrypted)"},
		excludes: []string{`class="line"`, `class="kd"`, "/?clone="},
	}, {
		name: "paste-markdown",
		render: func(u *UI, w io.Writer) error {
			return u.Paste(w, with(func(p *Paste) { p.Lang, p.Content = "markdown", []byte(markdownSource) }), now)
		},
		contains: []string{`<div id="rendered" class="markdown">`, "<h1>Notes</h1>", "<strong>bold</strong>", `rel="nofollow noopener"`,
			`<a class="button" id="show-source" href="#paste">Source</a>`, `<span class="line" id="L3">`, "&lt;script&gt;"},
		excludes: []string{"<script>alert", "<img"},
	}, {
		name:     "paste-burned",
		render:   func(u *UI, w io.Writer) error { return u.Paste(w, with(func(p *Paste) { p.Burn = true }), now) },
		contains: []string{"destroyed on the server", "after reading", `id="download" download="abc123.go" data-from-page hidden`},
		excludes: []string{"/raw/abc123", "/?clone="},
	}, {
		name:     "paste-large",
		opts:     Options{MaxHighlightBytes: 64},
		render:   func(u *UI, w io.Writer) error { return u.Paste(w, base, now) },
		contains: []string{"larger than 64 bytes", `<span class="line" id="L8">`},
		excludes: []string{`class="kd"`},
	}, {
		name: "paste-binary",
		render: func(u *UI, w io.Writer) error {
			return u.Paste(w, with(func(p *Paste) { p.Lang, p.Content, p.ExpiresAt = "", []byte("ok\xff\xfe\n"), time.Time{} }), now)
		},
		contains: []string{"not valid UTF-8", "ok\uFFFD", "<dd>never</dd>"},
	}, {
		name:     "paste-mirror",
		opts:     Options{Mirror: true},
		render:   func(u *UI, w io.Writer) error { return u.Paste(w, base, now) },
		contains: []string{`href="/raw/abc123"`, "read-only mirror"},
		excludes: []string{"/?clone=", ">New paste<"},
	}, {
		name:     "burn",
		render:   func(u *UI, w io.Writer) error { return u.BurnNotice(w, with(func(p *Paste) { p.Burn = true })) },
		contains: []string{"This paste will be destroyed after you read it", `<form id="reveal-form" method="post" action="/abc123/reveal">`, `<button type="submit" id="reveal">`},
		excludes: []string{"fmt.Println", "main greets", `id="paste"`, "data-encrypted"},
	}, {
		name: "burn-encrypted",
		render: func(u *UI, w io.Writer) error {
			return u.BurnNotice(w, with(func(p *Paste) { p.Burn, p.Encrypted, p.Content = true, true, []byte(cipher) }))
		},
		contains: []string{`data-encrypted="true" data-id="abc123"`, `id="reveal"`, `id="revealed" hidden`, `id="unlock-password"`},
		excludes: []string{cipher, `id="paste"`},
	}, {
		name:     "error-404",
		render:   func(u *UI, w io.Writer) error { return u.Error(w, 404, "not found") },
		contains: []string{"This paste does not exist, has expired, or was already read.", `<a class="button" href="/">New paste</a>`},
	}, {
		name:     "error-503",
		render:   func(u *UI, w io.Writer) error { return u.Error(w, 503, "no quorum: <try again>") },
		contains: []string{"Service Unavailable", "no quorum: &lt;try again&gt;"},
	}, {
		name:     "error-mirror",
		opts:     Options{Mirror: true},
		render:   func(u *UI, w io.Writer) error { return u.Error(w, 418, "") },
		contains: []string{"I&#39;m a teapot", "(418)", ">Home</a>"},
		excludes: []string{">New paste<"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUI(t, tt.opts)
			var b bytes.Buffer
			if err := tt.render(u, &b); err != nil {
				t.Fatalf("render: %v", err)
			}
			page := b.String()
			for _, s := range tt.contains {
				if !strings.Contains(page, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			for _, s := range tt.excludes {
				if strings.Contains(page, s) {
					t.Errorf("page has %q", s)
				}
			}
			checkPolicy(t, page)
			golden(t, tt.name, b.Bytes())
		})
	}
}

// TestPasteHighlight checks that highlighting uses classes only, and that
// the text of #paste is the paste itself: the line numbers are drawn by CSS.
func TestPasteHighlight(t *testing.T) {
	u := newUI(t, Options{})
	var b bytes.Buffer
	if err := u.Paste(&b, Paste{ID: "x", Lang: "Go", Content: []byte(goSource), CreatedAt: now}, now); err != nil {
		t.Fatal(err)
	}
	pre := elementHTML(t, b.String(), `<pre id="paste"`, "</pre>")
	if strings.Contains(pre, "style=") {
		t.Errorf("#paste has a style attribute")
	}
	for _, cls := range []string{"kn", "kd", "nf", "s", "c1", "line", "ln", "cl"} {
		if !strings.Contains(pre, `class="`+cls+`"`) {
			t.Errorf("#paste has no span of class %q", cls)
		}
	}
	if got := textOf(pre); got != goSource {
		t.Errorf("text of #paste:\n got: %q\nwant: %q", got, goSource)
	}
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// textOf is the text content of an HTML fragment.
func textOf(fragment string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "&#34;", `"`, "&#39;", "'").
		Replace(tagRE.ReplaceAllString(fragment, ""))
}

// tag is one start tag of a page: its name and attributes.
type tag struct {
	name  string
	attrs map[string]string
}

var (
	startTagRE = regexp.MustCompile(`<(input|textarea|select|button|form)\b([^>]*)>`)
	tagAttrRE  = regexp.MustCompile(`([a-z-]+)(?:="([^"]*)")?`)
)

func formTags(page string) []tag {
	var tags []tag
	for _, m := range startTagRE.FindAllStringSubmatch(page, -1) {
		t := tag{name: m[1], attrs: map[string]string{}}
		for _, a := range tagAttrRE.FindAllStringSubmatch(m[2], -1) {
			t.attrs[a[1]] = a[2]
		}
		tags = append(tags, t)
	}
	return tags
}

// TestIndexForm checks the field names that browsers, the api and the
// browser tests rely on.
func TestIndexForm(t *testing.T) {
	u := newUI(t, Options{})
	var b bytes.Buffer
	if err := u.Index(&b, IndexData{}); err != nil {
		t.Fatal(err)
	}
	tags := formTags(b.String())
	find := func(name, field string) *tag {
		for i := range tags {
			if tags[i].name == name && tags[i].attrs["name"] == field {
				return &tags[i]
			}
		}
		return nil
	}
	fields := []struct {
		tag, name, typ string
		disabled       bool // until the script enables it
	}{
		{"input", "title", "", false},
		{"textarea", "content", "", false},
		{"select", "lang", "", false},
		{"select", "expire", "", false},
		{"input", "burn", "checkbox", false},
		{"input", "encrypt", "checkbox", true},
		{"input", "password", "password", true},
	}
	for _, f := range fields {
		t.Run(f.name, func(t *testing.T) {
			el := find(f.tag, f.name)
			if el == nil {
				t.Fatalf("no <%s name=%q>", f.tag, f.name)
			}
			if got := el.attrs["type"]; got != f.typ {
				t.Errorf("type = %q, want %q", got, f.typ)
			}
			if _, got := el.attrs["disabled"]; got != f.disabled {
				t.Errorf("disabled = %v, want %v", got, f.disabled)
			}
		})
	}

	var forms, submits int
	for _, tg := range tags {
		switch {
		case tg.name == "form":
			forms++
			want := map[string]string{"id": "new-paste", "method": "post", "action": "/", "enctype": "multipart/form-data"}
			for k, v := range want {
				if tg.attrs[k] != v {
					t.Errorf("form %s = %q, want %q", k, tg.attrs[k], v)
				}
			}
		case tg.name == "button" && tg.attrs["type"] == "submit":
			submits++
		}
	}
	if forms != 1 || submits != 1 {
		t.Errorf("got %d forms and %d submit buttons, want 1 and 1", forms, submits)
	}
	if n := strings.Count(b.String(), "<option value="); n < 100 {
		t.Errorf("got %d options, want chroma's languages and the expiries", n)
	}
}

func TestExpireOptions(t *testing.T) {
	var got []string
	for _, o := range ExpireOptions() {
		got = append(got, o.Value)
	}
	if want := "never 10m 1h 1d 1w"; strings.Join(got, " ") != want {
		t.Errorf("values = %v, want %s", got, want)
	}
}

func TestCSP(t *testing.T) {
	want := "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
	if got := CSP(); got != want {
		t.Errorf("CSP() = %q, want %q", got, want)
	}
}
