package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestSkeletonMatchesTemplate renders paste pages of every shape from
// their skeleton and through the template, and wants the same bytes.
func TestSkeletonMatchesTemplate(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	base := Paste{ID: "aB3-x_9", Content: []byte("one\ntwo <b>&amp;\n"), CreatedAt: now.Add(-time.Hour)}
	with := func(f func(*Paste)) Paste { p := base; f(&p); return p }
	pastes := map[string]Paste{
		"plain":    base,
		"go":       with(func(p *Paste) { p.Lang, p.Content = "Go", []byte("package main\n\nfunc main() {}\n") }),
		"one line": with(func(p *Paste) { p.Content = []byte("just one") }),
		"empty":    with(func(p *Paste) { p.Content = nil }),
		"expires":  with(func(p *Paste) { p.ExpiresAt = now.Add(time.Hour) }),
		"expires, one line": with(func(p *Paste) {
			p.ExpiresAt, p.Content = now.Add(time.Hour), []byte("x")
		}),
		"title":      with(func(p *Paste) { p.Title = "Notes · día 1 (draft) 🚀" }),
		"long lines": with(func(p *Paste) { p.Content = []byte(strings.Repeat("line\n", 12345)) }),
		"markdown": with(func(p *Paste) {
			p.Lang, p.Content = "markdown", []byte("# Notes\n\nSome **bold** text, a [link](https://example.com/a?b=c&d).\n")
		}),
		"markdown, one line, expires": with(func(p *Paste) {
			p.Lang, p.Content, p.ExpiresAt = "markdown", []byte("*just* this"), now.Add(time.Hour)
		}),
	}
	for _, opts := range []Options{{}, {Mirror: true}, {BasePath: "/paste"}} {
		u, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range pastes {
			v := u.pasteView(p, now)
			if _, ok := valuesOf(&v); !ok {
				t.Errorf("%+v %s: not written from a skeleton", opts, name)
			}
			var fast, slow bytes.Buffer
			if err := u.Paste(&fast, p, now); err != nil {
				t.Fatal(err)
			}
			if err := u.render(&slow, "paste", v); err != nil {
				t.Fatal(err)
			}
			if fast.String() != slow.String() {
				t.Errorf("%+v %s: skeleton wrote\n%s\ntemplate wrote\n%s", opts, name, fast.String(), slow.String())
			}
		}
	}
}

// TestSkeletonLeavesOthersToTemplate checks that a value the template
// would escape, or a page with notes, takes the template.
func TestSkeletonLeavesOthersToTemplate(t *testing.T) {
	u, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for name, p := range map[string]Paste{
		"title with <":  {ID: "a", Title: "a<b", Content: []byte("x")},
		"title with +":  {ID: "a", Title: "a+b", Content: []byte("x")},
		"title with \"": {ID: "a", Title: `"q"`, Content: []byte("x")},
		"id with space": {ID: "a b", Content: []byte("x")},
		"id with dot":   {ID: "a.b", Content: []byte("x")},
		"encrypted":     {ID: "a", Encrypted: true, Content: []byte("x")},
		"burned":        {ID: "a", Burn: true, Content: []byte("x")},
		"invalid utf-8": {ID: "a", Content: []byte{0xff}},
	} {
		v := u.pasteView(p, now)
		if _, ok := valuesOf(&v); ok {
			t.Errorf("%s: would be written from a skeleton", name)
		}
	}
}

// BenchmarkPastePage renders the page of a plain 1 KiB paste.
func BenchmarkPastePage(b *testing.B) {
	u, err := New(Options{Mirror: true})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	p := Paste{ID: "abcdefghij", Content: bytes.Repeat([]byte("some words of text\n"), 54), CreatedAt: now}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := u.Paste(&buf, p, now); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSkeletonSlots checks that each shape's skeleton has a slot for
// every value its page shows and no other: a one-line page says "1 line"
// as a constant, only an expiring page has the expiry's slots, and only
// a Markdown page the rendering's.
func TestSkeletonSlots(t *testing.T) {
	u, err := New(Options{Mirror: true})
	if err != nil {
		t.Fatal(err)
	}
	for sh, s := range u.skeletons {
		count := map[slot]int{}
		for _, sl := range s.slots {
			count[sl]++
		}
		if got := count[slotLines]; (got == 0) != sh.oneLine {
			t.Errorf("%+v: %d slots for the line count", sh, got)
		}
		if got := count[slotExpiresRel]; (got == 1) != sh.expires {
			t.Errorf("%+v: %d slots for the expiry", sh, got)
		}
		if got := count[slotMarkdown]; (got == 1) != sh.markdown {
			t.Errorf("%+v: %d slots for the rendered Markdown", sh, got)
		}
		for _, sl := range []slot{slotHeadTitle, slotHeading, slotBody, slotCreatedRel} {
			if count[sl] != 1 {
				t.Errorf("%+v: slot %d appears %d times, want once", sh, sl, count[sl])
			}
		}
	}
}
