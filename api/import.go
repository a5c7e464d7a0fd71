package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/node"
)

// handleImport is PUT /api/v1/pastes/{id}, for admins: a paste moved from
// another pastebin, under the id and with the times it had there, so that
// its old links keep working. The body is the content, byte for byte;
// title, lang, burn and encrypted come as on a create (the query or the
// X-Paste-* headers), created_at and expires_at as RFC 3339 times in the
// query (none: now, and never). A taken id is a 409 and changes nothing.
//
// The admin's --max-expire does not apply: the paste keeps the lifetime
// it was given where it came from.
func (s *Server) handleImport(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	if err := node.CheckID(id); err != nil {
		s.error(w, r, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxPasteSize)
	body, err := s.readBody(r, s.cfg.MaxPasteSize)
	if err != nil {
		s.error(w, r, err)
		return
	}
	content, _, err := s.checkSize(body, nil)
	if err != nil {
		s.error(w, r, err)
		return
	}
	field := requestFields(r, nil)
	o, err := parseLabels(field)
	if err != nil {
		s.error(w, r, err)
		return
	}
	created, expires, err := importTimes(field, time.Now())
	if err == nil {
		err = s.storeHasRoom(len(content))
	}
	if err == nil {
		err = s.idFree(r, id)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	token := newToken()
	p, err := s.cfg.Store.Import(r.Context(), node.ImportRequest{
		ID:          id,
		Content:     content,
		Title:       o.title,
		Lang:        o.lang,
		CreatedAt:   created,
		ExpiresAt:   expires,
		Burn:        o.burn,
		Encrypted:   o.encrypted,
		DeleteToken: token,
	})
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.writeCreated(w, r, s.created(r, p, token), true)
}

// idFree answers fsm.ErrExists for an id this node, after the read index,
// holds: so a resumed import, which sends every paste again, proposes
// nothing for those already there. The replicated create checks again,
// tombstones included.
func (s *Server) idFree(r *http.Request, id string) error {
	_, err := s.cfg.Store.Read(r.Context(), id, false)
	switch {
	case err == nil:
		return fsm.ErrExists
	case errors.Is(err, fsm.ErrNotFound):
		return nil
	}
	return err
}

// importTimes reads an import's created_at and expires_at. A paste must
// have been created by now, and must not have expired yet: it would be
// gone at once.
func importTimes(field fieldFunc, now time.Time) (created, expires time.Time, err error) {
	for _, name := range []string{"expire", "ttl"} {
		if _, ok := field(name); ok {
			return created, expires, errorf(http.StatusBadRequest, "an import takes expires_at, an RFC 3339 time, not %s", name)
		}
	}
	if v, ok := field("created_at"); ok {
		if created, err = parseTime("created_at", v); err != nil {
			return created, expires, err
		}
		switch {
		case created.After(now):
			return created, expires, errorf(http.StatusBadRequest, "created_at %s is in the future", v)
		case created.Before(time.Unix(0, 0)):
			return created, expires, errorf(http.StatusBadRequest, "created_at %s is before 1970", v)
		}
	}
	if v, ok := field("expires_at"); ok && !strings.EqualFold(v, "never") {
		if expires, err = parseTime("expires_at", v); err != nil {
			return created, expires, err
		}
		switch {
		case !expires.After(now):
			return created, expires, errorf(http.StatusBadRequest, "expires_at %s has passed: the paste would be gone at once", v)
		case expires.Sub(now) > MaxDuration:
			return created, expires, errorf(http.StatusBadRequest, "expires_at %s is more than 100 years away", v)
		}
	}
	return created, expires, nil
}

func parseTime(name, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return t, errorf(http.StatusBadRequest, "bad %s %q: want an RFC 3339 time such as 2006-01-02T15:04:05Z", name, v)
	}
	return t, nil
}
