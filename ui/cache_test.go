package ui

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"
	"testing"
	"time"
)

func TestBodyCacheStaysWithinBudget(t *testing.T) {
	c := newBodyCache(1000)
	for i := range 50 {
		c.add(fmt.Sprint(i), renderedBody{html: template.HTML(strings.Repeat("x", 100))})
		if c.bytes > c.max {
			t.Fatalf("after %d adds the cache holds %d bytes, over its budget of %d", i+1, c.bytes, c.max)
		}
	}
	if _, ok := c.get("49"); !ok {
		t.Error("the newest entry was evicted")
	}
	if _, ok := c.get("0"); ok {
		t.Error("the oldest entry survived past the budget")
	}
	c.add("49", renderedBody{html: "short"})
	if got, want := c.bytes, 9*100+len("short"); got != want {
		t.Errorf("after replacing an entry the cache counts %d bytes, want %d", got, want)
	}
}

func TestCachedPageEqualsFreshPage(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := Paste{ID: "abc", Lang: "Go", Content: []byte("package main\n\nfunc main() {}\n"), CreatedAt: now}
	cached, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := New(Options{HighlightCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	var first, second, uncached bytes.Buffer
	for _, r := range []struct {
		u *UI
		w *bytes.Buffer
	}{{cached, &first}, {cached, &second}, {fresh, &uncached}} {
		if err := r.u.Paste(r.w, p, now); err != nil {
			t.Fatal(err)
		}
	}
	if first.String() != second.String() || first.String() != uncached.String() {
		t.Fatal("a page rendered from the cache differs from a freshly highlighted one")
	}
	if cached.cache.lru.Len() != 1 || fresh.cache != nil {
		t.Fatalf("cache entries = %d (want 1), disabled cache = %v (want nil)", cached.cache.lru.Len(), fresh.cache)
	}
}

// TestCacheOfIsReadNotFilled shows that a UI given CacheOf takes the other
// UI's highlighted bodies and leaves its cache as it was.
func TestCacheOfIsReadNotFilled(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	live, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	export, err := New(Options{Mirror: true, HighlightCacheBytes: -1, CacheOf: live})
	if err != nil {
		t.Fatal(err)
	}
	seen := Paste{ID: "seen", Lang: "go", Content: []byte("package main\n"), CreatedAt: now}
	if err := live.Paste(&bytes.Buffer{}, seen, now); err != nil {
		t.Fatal(err)
	}
	// A marker in the cached body shows the export took it from there
	// rather than highlighting again.
	for _, k := range live.cache.lru.Keys() {
		b, _ := live.cache.lru.Peek(k)
		live.cache.lru.Add(k, renderedBody{html: b.html + "<!--cached-->", lines: b.lines})
	}
	var page bytes.Buffer
	if err := export.Paste(&page, seen, now); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "<!--cached-->") {
		t.Error("the export highlighted a paste that the live cache had")
	}
	unseen := Paste{ID: "unseen", Lang: "go", Content: []byte("package other\n"), CreatedAt: now}
	if err := export.Paste(&bytes.Buffer{}, unseen, now); err != nil {
		t.Fatal(err)
	}
	if got := live.cache.lru.Len(); got != 1 {
		t.Errorf("the live cache holds %d entries after the export, want 1", got)
	}
}
