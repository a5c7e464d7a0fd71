package ui

import (
	"net/http"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/fsm"
)

// This file holds what the live node (api) and the static mirror (mirror)
// both show of a paste besides its page: the paste as the pages see it,
// its metadata document, and the headers of a page. Both packages call
// these, so a mirror shows exactly what the node does.

// PasteOf is what the pages show of p; the content only with withContent.
func PasteOf(p *fsm.Paste, withContent bool) Paste {
	up := Paste{
		ID:        p.ID,
		Title:     p.Title,
		Lang:      p.Lang,
		CreatedAt: time.Unix(0, p.CreatedAt),
		Burn:      p.Burn,
		Encrypted: p.Encrypted,
	}
	if withContent {
		up.Content = p.Content
	}
	if p.ExpiresAt != 0 {
		up.ExpiresAt = time.Unix(0, p.ExpiresAt)
	}
	return up
}

// MetaOf is the metadata of p, with its URLs under base ("" for paths).
func MetaOf(p *fsm.Paste, base string) pastenode.Meta {
	m := pastenode.Meta{
		ID:        p.ID,
		URL:       base + "/" + p.ID,
		RawURL:    base + "/raw/" + p.ID,
		Title:     p.Title,
		Lang:      p.Lang,
		Size:      len(p.Content),
		CreatedAt: time.Unix(0, p.CreatedAt).UTC(),
		Burn:      p.Burn,
		Encrypted: p.Encrypted,
	}
	if p.ExpiresAt != 0 {
		t := time.Unix(0, p.ExpiresAt).UTC()
		m.ExpiresAt = &t
	}
	return m
}

// SetPageHeaders sets the headers of an HTML page, live or exported.
func SetPageHeaders(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", CSP())
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
}
