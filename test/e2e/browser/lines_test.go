package browser

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// numberedLines is n lines of Python, each saying its number.
func numberedLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "print(%d)\n", i)
	}
	return b.String()
}

// marked returns the ids of the lines the page marks: those with a
// background of the marked colour, which only a marked line has.
func marked(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return eval[[]string](t, ctx, `(() => {
		const lines = Array.from(document.querySelectorAll("#paste .line"));
		const plain = getComputedStyle(lines.find(l => !l.classList.contains("marked") && !l.matches(":target"))).backgroundColor;
		return lines.filter(l => getComputedStyle(l).backgroundColor !== plain).map(l => l.id);
	})()`)
}

// wantMarked fails the test unless the page marks exactly the lines
// from..to.
func wantMarked(t *testing.T, ctx context.Context, what string, from, to int) {
	t.Helper()
	var want []string
	for i := from; i <= to; i++ {
		want = append(want, fmt.Sprintf("L%d", i))
	}
	if got := marked(t, ctx); !slices.Equal(got, want) {
		t.Errorf("%s: marked lines %v, want %v", what, got, want)
	}
}

// inView reports whether the line with id is in the viewport, below a
// line of context.
func inView(t *testing.T, ctx context.Context, id string) bool {
	t.Helper()
	return eval[bool](t, ctx, `(r => r.top >= r.height && r.bottom <= innerHeight)(document.getElementById(`+jsString(id)+`).getBoundingClientRect())`)
}

// shiftClick clicks the number of a line with shift held.
func shiftClick(t *testing.T, ctx context.Context, line int) {
	t.Helper()
	sel := chromedp.CSS(fmt.Sprintf(`a.ln[href="#L%d"]`, line))
	nodes := get(t, ctx, "find line "+fmt.Sprint(line), chromedp.Nodes(sel, chromedp.NodeVisible))
	do(t, ctx, "shift-click line "+fmt.Sprint(line), chromedp.MouseClickNode(nodes[0], chromedp.ButtonModifiers(chromedp.ModifierShift)))
}

// TestLineRange opens links to ranges of lines, and to one line, and
// makes them by clicking line numbers: #L3-L5 marks exactly lines 3 to 5,
// a link scrolls to its lines, a click sets #L<n> and a shift-click a
// range. The same holds for a ?lang= view and for a Markdown paste's
// source.
func TestLineRange(t *testing.T) {
	ctx := newTab(t)
	id := postPaste(t, suite.baseURL, numberedLines(200), "lang=python")
	open := func(path string) {
		t.Helper()
		reload(t, ctx, suite.baseURL+path)
		waitJS(t, ctx, "the page's script", `document.readyState === "complete" && document.getElementById("paste").classList.contains("marking")`)
	}

	open("/" + id + "#L3-L5")
	wantMarked(t, ctx, "#L3-L5", 3, 5)
	open("/" + id + "#L5-L3")
	wantMarked(t, ctx, "#L5-L3", 3, 5)
	open("/" + id + "#L150-L152")
	wantMarked(t, ctx, "#L150-L152", 150, 152)
	if !inView(t, ctx, "L150") {
		t.Errorf("#L150-L152: line 150 is not in view")
	}
	open("/" + id + "#L120")
	wantMarked(t, ctx, "#L120", 120, 120)
	if !inView(t, ctx, "L120") {
		t.Errorf("#L120: line 120 is not in view")
	}

	open("/" + id)
	wantMarked(t, ctx, "no fragment", 1, 0)
	do(t, ctx, "click line 10", chromedp.Click(chromedp.CSS(`a.ln[href="#L10"]`)))
	waitJS(t, ctx, "#L10", `location.hash === "#L10"`)
	wantMarked(t, ctx, "a click on line 10", 10, 10)
	shiftClick(t, ctx, 12)
	waitJS(t, ctx, "#L10-L12", `location.hash === "#L10-L12"`)
	wantMarked(t, ctx, "a shift-click on line 12", 10, 12)
	shiftClick(t, ctx, 8)
	waitJS(t, ctx, "#L8-L10", `location.hash === "#L8-L10"`)
	wantMarked(t, ctx, "a shift-click on line 8", 8, 10)
	if got := location(t, ctx); got.Path != "/"+id {
		t.Errorf("after the clicks the tab shows %s, want the paste's page", got)
	}
	if got := eval[string](t, ctx, `window.getSelection().toString()`); got != "" {
		t.Errorf("the shift-clicks selected %q", got)
	}
	do(t, ctx, "go back", chromedp.NavigateBack())
	waitJS(t, ctx, "#L10-L12 again", `location.hash === "#L10-L12"`)
	wantMarked(t, ctx, "back to #L10-L12", 10, 12)

	open("/" + id + "?lang=go#L3-L5")
	wantMarked(t, ctx, "?lang=go#L3-L5", 3, 5)

	md := postPaste(t, suite.baseURL, "# Title\n\nline 3\n\nline 5\n", "lang=markdown")
	open("/" + md + "#L3-L5")
	wantMarked(t, ctx, "Markdown #L3-L5", 3, 5)
	if shown := eval[bool](t, ctx, `getComputedStyle(document.getElementById("rendered")).display === "none"`); !shown {
		t.Errorf("Markdown #L3-L5: the rendering is shown, want the source")
	}
}

// TestLineLinkWithoutJavaScript: without the script, a link to a line
// marks that line.
func TestLineLinkWithoutJavaScript(t *testing.T) {
	ctx := newTab(t)
	id := postPaste(t, suite.baseURL, numberedLines(8), "lang=python")
	do(t, ctx, "turn JavaScript off", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}))
	reload(t, ctx, suite.baseURL+"/"+id+"#L4")
	if eval[bool](t, ctx, `document.getElementById("paste").classList.contains("marking")`) {
		t.Fatal("the page's script ran: JavaScript is not off")
	}
	wantMarked(t, ctx, "#L4 without the script", 4, 4)
}
