package ui

import (
	"strings"
	"testing"
	"time"
)

func TestRelTime(t *testing.T) {
	tests := []struct {
		d    time.Duration // from now
		want string
	}{
		{0, "just now"},
		{-30 * time.Second, "just now"},
		{30 * time.Second, "in less than a minute"},
		{-time.Minute, "1 minute ago"},
		{-3 * time.Minute, "3 minutes ago"},
		{-3*time.Minute - 20*time.Second, "3 minutes ago"},
		{10 * time.Minute, "in 10 minutes"},
		{time.Hour - 3*time.Second, "in 1 hour"},
		{time.Hour, "in 1 hour"},
		{-5 * time.Hour, "5 hours ago"},
		{24 * time.Hour, "in 1 day"},
		{-3 * 24 * time.Hour, "3 days ago"},
		{7*24*time.Hour - time.Minute, "in 1 week"},
		{-14 * 24 * time.Hour, "2 weeks ago"},
		{-60 * 24 * time.Hour, "2 months ago"},
		{-400 * 24 * time.Hour, "1 year ago"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := relTime(now.Add(tt.d), now); got != tt.want {
				t.Errorf("relTime(now%+v) = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}

// TestMirrorPagesDoNotAge checks that a mirror's page of a paste is the
// same whenever it is rendered, with fixed times the script makes
// relative, while a live page says how long ago: an export stores its
// pages for as long as a mirror serves them, and caches them between
// exports.
func TestMirrorPagesDoNotAge(t *testing.T) {
	created := time.Date(2026, 3, 14, 15, 6, 26, 0, time.UTC)
	p := Paste{ID: "abc123", Content: []byte("hello\n"), CreatedAt: created, ExpiresAt: created.Add(48 * time.Hour)}
	render := func(opts Options, now time.Time) string {
		t.Helper()
		u, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := u.Paste(&b, p, now); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	soon, later := created.Add(time.Minute), created.Add(30*24*time.Hour)
	mirror := render(Options{Mirror: true}, soon)
	if other := render(Options{Mirror: true}, later); other != mirror {
		t.Errorf("a mirror's page rendered a month later differs:\n%s\n\nagainst\n%s", other, mirror)
	}
	for _, want := range []string{
		`<time datetime="2026-03-14T15:06:26Z" title="2026-03-14T15:06:26Z" data-relative>2026-03-14 15:06 UTC</time>`,
		`<time datetime="2026-03-16T15:06:26Z" title="2026-03-16T15:06:26Z" data-relative>2026-03-16 15:06 UTC</time>`,
	} {
		if !strings.Contains(mirror, want) {
			t.Errorf("the mirror's page lacks %s", want)
		}
	}
	live := render(Options{}, soon)
	for _, want := range []string{">1 minute ago</time>", ">in 2 days</time>"} {
		if !strings.Contains(live, want) {
			t.Errorf("the live page lacks %s", want)
		}
	}
	if strings.Contains(live, "data-relative") {
		t.Error("the live page asks the script to rewrite its times")
	}
}
