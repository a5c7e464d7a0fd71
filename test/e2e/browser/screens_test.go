package browser

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// screensDir is where the screenshots are copied for a person to look at.
const screensDir = "/tmp/pastenode-screens"

// colorScheme emulates the system's prefers-color-scheme.
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	})
}

// TestScreenshots takes screenshots of the new-paste page, a highlighted
// paste and a rendered Markdown paste, in both themes, on a desktop and a phone viewport. It
// checks what a person would notice first: the theme follows the system,
// text keeps its contrast, and nothing is wider than the viewport.
func TestScreenshots(t *testing.T) {
	ctx := newTab(t)
	fillForm(t, ctx, pasteForm{content: goSource + "\n// " + longLine + "\n", lang: "Go"})
	id := submitPlain(t, ctx)
	fillForm(t, ctx, pasteForm{content: screenMarkdown, lang: "markdown"})
	md := submitPlain(t, ctx)

	dir := t.TempDir()
	if err := os.MkdirAll(screensDir, 0o755); err != nil {
		t.Fatal(err)
	}
	pages := []struct{ name, path string }{
		{"new-paste", "/"},
		{"paste-go", "/" + id + "#L3"},
		{"paste-markdown", "/" + md},
	}
	viewports := []struct {
		name          string
		width, height int64
		mobile        bool
	}{
		{"desktop", 1280, 800, false},
		{"phone", 390, 844, true},
	}
	for _, scheme := range []string{"light", "dark"} {
		for _, vp := range viewports {
			for _, pg := range pages {
				name := fmt.Sprintf("%s-%s-%s", pg.name, scheme, vp.name)
				t.Run(name, func(t *testing.T) {
					opts := []chromedp.EmulateViewportOption{}
					if vp.mobile {
						opts = append(opts, chromedp.EmulateMobile)
					}
					do(t, ctx, "emulate "+name,
						chromedp.EmulateViewport(vp.width, vp.height, opts...),
						colorScheme(scheme),
						chromedp.Navigate("about:blank"),
						chromedp.Navigate(suite.baseURL+pg.path),
						chromedp.WaitVisible(chromedp.CSS("main")),
					)
					checkTheme(t, ctx, scheme)
					if w := eval[int](t, ctx, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); w > 0 {
						t.Errorf("the page is %dpx wider than the %dpx viewport", w, vp.width)
					}
					png := get(t, ctx, "screenshot", chromedp.FullScreenshot(100))
					if !bytes.HasPrefix(png, []byte("\x89PNG")) {
						t.Fatalf("the screenshot is not a PNG")
					}
					for _, d := range []string{dir, screensDir} {
						p := filepath.Join(d, name+".png")
						if err := os.WriteFile(p, png, 0o644); err != nil {
							t.Fatal(err)
						}
						t.Logf("wrote %s", p)
					}
				})
			}
		}
	}
}

// screenMarkdown is a Markdown paste with the elements a rendering styles.
const screenMarkdown = "# Release notes\n\nThis is **important**, see [the docs](https://example.com/docs) and `code`.\n\n" +
	"## Changes\n\n- [x] done\n- [ ] ~~dropped~~ later\n\n> A quote, " + longLine + "\n\n" +
	"```go\nfunc main() {} // " + longLine + "\n```\n\n| key | value |\n|:--|--:|\n| a | 1 |\n\n---\n"

// longLine is wider than any viewport, to show how a long line scrolls.
const longLine = "a comment much longer than the screen is wide, to see that it scrolls inside the paste and not the page: " +
	"lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua"

// checkTheme checks that the page follows the emulated colour scheme: the
// background is light or dark, and the text has contrast against it.
func checkTheme(t *testing.T, ctx context.Context, scheme string) {
	t.Helper()
	// Relative luminance of the body's background and text (WCAG 2).
	lum := eval[[]float64](t, ctx, `(() => {
		const l = c => {
			const [r, g, b] = c.match(/[\d.]+/g).slice(0, 3).map(v => {
				v = v / 255;
				return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
			});
			return 0.2126 * r + 0.7152 * g + 0.0722 * b;
		};
		const s = getComputedStyle(document.body);
		return [l(s.backgroundColor), l(s.color)];
	})()`)
	bg, fg := lum[0], lum[1]
	if dark := bg < 0.2; dark != (scheme == "dark") {
		t.Errorf("%s scheme: the background's luminance is %.2f", scheme, bg)
	}
	hi, lo := max(bg, fg), min(bg, fg)
	if ratio := (hi + 0.05) / (lo + 0.05); ratio < 7 {
		t.Errorf("%s scheme: text contrast %.1f:1, want at least 7:1", scheme, ratio)
	}
}
