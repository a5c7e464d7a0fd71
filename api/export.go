package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/pastenode/pastenode/cdb"
	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/ui"
)

// ExportStats describes one export.
type ExportStats struct {
	Index   uint64 // the Raft log index of the state exported
	Pastes  int    // pastes in the archive
	Burn    int    // burn-after-reading pastes, never exported
	Expired int    // pastes already expired, left out
	Skipped int    // pastes whose id cannot be an archive path, left out
	Bytes   int64  // content bytes of the exported pastes
}

// exportMaxAge caps how long, in seconds, a client or cache may keep what
// a mirror serves: a static server cannot revalidate, and an export is
// replaced by the next one.
const exportMaxAge = 3600

// exportAssets are the ui's static files, stored under /static/; the
// pages link them with a ?v= query that kawipiko ignores.
var exportAssets = []string{"app.css", "app.js"}

// WriteExport writes a kawipiko-2022a archive of view to w: for every live
// paste that may be mirrored, its raw bytes at /raw/{id}, its page at
// /{id} and its metadata at /api/v1/pastes/{id}; and the site around them:
// the mirror's index page at /, the stylesheet and script under /static/,
// and the 404 page as the /* wildcard. Burn-after-reading pastes are never
// exported, nor pastes expired at now; encrypted pastes are, as the
// ciphertext and the page that decrypts it in the browser.
//
// pages renders the HTML and should be a mirror UI (ui.Options{Mirror:
// true}). The view is one consistent state, so the archive is too, however
// long the export takes and whatever is written meanwhile. On error the
// content of w is incomplete and should be discarded.
func WriteExport(ctx context.Context, w io.WriteSeeker, view fsm.View, pages *ui.UI, now time.Time) (ExportStats, error) {
	st := ExportStats{Index: view.Index()}
	aw, err := cdb.NewArchive(w)
	if err != nil {
		return st, fmt.Errorf("export: %w", err)
	}
	e := &exporter{aw: aw, pages: pages, now: now}
	if err := e.site(); err != nil {
		return st, fmt.Errorf("export: %w", err)
	}
	var werr error
	view.Walk(func(p *fsm.Paste) bool {
		switch {
		case p.Burn:
			st.Burn++
			return true
		case p.Expired(now.UnixNano()):
			st.Expired++
			return true
		case !exportable(p.ID):
			st.Skipped++
			return true
		}
		if st.Pastes%256 == 0 {
			if werr = ctx.Err(); werr != nil {
				return false
			}
		}
		if werr = e.paste(p); werr != nil {
			werr = fmt.Errorf("paste %s: %w", p.ID, werr)
			return false
		}
		st.Pastes++
		st.Bytes += int64(len(p.Content))
		return true
	})
	if werr != nil {
		return st, fmt.Errorf("export: %w", werr)
	}
	if err := aw.Close(); err != nil {
		return st, fmt.Errorf("export: %w", err)
	}
	return st, nil
}

// exporter writes the files of one archive.
type exporter struct {
	aw    *cdb.ArchiveWriter
	pages *ui.UI
	now   time.Time
	buf   bytes.Buffer // the page being rendered
}

// site adds the files that are not pastes.
func (e *exporter) site() error {
	for _, name := range exportAssets {
		body, ctype, ok := e.pages.Asset(name)
		if !ok {
			return fmt.Errorf("ui has no asset %s", name)
		}
		h := http.Header{}
		h.Set("Content-Type", ctype)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "public, max-age="+strconv.Itoa(exportMaxAge))
		if err := e.add("/static/"+name, http.StatusOK, h, body); err != nil {
			return err
		}
	}

	e.buf.Reset()
	if err := e.pages.Index(&e.buf, ui.IndexData{}); err != nil {
		return err
	}
	h := pageHeaders()
	h.Set("Cache-Control", "no-cache")
	if err := e.add("/", http.StatusOK, h, e.buf.Bytes()); err != nil {
		return err
	}

	e.buf.Reset()
	if err := e.pages.Error(&e.buf, http.StatusNotFound, ""); err != nil {
		return err
	}
	h = pageHeaders()
	h.Set("Cache-Control", "no-store")
	return e.add("/*", http.StatusNotFound, h, e.buf.Bytes())
}

// paste adds the raw bytes, the page and the metadata of p.
func (e *exporter) paste(p *fsm.Paste) error {
	h := http.Header{}
	rawHeaders(headerSink(h), p)
	e.cacheHeaders(h, p)
	if err := e.add("/raw/"+p.ID, http.StatusOK, h, p.Content); err != nil {
		return err
	}

	e.buf.Reset()
	if err := e.pages.Paste(&e.buf, uiPaste(p, true), e.now); err != nil {
		return err
	}
	h = pageHeaders()
	e.cacheHeaders(h, p)
	if err := e.add("/"+p.ID, http.StatusOK, h, e.buf.Bytes()); err != nil {
		return err
	}

	meta, err := json.MarshalIndent(metaOf(p, ""), "", "  ")
	if err != nil {
		return err
	}
	h = http.Header{}
	h.Set("Content-Type", "application/json")
	e.cacheHeaders(h, p)
	return e.add("/api/v1/pastes/"+p.ID, http.StatusOK, h, append(meta, '\n'))
}

// cacheHeaders lets a paste be cached for at most exportMaxAge, and never
// past its expiry. The Expires header also tells a mirror when to stop
// serving it.
func (e *exporter) cacheHeaders(h http.Header, p *fsm.Paste) {
	if p.ExpiresAt == 0 {
		h.Set("Cache-Control", "public, max-age="+strconv.Itoa(exportMaxAge))
		return
	}
	expires := time.Unix(0, p.ExpiresAt)
	h.Set("Cache-Control", maxAge(expires.Sub(e.now)))
	h.Set("Expires", expires.UTC().Format(http.TimeFormat))
}

// maxAge is the Cache-Control of something that stays valid for left.
func maxAge(left time.Duration) string {
	secs := min(max(int64(left/time.Second), 0), exportMaxAge)
	return "public, max-age=" + strconv.FormatInt(secs, 10)
}

// add stores body at path, gzipped when that saves enough, with the
// headers in name order.
func (e *exporter) add(path string, status int, h http.Header, body []byte) error {
	body, enc := cdb.Compress(body)
	h.Set("Content-Encoding", enc)
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	headers := make([]cdb.Header, 0, len(names))
	for _, name := range names {
		for _, v := range h[name] {
			headers = append(headers, cdb.Header{Name: name, Value: v})
		}
	}
	return e.aw.AddFile(path, status, headers, body)
}

// pageHeaders are the headers of an HTML page, as the live node sends them.
func pageHeaders() http.Header {
	h := http.Header{}
	// htmlHeaders uses no server state, so a nil Server can lend it.
	(*Server)(nil).htmlHeaders(headerSink(h))
	return h
}

// headerSink is a ResponseWriter that only collects headers, so that the
// live node's header functions can fill an archive's headers too.
type headerSink http.Header

func (h headerSink) Header() http.Header         { return http.Header(h) }
func (h headerSink) Write(b []byte) (int, error) { return len(b), nil }
func (h headerSink) WriteHeader(int)             {}

// metaOf is the metadata of p, with its URLs under base ("" for paths).
func metaOf(p *fsm.Paste, base string) Meta {
	m := Meta{
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

// exportable reports whether id can name archive paths: ids the API makes
// always can, but the store takes any id, and a path with a space, a "?"
// or a "/" would not match what the server looks up, while one whose key
// hashes to 0 cannot be found at all.
func exportable(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	for _, key := range []string{"f:/", "f:/raw/", "f:/api/v1/pastes/"} {
		if cdb.Hash([]byte(key+id)) == 0 {
			return false
		}
	}
	return true
}
