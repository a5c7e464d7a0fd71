package api

import (
	"context"
	"crypto/subtle"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/internal/httpx"
	"github.com/pastenode/pastenode/ui"
)

// handleIndex is GET /: the new-paste form for browsers, a usage line for
// everyone else. ?clone=ID fills the form with that paste.
func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	if !httpx.WantsHTML(r) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("pastenode: curl --data-binary @- " + s.baseURL(r) + "/ < file\n"))
		return
	}
	d := s.indexData()
	if id := r.URL.Query().Get("clone"); id != "" {
		if p, err := s.cfg.Store.Read(r.Context(), id, wantsStale(r)); err == nil {
			prefill(&d, p)
		}
	}
	s.renderIndex(w, d)
}

func (s *Server) indexData() ui.IndexData {
	return ui.IndexData{MaxSize: s.cfg.MaxPasteSize, TokenRequired: s.tokens != nil}
}

// prefill fills the form with p to clone it, unless p burns or is
// encrypted: the form would show what a reader must reveal or decrypt.
func prefill(d *ui.IndexData, p *fsm.Paste) {
	if !p.Burn && !p.Encrypted {
		d.Prefill, d.PrefillLang, d.PrefillTitle = string(p.Content), p.Lang, p.Title
	}
}

func (s *Server) renderIndex(w http.ResponseWriter, d ui.IndexData) {
	s.htmlHeaders(w)
	if err := s.cfg.UI.Index(w, d); err != nil {
		s.log.Error("render index", "err", err)
	}
}

// hotFirst answers the most frequent requests before the router, GET and
// HEAD /raw/{id} and the create POST /, with the handlers the router's raw
// and create routes have (their security headers and metrics included):
// gorilla/mux would match the route's regexp (for a create, those of the
// fifteen routes before it too) and copy the request twice to carry its
// variables and route, a large share of a read's CPU. Every other request,
// another method on /raw/{id} included (a 405), goes to the router.
func (s *Server) hotFirst() http.Handler {
	raw := s.router.Get("raw").GetHandler()
	create := s.router.Get("create").GetHandler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case (r.Method == http.MethodGet || r.Method == http.MethodHead) && isRaw(r.URL.Path):
			raw.ServeHTTP(w, r)
		case r.Method == http.MethodPost && r.URL.Path == "/":
			create.ServeHTTP(w, r)
		default:
			s.router.ServeHTTP(w, r)
		}
	})
}

// isRaw reports whether path is a raw read's (httpx.RawID).
func isRaw(path string) bool { _, ok := httpx.RawID(path); return ok }

// handleRaw is GET /raw/{id}: the exact bytes. A burn paste is consumed
// through Raft; a HEAD does not consume it.
func (s *Server) handleRaw(w http.ResponseWriter, r *http.Request) {
	id, _ := httpx.RawID(r.URL.Path)
	rr, err := s.readRaw(r.Context(), id, wantsStale(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	defer rr.done()
	if rr.c == nil {
		s.serveRaw(w, r, &rr.p, false)
		return
	}
	if !rr.p.Burn && r.Method == http.MethodGet && !httpx.Conditional(r.Header) {
		httpx.WriteRawFile(w, &rr.p, rr.c)
		return
	}
	// A large paste's HEAD, Range or conditional read, or its burn: the
	// rules of serveRaw, with the content in memory.
	p, err := s.cfg.Store.Read(r.Context(), id, wantsStale(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.serveRaw(w, r, p, false)
}

// rawRead is a raw read's paste and the buffer its record was read into,
// both reused from read to read (rawReads): a raw read copies the content
// into its answer, and every read left to the collector would cost it a
// record and a Paste.
type rawRead struct {
	p   fsm.Paste
	buf []byte
	c   *fsm.Content // a large paste's content, p.Content nil
}

var rawReads = sync.Pool{New: func() any { return new(rawRead) }}

// readRaw reads paste id for a raw read (Store.ReadRaw) into a rawRead,
// which the caller gives back with done once the content is sent.
func (s *Server) readRaw(ctx context.Context, id string, stale bool) (*rawRead, error) {
	rr := rawReads.Get().(*rawRead)
	var err error
	rr.buf, rr.c, err = s.cfg.Store.ReadRaw(ctx, id, stale, &rr.p, rr.buf)
	if err != nil {
		rr.done()
		return nil, err
	}
	return rr, nil
}

// done closes rr's file region, if any, and gives rr back to rawReads:
// nothing of the read may be used afterwards.
func (rr *rawRead) done() {
	if rr.c != nil {
		rr.c.Close()
	}
	rr.p, rr.c = fsm.Paste{}, nil
	rawReads.Put(rr)
}

// serveRaw writes p's bytes, as a download (/download/ID) when download
// is set. A burn paste is consumed: whether the reader gets the content or
// a 404 is the consume command's result, decided in the replicated state
// (G4).
func (s *Server) serveRaw(w http.ResponseWriter, r *http.Request, p *fsm.Paste, download bool) {
	setHeaders := httpx.SetRawHeaders
	if download {
		setHeaders = setDownloadHeaders
	}
	if !p.Burn {
		setHeaders(w.Header(), p, httpx.RawLength(r, p))
		httpx.WriteRaw(w, r, p)
		return
	}
	if r.Method == http.MethodHead {
		setHeaders(w.Header(), p, true)
		return
	}
	if !s.allowWrite(w, r) {
		return
	}
	// A copy of the id: p may be a pooled read's (rawRead), and a consume
	// that times out can still be queued for Raft after this returns.
	p, err := s.cfg.Store.Consume(r.Context(), strings.Clone(p.ID))
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.metrics.burns.Inc()
	// The one read there will ever be: the whole content, whatever
	// If-None-Match or Range say.
	setHeaders(w.Header(), p, true)
	w.WriteHeader(http.StatusOK)
	w.Write(p.Content)
}

// hvVaryAccept is the Vary of a page that curl gets as raw bytes, shared
// rather than built per request.
var hvVaryAccept = []string{"Accept"}

// handleView is GET /{id}: the page for browsers, the raw bytes for curl.
// It never consumes a burn paste: a browser gets a page that offers to
// reveal it, anyone else one line naming the raw URL, so that link previews
// and chat unfurlers cannot burn it. ?lang= renders the page with another
// language; the raw bytes never change.
func (s *Server) handleView(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	w.Header()["Vary"] = hvVaryAccept
	if format, ok, known := ui.TerminalFormat(r); ok {
		s.serveTerminal(w, r, id, format, known)
		return
	}
	p, err := s.cfg.Store.Read(r.Context(), id, wantsStale(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	html := httpx.WantsHTML(r)
	switch {
	case !html && p.Burn:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "This paste burns after reading: GET "+s.baseURL(r)+"/raw/"+p.ID+" to read it, once.\n")
		return
	case !html:
		s.serveRaw(w, r, p, false)
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
// the paste and shows it. An id this node does not have (after the read
// index) is a 404 and a paste that does not burn is shown as it is: neither
// costs a Raft entry.
func (s *Server) handleReveal(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	if !s.allowWrite(w, r) {
		return
	}
	p, err := s.cfg.Store.Read(r.Context(), id, false)
	if err != nil {
		s.error(w, r, err)
		return
	}
	if p.Burn {
		if p, err = s.cfg.Store.Consume(r.Context(), id); err != nil {
			s.error(w, r, err)
			return
		}
		s.metrics.burns.Inc()
	}
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

// handleLang is GET /api/v1/lang?file=NAME: the language of a file called
// NAME, by chroma's file name patterns, as {"lang": "Go"} ("" for plain
// text). The new-paste form asks it for a file dropped or picked there, so
// that the guess is the server's own and needs no copy in the script.
func (s *Server) handleLang(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Lang string `json:"lang"`
	}{ui.LangOfFile(r.URL.Query().Get("file"))})
}

// handleDelete is DELETE /{id} with the delete token, or the admin token.
func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	token := r.Header.Get("X-Delete-Token")
	if token == "" {
		token = r.URL.Query().Get("token")
	}
	admin := s.isAdmin(r)
	if token == "" && !admin {
		s.error(w, r, errorf(http.StatusForbidden, "missing delete token: send X-Delete-Token"))
		return
	}
	if !s.allowWrite(w, r) {
		return
	}
	// Checked here first, so that a flood of deletes of unknown ids or
	// with wrong tokens proposes nothing; the replicated command checks
	// again.
	p, err := s.cfg.Store.Read(r.Context(), id, false)
	if err != nil {
		s.error(w, r, err)
		return
	}
	if !admin && subtle.ConstantTimeCompare(fsm.HashToken(token), p.TokenHash) != 1 {
		s.error(w, r, fsm.ErrForbidden)
		return
	}
	if err = s.cfg.Store.Delete(r.Context(), id, token, admin); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// wantsStale is staleRead of r.
func wantsStale(r *http.Request) bool {
	return staleRead(r.URL.RawQuery, r.Header.Get(staleHeader))
}

// staleHeader is the request header that asks for a stale read.
const staleHeader = "X-Paste-Stale"

// staleRead reports whether a request with the raw query rawQuery and
// the X-Paste-Stale value header opted into a stale read, answered from
// this node's own copy even when it cannot confirm it with the cluster:
// ?stale=true, or X-Paste-Stale: true when the query says nothing. Every
// server's read asks the store for what this says.
func staleRead(rawQuery, header string) bool {
	v := header
	if strings.Contains(rawQuery, "stale") { // spares the hot path a parse
		if q, _ := url.ParseQuery(rawQuery); q.Get("stale") != "" {
			v = q.Get("stale")
		}
	}
	if v == "" {
		return false // ParseBool's error would cost every read an allocation
	}
	stale, _ := strconv.ParseBool(v)
	return stale
}
