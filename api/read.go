package api

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/ui"
)

// handleIndex is GET /: the new-paste form for browsers, a usage line for
// everyone else. ?clone=ID (or /new?id=ID) fills the form with that paste.
func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	if !ui.WantsHTML(r) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("pastenode: curl --data-binary @- " + s.baseURL(r) + "/ < file\n"))
		return
	}
	d := ui.IndexData{MaxSize: s.cfg.MaxPasteSize, TokenRequired: s.tokens != nil}
	if id := cloneID(r); id != "" {
		if p, err := s.cfg.Store.Read(r.Context(), id, wantsStale(r)); err == nil && !p.Burn && !p.Encrypted {
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
	p, err := s.cfg.Store.Read(r.Context(), id, wantsStale(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	if p.Burn {
		// Whether the reader gets the content or a 404 is the consume
		// command's result, decided in the replicated state (G4).
		if r.Method == http.MethodHead {
			ui.SetRawHeaders(w.Header(), p)
			w.Header().Set("Content-Length", strconv.Itoa(len(p.Content)))
			return
		}
		if p, err = s.cfg.Store.Consume(r.Context(), id); err != nil {
			s.error(w, r, err)
			return
		}
		s.metrics.burns.Inc()
	}
	ui.SetRawHeaders(w.Header(), p)
	http.ServeContent(w, r, "", time.Unix(0, p.CreatedAt), bytes.NewReader(p.Content))
}

// hvVaryAccept is the Vary of a page that curl gets as raw bytes, shared
// rather than built per request.
var hvVaryAccept = []string{"Accept"}

// handleView is GET /{id}: the page for browsers, the raw bytes for curl.
// A burn paste's page only offers to reveal it. ?lang= renders the page
// with another language; the raw bytes never change.
func (s *Server) handleView(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	w.Header()["Vary"] = hvVaryAccept
	if format, ok, known := ui.TerminalFormat(r); ok {
		s.serveTerminal(w, r, id, format, known)
		return
	}
	if !ui.WantsHTML(r) {
		s.serveRaw(w, r, id)
		return
	}
	p, err := s.cfg.Store.Read(r.Context(), id, wantsStale(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	lang, err := viewLang(r, p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.htmlHeaders(w)
	if p.Burn {
		err = s.cfg.UI.BurnNotice(w, ui.PasteOf(p, false))
	} else {
		up := ui.PasteOf(p, true)
		up.Lang = lang // this view only; the stored paste keeps its own
		err = s.cfg.UI.Paste(w, up, time.Now())
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
	if err := s.cfg.UI.Paste(w, ui.PasteOf(p, true), time.Now()); err != nil {
		s.log.Error("render paste", "id", id, "err", err)
	}
}

// htmlHeaders are the security headers of every page.
func (s *Server) htmlHeaders(w http.ResponseWriter) { ui.SetPageHeaders(w.Header()) }

// handleMeta is GET /api/v1/pastes/{id}: metadata only; it never burns.
func (s *Server) handleMeta(w http.ResponseWriter, r *http.Request) {
	p, err := s.cfg.Store.Read(r.Context(), mux.Vars(r)["id"], wantsStale(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	m := ui.MetaOf(p, s.baseURL(r))
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
	if err := s.cfg.Store.Delete(r.Context(), id, token, admin); err != nil {
		if errors.Is(err, fsm.ErrNotFound) {
			err = errorf(http.StatusNotFound, "paste not found")
		}
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// wantsStale reports whether the client opted into a stale read, answered
// from this node's own copy even when it cannot confirm it with the
// cluster: ?stale=true or the header X-Paste-Stale: true.
func wantsStale(r *http.Request) bool {
	var v string
	if strings.Contains(r.URL.RawQuery, "stale") { // spares the hot path a parse
		v = r.URL.Query().Get("stale")
	}
	if v == "" {
		if v = r.Header.Get("X-Paste-Stale"); v == "" {
			return false
		}
	}
	stale, _ := strconv.ParseBool(v)
	return stale
}
