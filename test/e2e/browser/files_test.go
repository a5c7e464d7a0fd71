package browser

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// writeFile writes a file for the browser to take and returns its path.
func writeFile(t *testing.T, name string, content []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// openForm opens the new-paste form and waits for its script.
func openForm(t *testing.T, ctx context.Context) {
	t.Helper()
	do(t, ctx, "open the form", chromedp.Navigate(suite.baseURL+"/"), chromedp.WaitVisible(chromedp.ID("file")))
}

// pick picks the file at path with the form's file input.
func pick(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	do(t, ctx, "pick "+filepath.Base(path), chromedp.SetUploadFiles(chromedp.ID("file"), []string{path}))
}

// formError waits for the form's error and returns it.
func formError(t *testing.T, ctx context.Context, what string) string {
	t.Helper()
	waitJS(t, ctx, what, `!document.getElementById("form-error").hidden`)
	return eval[string](t, ctx, `document.getElementById("form-error").textContent`)
}

// TestFilePicked picks main.go: the form gets its text, its name as the
// title and Go as the language. A binary file and one over the size
// limit are refused with a message and leave the form as it was. The
// paste, encrypted, holds the file's text.
func TestFilePicked(t *testing.T) {
	ctx := newTab(t)
	openForm(t, ctx)
	pick(t, ctx, writeFile(t, "main.go", []byte(goSource)))
	waitJS(t, ctx, "the form filled from main.go", `document.getElementById("content").value === `+jsString(goSource)+` &&
		document.getElementById("title").value === "main.go" && document.getElementById("lang").value === "Go"`)

	pick(t, ctx, writeFile(t, "logo.png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")))
	if msg := formError(t, ctx, "the binary file's error"); !strings.Contains(msg, "logo.png") || !strings.Contains(msg, "binary") {
		t.Errorf("the form says %q for a binary file, want that logo.png is binary", msg)
	}
	pick(t, ctx, writeFile(t, "huge.log", bytes.Repeat([]byte("x"), 1<<20+1)))
	if msg := formError(t, ctx, "the large file's error"); !strings.Contains(msg, "huge.log") || !strings.Contains(msg, "over the limit of 1 MiB") {
		t.Errorf("the form says %q for a file over the limit, want that huge.log is over 1 MiB", msg)
	}
	got := eval[[]string](t, ctx, `["content", "title", "lang"].map(id => document.getElementById(id).value)`)
	if got[0] != goSource || got[1] != "main.go" || got[2] != "Go" {
		t.Errorf("after the refused files the form holds %q; want main.go's", got)
	}

	do(t, ctx, "tick encrypt", chromedp.Click(chromedp.CSS("input[name=encrypt]")))
	id, key := submitEncrypted(t, ctx)
	if _, raw := httpGet(t, "/raw/"+id, ""); !strings.HasPrefix(raw, "pn1.k.") || strings.Contains(raw, "package main") {
		t.Errorf("the server holds %q, want the ciphertext", raw)
	}
	if key == "" {
		t.Fatal("the encrypted paste's URL has no key")
	}
	waitJS(t, ctx, "the paste decrypted", `document.getElementById("paste").textContent === `+jsString(goSource))
	if got := eval[string](t, ctx, `document.querySelector("h1").textContent`); got != "main.go" {
		t.Errorf("the paste's title is %q, want main.go", got)
	}
}

// TestFileDropped drops a Markdown file with CRLF line breaks on the
// form: it fills the form, and the paste holds the file's exact bytes,
// which the textarea alone would have turned into LF.
func TestFileDropped(t *testing.T) {
	const notes = "# Notes\r\n\r\nwritten on Windows\r\n"
	ctx := newTab(t)
	openForm(t, ctx)
	path := writeFile(t, "notes.md", []byte(notes))
	xy := eval[[]float64](t, ctx, `(r => [r.x + r.width / 2, r.y + r.height / 2])(document.getElementById("content").getBoundingClientRect())`)
	data := &input.DragData{Items: []*input.DragDataItem{}, Files: []string{path}, DragOperationsMask: 1}
	for _, typ := range []input.DispatchDragEventType{input.DispatchDragEventTypeDragEnter, input.DispatchDragEventTypeDragOver, input.DispatchDragEventTypeDrop} {
		do(t, ctx, "drag notes.md: "+typ.String(), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, input.DispatchDragEvent, input.DispatchDragEventParams{Type: typ, X: xy[0], Y: xy[1], Data: data})
			return err
		}))
	}
	waitJS(t, ctx, "the form filled from notes.md", `document.getElementById("title").value === "notes.md" &&
		document.getElementById("lang").value === "markdown" && document.getElementById("content").value.startsWith("# Notes")`)
	id := submitPlain(t, ctx)
	if status, raw := httpGet(t, "/raw/"+id, ""); status != http.StatusOK || raw != notes {
		t.Errorf("GET /raw/%s: status %d, %q; want the file's bytes %q", id, status, raw, notes)
	}
}

// TestSizeCheckedBeforeSending: text within the limit that encryption
// takes over it is refused in the page, and nothing is sent.
func TestSizeCheckedBeforeSending(t *testing.T) {
	ctx := newTab(t)
	var log requestLog
	log.listen(t, ctx)
	openForm(t, ctx)
	do(t, ctx, "fill 1000 KiB and tick encrypt",
		chromedp.SetValue(chromedp.ID("content"), strings.Repeat("x", 1000<<10)),
		chromedp.Click(chromedp.CSS("input[name=encrypt]")),
		chromedp.Click(chromedp.ID("submit")))
	if msg := formError(t, ctx, "the size error"); !strings.Contains(msg, "Encrypted, this paste is 1.3 MiB, over the limit of 1 MiB") {
		t.Errorf("the form says %q, want that the encrypted paste is over the limit", msg)
	}
	if sent := log.containing("/api/v1/pastes"); len(sent) > 0 {
		t.Errorf("the form sent %q", sent)
	}
}
