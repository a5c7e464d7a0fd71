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
