package ui

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHighlightBudget: a paste that makes chroma's makefile lexer take
// seconds of CPU is served plain within the budget, and that outcome is
// cached: the second view is as quick and as plain.
func TestHighlightBudget(t *testing.T) {
	u := newUI(t, Options{HighlightBudget: 100 * time.Millisecond})
	p := Paste{ID: "bomb", Lang: "makefile", Content: bytes.Repeat([]byte("a"), 32<<10), CreatedAt: now}
	for i := range 2 {
		start := time.Now()
		var b bytes.Buffer
		if err := u.Paste(&b, p, now); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("view %d took %s, want under a second", i, took)
		}
		if !strings.Contains(b.String(), "took too long") {
			t.Errorf("view %d: no note that highlighting was skipped", i)
		}
	}
	if _, ok := u.cache.get("bomb\x00makefile\x00" + strconvNano(now)); !ok {
		t.Error("the plain outcome is not cached")
	}
}

// TestHighlightShared: concurrent first views of one paste share one render,
// so four of them each answer within a second.
func TestHighlightShared(t *testing.T) {
	u := newUI(t, Options{})
	p := Paste{ID: "shared", Lang: "makefile", Content: bytes.Repeat([]byte("a"), 16<<10), CreatedAt: now}
	var wg sync.WaitGroup
	took := make([]time.Duration, 4)
	for i := range took {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			var b bytes.Buffer
			if err := u.Paste(&b, p, now); err != nil {
				t.Error(err)
			}
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	for i, d := range took {
		if d > time.Second {
			t.Errorf("view %d took %s, want under a second", i, d)
		}
	}
}

// TestHighlightInBudget: an ordinary paste is still highlighted.
func TestHighlightInBudget(t *testing.T) {
	u := newUI(t, Options{})
	var b bytes.Buffer
	if err := u.Paste(&b, Paste{ID: "go", Lang: "Go", Content: []byte(goSource), CreatedAt: now}, now); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<span class="kn">package</span>`) || strings.Contains(b.String(), "took too long") {
		t.Errorf("a small Go paste is not highlighted:\n%s", b.String())
	}
}

func strconvNano(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 36) }

// TestTerminalKeepsThePlainVerdict: terminal reads of a paste that ran out
// of budget take the cached verdict and do not tokenise it again, so they
// cannot hold the tokeniser's slots one budget each.
func TestTerminalKeepsThePlainVerdict(t *testing.T) {
	u := newUI(t, Options{HighlightBudget: 100 * time.Millisecond})
	p := Paste{ID: "tbomb", Lang: "makefile", Content: bytes.Repeat([]byte("a"), 32<<10), CreatedAt: now}
	if err := u.Terminal(io.Discard, p, "", "ansi"); err != nil {
		t.Fatal(err)
	}
	if b, ok := u.cache.get("tbomb\x00makefile\x00" + strconvNano(now)); !ok || !b.plain {
		t.Fatalf("after a terminal read the cache holds %+v, %v; want the plain verdict", b, ok)
	}
	// With every tokeniser slot taken and an hour of budget, a read that
	// tried to tokenise again would wait for an hour.
	u.hl.budget = time.Hour
	for range cap(tokeniserSlots) {
		tokeniserSlots <- struct{}{}
	}
	defer func() {
		for range cap(tokeniserSlots) {
			<-tokeniserSlots
		}
	}()
	done := make(chan error, 1)
	go func() { done <- u.Terminal(io.Discard, p, "", "ansi") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a later terminal read waited to tokenise the paste again")
	}
}

// TestRenderPasteFinal: a page whose highlighting found every tokeniser
// busy is not final, so that an export does not keep it; once the
// tokenisers are free the same paste renders highlighted and final, and
// so does a page that ran out of budget, whose verdict is for good.
func TestRenderPasteFinal(t *testing.T) {
	u := newUI(t, Options{HighlightBudget: 50 * time.Millisecond})
	p := Paste{ID: "go", Lang: "Go", Content: []byte(goSource), CreatedAt: now}
	render := func() (string, bool) {
		t.Helper()
		var b bytes.Buffer
		final, err := u.RenderPaste(&b, p, now)
		if err != nil {
			t.Fatal(err)
		}
		return b.String(), final
	}
	for range cap(tokeniserSlots) {
		tokeniserSlots <- struct{}{}
	}
	page, final := render()
	for range cap(tokeniserSlots) {
		<-tokeniserSlots
	}
	if lit := strings.Contains(page, `<span class="kn">package</span>`); final || lit {
		t.Errorf("with every tokeniser busy: final %v, highlighted %v; want a plain page that is not final", final, lit)
	}
	if !strings.Contains(page, "highlighter was busy") || strings.Contains(page, "took too long") {
		t.Error("with every tokeniser busy, the page does not say that the highlighter was busy, or says the paste took too long")
	}
	if page, final = render(); !final || !strings.Contains(page, `<span class="kn">package</span>`) {
		t.Errorf("with the tokenisers free: final %v; want a highlighted, final page", final)
	}
	p = Paste{ID: "bomb", Lang: "makefile", Content: bytes.Repeat([]byte("a"), 32<<10), CreatedAt: now}
	if page, final = render(); !final || !strings.Contains(page, "took too long") {
		t.Errorf("over budget: final %v; want the plain page, final", final)
	}
}
