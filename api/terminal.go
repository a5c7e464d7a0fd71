package api

import (
	"bytes"
	"net/http"
	"time"

	"github.com/pastenode/pastenode/ui"
)

// serveTerminal is GET /{id}?fmt=ansi (ansi16, truecolor) or with Accept:
// text/x-ansi: the paste highlighted for a terminal, in its language or
// ?lang=. It never consumes a burn paste: highlighting one would destroy
// it for a colour, so the answer is a 409 that names the raw URL, the one
// read that hands it out.
func (s *Server) serveTerminal(w http.ResponseWriter, r *http.Request, id, format string, known bool) {
	if !known {
		s.error(w, r, errorf(http.StatusBadRequest, "unknown fmt %q: want ansi, ansi16 or truecolor", format))
		return
	}
	lang := r.URL.Query().Get("lang")
	if lang != "" {
		canon, ok := ui.LookupLang(lang)
		if !ok {
			s.error(w, r, errorf(http.StatusBadRequest, "unknown lang %q", lang))
			return
		}
		if canon != "" {
			lang = canon
		} // else a plain-text name, which no lexer has: no colours
	}
	p, err := s.cfg.Store.Read(r.Context(), id, wantsStale(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	if p.Burn {
		s.error(w, r, errorf(http.StatusConflict,
			"burn-after-reading paste: it is not highlighted; read it once, uncoloured, at %s/raw/%s", s.baseURL(r), id))
		return
	}
	var b bytes.Buffer
	if err := s.cfg.UI.Terminal(&b, ui.PasteOf(p, true), lang, format); err != nil {
		s.error(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ui.ANSIType+"; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", time.Unix(0, p.CreatedAt), bytes.NewReader(b.Bytes()))
}
