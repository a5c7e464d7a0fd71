package api

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/ui"
)

// handleIndex is GET /: the new-paste form for browsers, a usage line for
// everyone else. ?clone=ID fills the form with that paste.
func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	if !wantsHTML(r) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("pastenode: curl --data-binary @- " + s.baseURL(r) + "/ < file\n"))
		return
	}
	d := ui.IndexData{MaxSize: s.cfg.MaxPasteSize}
	if id := r.URL.Query().Get("clone"); id != "" {
		if p, ok := s.cfg.Store.Get(r.Context(), id); ok && !p.Burn && !p.Encrypted {
			d.Prefill, d.PrefillLang, d.PrefillTitle = string(p.Content), p.Lang, p.Title
		}
	}
	s.htmlHeaders(w)
	if err := s.cfg.UI.Index(w, d); err != nil {
		s.log.Error("render index", "err", err)
	}
}

// handleRaw is GET /raw/{id}: the exact bytes. A burn paste is consumed
// through Raft; a HEAD does not consume it.
func (s *Server) handleRaw(w http.ResponseWriter, r *http.Request) {
	s.serveRaw(w, r, mux.Vars(r)["id"])
}

func (s *Server) serveRaw(w http.ResponseWriter, r *http.Request, id string) {
	p, ok := s.cfg.Store.Get(r.Context(), id)
	if !ok {
		s.error(w, r, fsm.ErrNotFound)
		return
	}
	if p.Burn {
		if r.Method == http.MethodHead {
			rawHeaders(w.Header(), p)
			w.Header().Set("Content-Length", strconv.Itoa(len(p.Content)))
			return
		}
		var err error
		if p, err = s.cfg.Store.Consume(r.Context(), id); err != nil {
			s.error(w, r, err)
			return
		}
		s.metrics.burns.Inc()
	}
	rawHeaders(w.Header(), p)
	http.ServeContent(w, r, "", time.Unix(0, p.CreatedAt), bytes.NewReader(p.Content))
}

// Header values of every raw read, shared rather than built per request:
// this is the hot path, and net/http never modifies a header's values.
var (
	hvText       = []string{"text/plain; charset=utf-8"}
	hvBinary     = []string{"application/octet-stream"}
	hvNosniff    = []string{"nosniff"}
	hvRawCSP     = []string{"default-src 'none'; sandbox"}
	hvNoStore    = []string{"no-store"}
	hvNoCache    = []string{"no-cache"}
	hvVaryAccept = []string{"Accept"}
)

// rawHeaders are the headers of a raw read. Pastes never change, so the id
// and creation time make a strong ETag without hashing the content.
func rawHeaders(h http.Header, p *fsm.Paste) {
	if utf8.Valid(p.Content) {
		h["Content-Type"] = hvText
	} else {
		h["Content-Type"] = hvBinary
	}
	h["X-Content-Type-Options"] = hvNosniff
	h["Content-Security-Policy"] = hvRawCSP
	h["Etag"] = []string{`"` + p.ID + "-" + strconv.FormatInt(p.CreatedAt, 36) + `"`}
	switch {
	case p.Burn:
		h["Cache-Control"] = hvNoStore
	case p.ExpiresAt != 0:
		h["Cache-Control"] = hvNoCache
		h.Set("Expires", time.Unix(0, p.ExpiresAt).UTC().Format(http.TimeFormat))
	default:
		h["Cache-Control"] = hvNoCache
	}
}

// handleView is GET /{id}: the page for browsers, the raw bytes for curl.
// A burn paste's page only offers to reveal it.
func (s *Server) handleView(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	w.Header()["Vary"] = hvVaryAccept
	if !wantsHTML(r) {
		s.serveRaw(w, r, id)
		return
	}
	p, ok := s.cfg.Store.Get(r.Context(), id)
	if !ok {
		s.error(w, r, fsm.ErrNotFound)
		return
	}
	s.htmlHeaders(w)
	var err error
	if p.Burn {
		err = s.cfg.UI.BurnNotice(w, uiPaste(p, false))
	} else {
		err = s.cfg.UI.Paste(w, uiPaste(p, true), time.Now())
	}
	if err != nil {
		s.log.Error("render paste", "id", id, "err", err)
	}
}

// handleReveal is POST /{id}/reveal: the burn page's button. It consumes
// the paste and shows it.
func (s *Server) handleReveal(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	p, err := s.cfg.Store.Consume(r.Context(), id)
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.metrics.burns.Inc()
	s.htmlHeaders(w)
	w.Header().Set("Cache-Control", "no-store")
	if err := s.cfg.UI.Paste(w, uiPaste(p, true), time.Now()); err != nil {
		s.log.Error("render paste", "id", id, "err", err)
	}
}

func uiPaste(p *fsm.Paste, withContent bool) ui.Paste {
	up := ui.Paste{
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

// htmlHeaders are the security headers of every page.
func (s *Server) htmlHeaders(w http.ResponseWriter) { setPageHeaders(w.Header()) }

// setPageHeaders sets the headers of an HTML page, live or exported.
func setPageHeaders(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", ui.CSP())
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
}

// handleMeta is GET /api/v1/pastes/{id}: metadata only; it never burns.
func (s *Server) handleMeta(w http.ResponseWriter, r *http.Request) {
	p, ok := s.cfg.Store.Get(r.Context(), mux.Vars(r)["id"])
	if !ok {
		s.error(w, r, fsm.ErrNotFound)
		return
	}
	m := metaOf(p, s.baseURL(r))
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, m)
}

// handleDelete is DELETE /{id} with the delete token, or the admin token.
func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	token := r.Header.Get("X-Delete-Token")
	if token == "" {
		token = r.URL.Query().Get("token")
	}
	admin := s.cfg.AdminToken != "" && s.isAdmin(r)
	if token == "" && !admin {
		s.error(w, r, errorf(http.StatusForbidden, "missing delete token: send X-Delete-Token"))
		return
	}
	res, err := s.cfg.Store.Apply(r.Context(), &fsm.Command{
		Type: fsm.TypeDelete, ID: id, TokenHash: fsm.HashToken(token), Admin: admin,
	})
	if err == nil {
		err = res.Err
	}
	if err != nil {
		if errors.Is(err, fsm.ErrNotFound) {
			err = errorf(http.StatusNotFound, "paste not found")
		}
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
