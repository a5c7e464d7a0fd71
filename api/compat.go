package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/gorilla/mux"

	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/internal/httpx"
	"github.com/pastenode/pastenode/ui"
)

// This file holds what keeps the pastebins pastenode replaces working when
// pointed at a node: the old Rust pastebin's /download/ID and /new?id=ID,
// Pastey's /pastes form API, and serving every route under a path prefix
// (the old --uri-prefix) behind a reverse proxy.

// compatRoutes adds the old systems' routes to r. They come before /{id},
// which would otherwise take /new and /pastes for paste ids.
func (s *Server) compatRoutes(r *mux.Router) {
	get := []string{http.MethodGet, http.MethodHead}
	r.HandleFunc("/download/{id}", s.handleDownload).Methods(get...).Name("download")
	r.HandleFunc("/new", s.handleNew).Methods(get...).Name("new")
	r.HandleFunc("/pastes", s.handleIndex).Methods(get...).Name("pastey_form")
	r.HandleFunc("/pastes", s.handlePasteyCreate).Methods(http.MethodPost).Name("pastey_create")
	r.HandleFunc("/pastes/{id}", s.handleView).Methods(get...).Name("pastey_view")
}

// checkCompat checks the base path and the default expiry, and puts the
// base path on a public URL that has no path of its own.
func (c *Config) checkCompat() error {
	if err := ui.CheckBasePath(c.BasePath); err != nil {
		return fmt.Errorf("api: %w", err)
	}
	if c.DefaultExpire < 0 {
		return fmt.Errorf("api: default expire %s must not be negative", c.DefaultExpire)
	}
	if c.DefaultExpire > 0 && c.DefaultExpire < minExpire {
		return fmt.Errorf("api: default expire %s is shorter than %s", c.DefaultExpire, minExpire)
	}
	if c.MaxExpire > 0 && c.DefaultExpire > c.MaxExpire {
		return fmt.Errorf("api: default expire %s is longer than max expire %s",
			formatDuration(c.DefaultExpire), formatDuration(c.MaxExpire))
	}
	if c.PublicURL != "" && c.BasePath != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil {
			return fmt.Errorf("api: public url: %w", err)
		}
		if strings.Trim(u.Path, "/") == "" {
			c.PublicURL = strings.TrimRight(c.PublicURL, "/") + c.BasePath
		}
	}
	return nil
}

// underBasePath serves h under the base path: a request for BASE/x is
// routed as /x, and everything outside BASE is a 404.
func (s *Server) underBasePath(h http.Handler) http.Handler {
	base := s.cfg.BasePath
	if base == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, base)
		if !ok || (rest != "" && rest[0] != '/') {
			s.notFound(w, r)
			return
		}
		if rest == "" {
			rest = "/"
		}
		// A shallow copy, as http.StripPrefix makes: a deep Clone would
		// copy every header on every request, the raw read's included.
		r2 := new(http.Request)
		*r2 = *r
		u := *r.URL
		u.Path, u.RawPath = rest, ""
		r2.URL = &u
		h.ServeHTTP(w, r2)
	})
}

// handleDownload is GET /download/{id}: the raw bytes as an
// application/octet-stream attachment named after the paste's language.
// A burn paste is consumed, as by /raw.
func (s *Server) handleDownload(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	p, err := s.cfg.Store.Read(r.Context(), id, wantsStale(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.serveRaw(w, r, p, true)
}

// setDownloadHeaders sets the headers of a download of p (/download/ID):
// a raw read's, but application/octet-stream whatever the paste holds and
// an attachment named ui.DownloadName, as the old Rust pastebin sent it,
// so that a browser saves the file rather than showing it.
func setDownloadHeaders(h http.Header, p *fsm.Paste, length bool) {
	httpx.SetRawHeaders(h, p, length)
	h.Set("Content-Type", "application/octet-stream")
	// Ids and extensions hold no quote or backslash: the plain quoted
	// form, as the old pastebin sent it.
	h.Set("Content-Disposition", `attachment; filename="`+ui.DownloadName(ui.PasteOf(p, false))+`"`)
}

// handlePasteyCreate is Pastey's POST /pastes: a form with title and body
// (or content), answered with 303 See Other to /pastes/ID, so that
// `curl -L` ends on the new paste.
func (s *Server) handlePasteyCreate(w http.ResponseWriter, r *http.Request) {
	created, _, ok := s.createFromRequest(w, r)
	if !ok {
		return
	}
	h := w.Header()
	h.Set("X-Paste-Id", created.ID)
	h.Set("X-Delete-Token", created.DeleteToken)
	h.Set("Cache-Control", "no-store")
	http.Redirect(w, r, s.cfg.BasePath+"/pastes/"+created.ID, http.StatusSeeOther)
}

// viewLang is the language a page is rendered with: the stored one, or a
// ?lang= of this request (the old pastebin's re-highlighting at read time).
func viewLang(r *http.Request, p *fsm.Paste) (string, error) {
	q, ok := r.URL.Query()["lang"]
	if !ok {
		return p.Lang, nil
	}
	lang, known := ui.LookupLang(q[0])
	if !known {
		return "", errorf(http.StatusBadRequest, "unknown lang %q", q[0])
	}
	return lang, nil
}

// handleNew is the old pastebin's Clone link, GET /new?id=ID: the
// new-paste form filled with that paste, for every client, as the old
// pastebin answered it, and a 404 when there is no such paste. Without an
// id it is the empty form.
func (s *Server) handleNew(w http.ResponseWriter, r *http.Request) {
	d := s.indexData()
	if id := r.URL.Query().Get("id"); id != "" {
		p, err := s.cfg.Store.Read(r.Context(), id, wantsStale(r))
		if err != nil {
			s.error(w, r, err)
			return
		}
		prefill(&d, p)
	}
	s.renderIndex(w, d)
}
