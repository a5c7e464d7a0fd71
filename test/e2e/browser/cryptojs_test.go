package browser

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// oldVector is one of the old pastebin's encrypted pastes, made by openssl
// in CryptoJS's format (testdata/cryptojs/gen.sh).
type oldVector struct {
	name, enc, plain, pass string
}

func readOldVector(t *testing.T, name string) oldVector {
	t.Helper()
	v := oldVector{name: name}
	for _, f := range []struct {
		ext string
		to  *string
	}{{".enc", &v.enc}, {".txt", &v.plain}, {".pass", &v.pass}} {
		b, err := os.ReadFile(filepath.Join("testdata", "cryptojs", name+f.ext))
		if err != nil {
			t.Fatal(err)
		}
		*f.to = string(b)
	}
	return v
}

// postCiphertext stores text as an encrypted paste, as an import of the
// old pastebin's paste stores it, and returns its id.
func postCiphertext(t *testing.T, text, query string) string {
	t.Helper()
	res, err := http.Post(suite.baseURL+"/?encrypted=true"+query, "application/octet-stream", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	id := res.Header.Get("X-Paste-Id")
	if res.StatusCode != http.StatusCreated || id == "" {
		t.Fatalf("store the ciphertext: status %d, id %q", res.StatusCode, id)
	}
	return id
}

// TestOldPastebinEncryptedOpens: the page decrypts the old Rust
// pastebin's CryptoJS pastes (OpenSSL's Salted__ format, an MD5 key
// derivation, AES-256-CBC) with their passphrase, and refuses a wrong one.
func TestOldPastebinEncryptedOpens(t *testing.T) {
	ctx := newTab(t)
	for _, name := range []string{"ascii", "unicode", "long"} {
		v := readOldVector(t, name)
		if strings.Contains(v.enc, v.plain[:10]) || !strings.HasPrefix(v.enc, "U2FsdGVkX1") {
			t.Fatalf("%s.enc is not a Salted__ ciphertext of %s.txt", name, name)
		}
		id := postCiphertext(t, v.enc, "")
		do(t, ctx, name+": open the paste",
			chromedp.Navigate(suite.baseURL+"/"+id),
			chromedp.WaitVisible(chromedp.ID("unlock-password")))
		if got := eval[string](t, ctx, `document.getElementById("paste").textContent`); strings.Contains(got, v.plain[:10]) {
			t.Fatalf("%s: #paste shows %q before the passphrase", name, got)
		}

		do(t, ctx, name+": a wrong passphrase",
			chromedp.SetValue(chromedp.ID("unlock-password"), v.pass+"x"),
			chromedp.Click(chromedp.ID("unlock")))
		waitJS(t, ctx, name+": the error of a wrong passphrase",
			`!document.getElementById("decrypt-error").hidden && document.getElementById("decrypt-error").textContent.includes("wrong key or password")`)
		if eval[string](t, ctx, `document.getElementById("paste").getAttribute("data-state") || ""`) == "decrypted" {
			t.Fatalf("%s: a wrong passphrase decrypted the paste", name)
		}
		do(t, ctx, name+": the unlock button back", chromedp.WaitEnabled(chromedp.ID("unlock")))

		do(t, ctx, name+": the passphrase",
			chromedp.SetValue(chromedp.ID("unlock-password"), v.pass),
			chromedp.Click(chromedp.ID("unlock")))
		waitJS(t, ctx, name+": the paste decrypted",
			`document.getElementById("paste").getAttribute("data-state") === "decrypted"`)
		if got := eval[string](t, ctx, `document.getElementById("paste").textContent`); got != v.plain {
			t.Errorf("%s: #paste holds %q, want %q", name, got, v.plain)
		}
	}

	// A burn paste: the reveal fetches it once, then the passphrase opens it.
	v := readOldVector(t, "unicode")
	id := postCiphertext(t, v.enc, "&burn=true")
	do(t, ctx, "reveal the burn paste",
		chromedp.Navigate(suite.baseURL+"/"+id),
		chromedp.Click(chromedp.ID("reveal")),
		chromedp.WaitVisible(chromedp.ID("unlock-password")),
		chromedp.SetValue(chromedp.ID("unlock-password"), v.pass),
		chromedp.Click(chromedp.ID("unlock")))
	waitJS(t, ctx, "the burn paste decrypted", `document.getElementById("paste").textContent === `+jsString(v.plain))
	if status, _ := httpGet(t, "/raw/"+id, ""); status != http.StatusNotFound {
		t.Errorf("GET /raw/%s after the reveal: status %d, want 404", id, status)
	}

	// Not base64 of Salted__, nor pn1: the page says it does not know it.
	id = postCiphertext(t, "U2FsdGVkX1 is not what follows", "")
	do(t, ctx, "open a paste in no format", chromedp.Navigate(suite.baseURL+"/"+id))
	waitJS(t, ctx, "the unknown format's message",
		`!document.getElementById("decrypt-error").hidden && document.getElementById("decrypt-error").textContent.includes("not in a format")`)
}
