package browser

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

const goSource = `package main

import "fmt"

// main greets.
func main() {
	fmt.Println("hello from the browser test")
}
`

// pasteForm is what a test types into the new-paste form.
type pasteForm struct {
	content  string
	lang     string // the label of a language option; "" keeps the default
	burn     bool
	encrypt  bool
	password string
}

// fillForm opens the new-paste page and fills its form, as a user would.
func fillForm(t *testing.T, ctx context.Context, f pasteForm) {
	t.Helper()
	do(t, ctx, "open the form",
		chromedp.Navigate(suite.baseURL+"/"),
		chromedp.WaitVisible(chromedp.CSS("form#new-paste")),
		chromedp.SetValue(chromedp.CSS("textarea[name=content]"), f.content),
	)
	if f.lang != "" {
		// The option values are the form's business; the test picks by
		// the label a user sees.
		options := eval[map[string]string](t, ctx, `Object.fromEntries(
			Array.from(document.querySelectorAll("select[name=lang] option"), o => [o.textContent, o.value]))`)
		value, ok := options[f.lang]
		if !ok {
			t.Fatalf("the language select has no option %q", f.lang)
		}
		do(t, ctx, "select "+f.lang, chromedp.SetValue(chromedp.CSS("select[name=lang]"), value))
	}
	if f.burn {
		do(t, ctx, "tick burn", chromedp.Click(chromedp.CSS("input[name=burn]")))
	}
	if f.encrypt {
		// The script shows the option only where WebCrypto works; Click
		// waits until it is visible.
		do(t, ctx, "tick encrypt", chromedp.Click(chromedp.CSS("input[name=encrypt]")))
		if f.password != "" {
			do(t, ctx, "type the password",
				chromedp.SendKeys(chromedp.CSS("input[name=password]"), f.password, chromedp.NodeVisible, chromedp.NodeEnabled))
		}
	}
	checked := eval[[]bool](t, ctx, `["burn", "encrypt"].map(n => document.querySelector("input[name=" + n + "]").checked)`)
	if checked[0] != f.burn || checked[1] != f.encrypt {
		t.Fatalf("burn, encrypt ticked: got %v, want [%v %v]", checked, f.burn, f.encrypt)
	}
}

// submitPlain submits a form that the browser posts itself and waits for
// the paste's page. It returns the paste id.
func submitPlain(t *testing.T, ctx context.Context) string {
	t.Helper()
	res, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("submit")))
	if err != nil {
		t.Fatalf("submit the form: %v", err)
	}
	if res.Status != http.StatusOK {
		t.Fatalf("the form post ended on %s with status %d, want 200", res.URL, res.Status)
	}
	return pasteID(t, location(t, ctx))
}

// submitEncrypted submits a form that the script encrypts and sends, and
// waits until it has gone to the new paste's page. It returns the id and
// the URL fragment.
func submitEncrypted(t *testing.T, ctx context.Context) (id, fragment string) {
	t.Helper()
	do(t, ctx, "submit the form", chromedp.Click(chromedp.ID("submit")))
	waitJS(t, ctx, "the new paste's page",
		`location.pathname !== "/" && document.readyState === "complete" && document.querySelector("main article.paste")`)
	u := location(t, ctx)
	return pasteID(t, u), u.Fragment
}

// reload loads url again in the tab, from another page, so that a URL that
// differs only in its fragment is a real load and not a jump in the page.
func reload(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	do(t, ctx, "load "+url, chromedp.Navigate("about:blank"), chromedp.Navigate(url))
}

func TestHighlightedPaste(t *testing.T) {
	ctx := newTab(t)
	fillForm(t, ctx, pasteForm{content: goSource, lang: "Go"})
	id := submitPlain(t, ctx)

	if got := eval[string](t, ctx, `document.getElementById("paste").textContent`); got != goSource {
		t.Errorf("#paste text: got %q, want the paste %q", got, goSource)
	}
	// The browser posts the textarea's line breaks as CRLF; the paste
	// keeps the text as typed.
	if status, raw := httpGet(t, "/raw/"+id, ""); status != http.StatusOK || raw != goSource {
		t.Errorf("GET /raw/%s: status %d, %q; want 200, %q", id, status, raw, goSource)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#paste span[class]").length`); n < 10 {
		t.Errorf("#paste has %d spans with a class, want the highlighting's many", n)
	}
	// chroma's keyword classes all start with k (k, kd, kn, ...).
	for _, kw := range []string{"package", "import", "func"} {
		cls := eval[string](t, ctx, `(Array.from(document.querySelectorAll("#paste span[class]"))
			.find(s => s.textContent === `+jsString(kw)+`) || {className: ""}).className`)
		if !strings.HasPrefix(cls, "k") {
			t.Errorf("keyword %q: got class %q, want a keyword class (k...)", kw, cls)
		}
	}
	lines := strings.Count(goSource, "\n")
	if n := eval[int](t, ctx, `document.querySelectorAll("#paste .line[id^=L] > a.ln[href^='#L']").length`); n != lines {
		t.Errorf("linked line numbers: got %d, want %d", n, lines)
	}
	if eval[bool](t, ctx, `document.querySelector(":target") !== null`) {
		t.Errorf("a line is marked before any line was asked for")
	}

	// Clicking a line number marks that line.
	do(t, ctx, "click line 4's number", chromedp.Click(chromedp.CSS(`a.ln[href="#L4"]`)))
	waitJS(t, ctx, "line 4 marked", `document.querySelector(":target") && document.querySelector(":target").id === "L4"`)

	// A link to a line marks it when the page opens, with a background of
	// its own.
	reload(t, ctx, suite.baseURL+"/"+id+"#L2")
	if got := eval[string](t, ctx, `(document.querySelector(":target") || {id: ""}).id`); got != "L2" {
		t.Fatalf("/%s#L2: the :target element has id %q, want L2", id, got)
	}
	bg := eval[[]string](t, ctx, `["L1", "L2"].map(id => getComputedStyle(document.getElementById(id)).backgroundColor)`)
	if bg[0] == bg[1] {
		t.Errorf("line 2's background %s is the same as line 1's: the targeted line is not marked", bg[1])
	}
}

func TestEncryptedPaste(t *testing.T) {
	const secret = "top secret: the launch code is 0000\n<script>alert(1)</script>\n"
	ctx := newTab(t)
	fillForm(t, ctx, pasteForm{content: secret, encrypt: true})
	id, key := submitEncrypted(t, ctx)
	if key == "" {
		t.Fatalf("the URL of an encrypted paste has no key in its fragment")
	}

	status, raw := httpGet(t, "/raw/"+id, "")
	if status != http.StatusOK {
		t.Fatalf("GET /raw/%s: status %d", id, status)
	}
	if strings.Contains(raw, "top secret") || strings.Contains(raw, "launch code") {
		t.Errorf("the server's copy holds the plaintext: %q", raw)
	}
	if !strings.HasPrefix(raw, "pn1.k.") {
		t.Errorf("the server's copy %q does not start with pn1.k.", raw)
	}
	if strings.Contains(raw, key) {
		t.Errorf("the server's copy holds the key")
	}

	waitJS(t, ctx, "the paste decrypted", `document.getElementById("paste").textContent === `+jsString(secret))
	if got := eval[bool](t, ctx, `document.getElementById("decrypt-error").hidden`); !got {
		t.Errorf("#decrypt-error is shown after a good decryption")
	}
	if eval[int](t, ctx, `document.querySelectorAll("#paste script").length`) != 0 {
		t.Errorf("the decrypted text became markup")
	}

	// The same paste with a key of the right form but the wrong bytes.
	wrong := make([]byte, 32)
	rand.Read(wrong)
	reload(t, ctx, suite.baseURL+"/"+id+"#"+base64.RawURLEncoding.EncodeToString(wrong))
	waitJS(t, ctx, "the error of a wrong key",
		`!document.getElementById("decrypt-error").hidden && document.getElementById("decrypt-error").textContent.includes("wrong key")`)
	if got := eval[string](t, ctx, `document.getElementById("paste").textContent`); strings.Contains(got, "top secret") {
		t.Errorf("#paste shows %q with a wrong key", got)
	}
	if !eval[bool](t, ctx, `getComputedStyle(document.getElementById("decrypt-error")).display !== "none"`) {
		t.Errorf("#decrypt-error has its message but is not displayed")
	}

	// No key at all.
	reload(t, ctx, suite.baseURL+"/"+id)
	waitJS(t, ctx, "the error of a missing key",
		`!document.getElementById("decrypt-error").hidden && document.getElementById("decrypt-error").textContent.includes("no key")`)
}

func TestPasswordPaste(t *testing.T) {
	const (
		secret   = "top secret behind a password\n"
		password = "correct horse battery staple"
	)
	ctx := newTab(t)
	fillForm(t, ctx, pasteForm{content: secret, encrypt: true, password: password})
	id, key := submitEncrypted(t, ctx)
	if key != "" {
		t.Errorf("the URL of a password paste carries a key: #%s", key)
	}

	status, raw := httpGet(t, "/raw/"+id, "")
	if status != http.StatusOK || !strings.HasPrefix(raw, "pn1.p.") {
		t.Fatalf("GET /raw/%s: status %d, %q; want 200 and pn1.p.", id, status, raw)
	}
	if strings.Contains(raw, "top secret") || strings.Contains(raw, "horse") {
		t.Errorf("the server's copy holds the plaintext or the password: %q", raw)
	}

	// The page asks for the password.
	do(t, ctx, "the password prompt", chromedp.WaitVisible(chromedp.ID("unlock-password")))
	if got := eval[string](t, ctx, `document.getElementById("paste").textContent`); strings.Contains(got, "top secret") {
		t.Fatalf("#paste shows %q before the password", got)
	}

	do(t, ctx, "try a wrong password",
		chromedp.SetValue(chromedp.ID("unlock-password"), "wrong horse"),
		chromedp.Click(chromedp.ID("unlock")),
	)
	waitJS(t, ctx, "the error of a wrong password",
		`!document.getElementById("decrypt-error").hidden && document.getElementById("decrypt-error").textContent.includes("wrong key or password")`)
	// The button is busy while PBKDF2 runs; it comes back for a retry.
	do(t, ctx, "the unlock button back", chromedp.WaitEnabled(chromedp.ID("unlock")))

	do(t, ctx, "enter the password",
		chromedp.SetValue(chromedp.ID("unlock-password"), password),
		chromedp.Click(chromedp.ID("unlock")),
	)
	waitJS(t, ctx, "the paste decrypted", `document.getElementById("paste").textContent === `+jsString(secret))
	if !eval[bool](t, ctx, `document.getElementById("decrypt-error").hidden && document.getElementById("unlock-form").hidden`) {
		t.Errorf("the error or the password prompt is still shown after decryption")
	}
}

func TestBurnPaste(t *testing.T) {
	const content = "burn me: one reader only\n"
	ctx := newTab(t)
	fillForm(t, ctx, pasteForm{content: content, burn: true})
	id := submitPlain(t, ctx)

	page := get(t, ctx, "the page's HTML", chromedp.OuterHTML(chromedp.CSS("html")))
	if strings.Contains(page, "burn me") {
		t.Fatalf("the burn page holds the content before the click:\n%s", page)
	}
	status, body := httpGet(t, "/"+id, "text/html")
	if status != http.StatusOK || strings.Contains(body, "burn me") {
		t.Fatalf("GET /%s as HTML: status %d, content shown: %v; want 200 without the content",
			id, status, strings.Contains(body, "burn me"))
	}
	if !strings.Contains(body, `id="reveal"`) {
		t.Errorf("GET /%s as HTML has no #reveal button", id)
	}

	res, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("reveal")))
	if err != nil {
		t.Fatalf("click #reveal: %v", err)
	}
	if res.Status != http.StatusOK {
		t.Fatalf("the reveal ended with status %d", res.Status)
	}
	if got := eval[string](t, ctx, `document.getElementById("paste").textContent`); got != content {
		t.Errorf("#paste after the reveal: got %q, want %q", got, content)
	}

	expectGone(t, ctx, id)
}

func TestEncryptedBurnPaste(t *testing.T) {
	const secret = "top secret, burned after one reading\n"
	ctx := newTab(t)
	fillForm(t, ctx, pasteForm{content: secret, burn: true, encrypt: true})
	id, key := submitEncrypted(t, ctx)
	if key == "" {
		t.Fatalf("the URL of an encrypted paste has no key in its fragment")
	}
	do(t, ctx, "the burn page", chromedp.WaitVisible(chromedp.ID("reveal")))
	if page := get(t, ctx, "the page's HTML", chromedp.OuterHTML(chromedp.CSS("html"))); strings.Contains(page, "pn1.") {
		t.Fatalf("the burn page holds the ciphertext before the click")
	}

	do(t, ctx, "click #reveal", chromedp.Click(chromedp.ID("reveal")))
	waitJS(t, ctx, "the paste decrypted",
		`document.getElementById("paste") && document.getElementById("paste").textContent === `+jsString(secret))
	if !eval[bool](t, ctx, `document.getElementById("burn").hidden && !document.getElementById("revealed").hidden`) {
		t.Errorf("after the reveal, the burn notice is still shown or the paste is not")
	}

	expectGone(t, ctx, id)
}

// expectGone checks that a second visit to a burned paste's page is a 404
// page.
func expectGone(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	do(t, ctx, "leave the page", chromedp.Navigate("about:blank"))
	res := get(t, ctx, "visit /"+id+" again", chromedp.NavigateResponse(suite.baseURL+"/"+id))
	if res.Status != http.StatusNotFound {
		t.Errorf("second visit to /%s: status %d, want 404", id, res.Status)
	}
	if eval[bool](t, ctx, `document.getElementById("paste") !== null || document.getElementById("reveal") !== null`) {
		t.Errorf("second visit to /%s still offers the paste", id)
	}
	if got := eval[string](t, ctx, `document.querySelector("main").innerText`); !strings.Contains(strings.ToLower(got), "not found") {
		t.Errorf("second visit to /%s: the page says %q, want a not-found page", id, got)
	}
}

func TestFormWithoutJavaScript(t *testing.T) {
	const content = "posted by a browser without JavaScript\nsecond line\n"
	ctx := newTab(t)
	do(t, ctx, "turn JavaScript off", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}))
	do(t, ctx, "open the form",
		chromedp.Navigate(suite.baseURL+"/"),
		chromedp.WaitVisible(chromedp.CSS("form#new-paste")),
	)
	// The page's script would have shown the encrypt option.
	if !eval[bool](t, ctx, `document.getElementById("encrypt-option").hidden`) {
		t.Fatalf("the page's script ran: JavaScript is not off")
	}
	do(t, ctx, "fill and submit",
		chromedp.SendKeys(chromedp.CSS("textarea[name=content]"), content),
	)
	id := submitPlain(t, ctx)
	if got := eval[string](t, ctx, `document.getElementById("paste").textContent`); got != content {
		t.Errorf("#paste: got %q, want %q", got, content)
	}
	if !eval[bool](t, ctx, `document.getElementById("copy").hidden`) {
		t.Errorf("the copy button is shown without the script that makes it work")
	}
	if status, raw := httpGet(t, "/raw/"+id, ""); status != http.StatusOK || raw != content {
		t.Errorf("GET /raw/%s: status %d, %q; want 200, %q", id, status, raw, content)
	}
}
