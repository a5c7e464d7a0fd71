package api

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/internal/httpx"
	"github.com/pastenode/pastenode/node"
	"github.com/pastenode/pastenode/ui"
)

const (
	maxTitle  = 200
	minExpire = time.Second
	// MaxDuration is the longest expiry, or --max-expire, there is: 100
	// years. Longer ones would overflow the nanosecond clock.
	MaxDuration = 36525 * 24 * time.Hour
	// formOverhead is what multipart framing may add to a body of the
	// maximum paste size.
	formOverhead = 64 << 10
)

// options are a create's settings, however they were sent.
type options struct {
	title     string
	lang      string
	expire    time.Duration // 0: never
	burn      bool
	encrypted bool
	tokenName string // the create token's name, for the metrics; "" when none is needed
}

// field returns a create option from the form, the query or its header.
type fieldFunc func(name string) (string, bool)

// optionHeaders are the headers that carry create options, by option.
var optionHeaders = map[string]string{
	"lang": "X-Paste-Lang", "expire": "X-Paste-Expire", "burn": "X-Paste-Burn",
	"title": "X-Paste-Title", "encrypted": "X-Paste-Encrypted",
}

func requestFields(r *http.Request, form url.Values) fieldFunc {
	q := r.URL.Query()
	return func(name string) (string, bool) {
		if v, ok := form[name]; ok {
			return v[0], true
		}
		if v, ok := q[name]; ok {
			return v[0], true
		}
		if h, ok := optionHeaders[name]; ok {
			if v := r.Header.Values(h); len(v) > 0 {
				return v[0], true
			}
		}
		return "", false
	}
}

// parseOptions validates the options of a create.
func (s *Server) parseOptions(field fieldFunc) (options, error) {
	o, err := parseLabels(field)
	if err != nil {
		return o, err
	}
	o.expire, err = s.parseExpiry(field)
	return o, err
}

// parseLabels validates what a create and an import share: the title, the
// language and the burn and encrypted flags.
func parseLabels(field fieldFunc) (options, error) {
	var o options
	if v, ok := field("title"); ok {
		if utf8.RuneCountInString(v) > maxTitle {
			return o, errorf(http.StatusBadRequest, "title is longer than %d characters", maxTitle)
		}
		o.title = strings.TrimSpace(strings.ReplaceAll(v, "\n", " "))
	}
	if v, ok := field("lang"); ok {
		lang, known := ui.LookupLang(v)
		if !known {
			return o, errorf(http.StatusBadRequest, "unknown lang %q", v)
		}
		o.lang = lang
	}
	var err error
	if o.burn, err = boolField(field, "burn"); err != nil {
		return o, err
	}
	if o.encrypted, err = boolField(field, "encrypted"); err != nil {
		return o, err
	}
	return o, nil
}

// parseExpiry validates a create's expiry, from now: expire, or the old
// pastebin's ttl, within --max-expire; --default-expire when it gives
// none. 0 is never.
func (s *Server) parseExpiry(field fieldFunc) (time.Duration, error) {
	expire, hasExpire := field("expire")
	if ttl, ok := field("ttl"); ok && !hasExpire {
		secs, err := strconv.ParseInt(ttl, 10, 64)
		if err != nil || secs < 0 {
			return 0, errorf(http.StatusBadRequest, "bad ttl %q: want whole seconds", ttl)
		}
		expire, hasExpire = strconv.FormatInt(secs, 10)+"s", true
		if secs == 0 {
			expire = "never"
		}
	}
	d := s.cfg.DefaultExpire
	if hasExpire {
		var err error
		if d, err = parseExpire(expire); err != nil {
			return 0, err
		}
	}
	if max := s.cfg.MaxExpire; max > 0 {
		switch {
		case !hasExpire && d == 0:
			d = max
		case !hasExpire:
			// --default-expire, which Validate keeps within max.
		case d == 0:
			return 0, errorf(http.StatusBadRequest, "expire never is not allowed here: the longest is %s", formatDuration(max))
		case d > max:
			return 0, errorf(http.StatusBadRequest, "expire %s is too long: the longest is %s", expire, formatDuration(max))
		}
	}
	return d, nil
}

func boolField(field fieldFunc, name string) (bool, error) {
	v, ok := field(name)
	if !ok {
		return false, nil
	}
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, nil
	case "", "0", "false", "no", "off":
		return false, nil
	}
	return false, errorf(http.StatusBadRequest, "bad %s %q: want true or false", name, v)
}

// parseExpire reads "never" (0) or a duration of at least a second.
func parseExpire(v string) (time.Duration, error) {
	v = strings.TrimSpace(strings.ToLower(v))
	if v == "never" || v == "" {
		return 0, nil
	}
	d, err := ParseDuration(v)
	if err != nil {
		if strings.Contains(err.Error(), "100 years") {
			return 0, errorf(http.StatusBadRequest, "bad expire %q: the longest is 100 years", v)
		}
		return 0, errorf(http.StatusBadRequest, "bad expire %q: want never or a duration like 30s, 10m, 1h, 1d, 1w", v)
	}
	if d < minExpire {
		return 0, errorf(http.StatusBadRequest, "bad expire %q: the shortest is 1s", v)
	}
	return d, nil
}

// ParseDuration reads a positive duration of at most MaxDuration: Go's
// form ("90s", "1h30m") or whole days or weeks ("1d", "2w").
func ParseDuration(s string) (time.Duration, error) {
	tooLong := fmt.Errorf("duration %q is longer than the limit of 100 years", s)
	if n := len(s); n > 1 && (s[n-1] == 'd' || s[n-1] == 'w') {
		days, err := strconv.ParseInt(s[:n-1], 10, 64)
		if err != nil || days <= 0 {
			return 0, fmt.Errorf("bad duration %q: want e.g. 30s, 1h, 7d", s)
		}
		if s[n-1] == 'w' {
			if days > int64(MaxDuration/(7*24*time.Hour)) {
				return 0, tooLong
			}
			days *= 7
		}
		if days > int64(MaxDuration/(24*time.Hour)) {
			return 0, tooLong
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil && strings.Contains(err.Error(), "invalid duration") && strings.TrimLeft(s, "0123456789.hmsuµn") == "" {
		return 0, tooLong // all digits and units: an overflow
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("bad duration %q: want e.g. 30s, 1h, 7d", s)
	}
	if d > MaxDuration {
		return 0, tooLong
	}
	return d, nil
}

func formatDuration(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// handleCreate is POST /: a raw body (curl --data-binary), or a form from a
// browser or curl -F.
func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	created, form, ok := s.createFromRequest(w, r)
	if !ok {
		return
	}
	// A browser's form post ends on the paste's page.
	if form != nil && httpx.WantsHTML(r) {
		w.Header().Set("X-Paste-Id", created.ID)
		w.Header().Set("X-Delete-Token", created.DeleteToken)
		http.Redirect(w, r, s.cfg.BasePath+"/"+created.ID, http.StatusSeeOther)
		return
	}
	s.writeCreated(w, r, created, httpx.WantsJSON(r))
}

// createFromRequest creates the paste a raw body or a form describes and
// returns it with the form (nil for a raw body). On failure it has
// answered the request and returns false.
func (s *Server) createFromRequest(w http.ResponseWriter, r *http.Request) (*pastenode.Created, url.Values, bool) {
	if !s.allowWrite(w, r) {
		return nil, nil, false
	}
	// A request that cannot carry the token in a form field is refused
	// before its body is read.
	var tokenName string
	if !isForm(r) {
		var err error
		if tokenName, err = s.authorizeCreate(w, r, ""); err != nil {
			s.error(w, r, err)
			return nil, nil, false
		}
	}
	content, form, err := s.readCreateBody(w, r)
	if err == nil && isForm(r) {
		tokenName, err = s.authorizeCreate(w, r, form.Get("token"))
	}
	if err != nil {
		s.error(w, r, err)
		return nil, nil, false
	}
	opts, err := s.parseOptions(requestFields(r, form))
	opts.tokenName = tokenName
	if err == nil && form != nil && form.Get("encrypt") != "" && !opts.encrypted {
		// The browser meant to encrypt but no script ran: refuse rather
		// than store the secret in the clear.
		err = errorf(http.StatusBadRequest, "encryption needs JavaScript in the browser; nothing was stored")
	}
	if err != nil {
		s.error(w, r, err)
		return nil, nil, false
	}
	created, err := s.create(r, content, opts)
	if err != nil {
		s.error(w, r, err)
		return nil, nil, false
	}
	return created, form, true
}

// readCreateBody returns the paste content and, for form posts, the form.
func (s *Server) readCreateBody(w http.ResponseWriter, r *http.Request) ([]byte, url.Values, error) {
	limit := s.cfg.MaxPasteSize
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "multipart/form-data" {
		limit += formOverhead
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	switch ct {
	case "multipart/form-data":
		if params["boundary"] == "" {
			return nil, nil, errorf(http.StatusBadRequest, "multipart body without a boundary")
		}
		if err := r.ParseMultipartForm(limit); err != nil {
			return nil, nil, s.bodyError(err)
		}
		form := r.MultipartForm.Value
		if files := r.MultipartForm.File["file"]; len(files) > 0 {
			f, err := files[0].Open()
			if err != nil {
				return nil, nil, errorf(http.StatusBadRequest, "read uploaded file: %v", err)
			}
			defer f.Close()
			b, err := io.ReadAll(f)
			if err != nil {
				return nil, nil, s.bodyError(err)
			}
			return s.checkSize(b, form)
		}
		content := formContent(form)
		if httpx.WantsHTML(r) {
			// A browser sends every line break of a textarea as CRLF
			// (HTML form submission), whatever was typed. The paste is
			// the text the form showed, with LF, as the script's JSON
			// posts send it.
			content = strings.ReplaceAll(content, "\r\n", "\n")
		}
		return s.checkSize([]byte(content), form)
	}
	body, err := s.readBody(r, limit)
	if err != nil {
		return nil, nil, err
	}
	// curl --data-binary sends application/x-www-form-urlencoded too, so a
	// body counts as a form only if it parses as one with a content field
	// and nothing but create fields; anything else is the paste itself.
	if ct == "application/x-www-form-urlencoded" {
		if form, ok := parseCreateForm(body); ok {
			return s.checkSize([]byte(formContent(form)), form)
		}
	}
	return s.checkSize(body, nil)
}

// readBody reads the whole body of r, which MaxBytesReader limits to
// limit bytes. Sized from Content-Length, it is read into one buffer
// rather than one that doubles from 512 bytes.
func (s *Server) readBody(r *http.Request, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength <= limit {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(r.Body); err != nil {
		return nil, s.bodyError(err)
	}
	return buf.Bytes(), nil
}

func (s *Server) checkSize(b []byte, form url.Values) ([]byte, url.Values, error) {
	if int64(len(b)) > s.cfg.MaxPasteSize {
		return nil, nil, tooLarge(s.cfg.MaxPasteSize)
	}
	if len(b) == 0 {
		return nil, nil, errorf(http.StatusBadRequest, "empty paste: send the content as the request body")
	}
	return b, form, nil
}

func tooLarge(max int64) error {
	return errorf(http.StatusRequestEntityTooLarge, "paste is larger than the limit of %d bytes", max)
}

// bodyError is the answer to a body that could not be read. A body cut
// off by its reader's limit names the paste limit, not the reader's: a
// form's or JSON's framing is allowed more bytes on the wire, but the user
// set one limit and reads that one.
func (s *Server) bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(s.cfg.MaxPasteSize)
	}
	return errorf(http.StatusBadRequest, "read body: %v", err)
}

var formFields = map[string]bool{
	"content": true, "title": true, "lang": true, "expire": true, "burn": true,
	"encrypt": true, "encrypted": true, "password": true, "ttl": true, "token": true,
	"body": true, // Pastey's name of content
}

func parseCreateForm(body []byte) (url.Values, bool) {
	if !bytes.Contains(body, []byte("content=")) && !bytes.Contains(body, []byte("body=")) {
		return nil, false
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || (form["content"] == nil && form["body"] == nil) {
		return nil, false
	}
	for k := range form {
		if !formFields[k] {
			return nil, false
		}
	}
	return form, true
}

// formContent is the paste of a form: its content field, or Pastey's
// body field when there is no content.
func formContent(form url.Values) string {
	if _, ok := form["content"]; ok {
		return form.Get("content")
	}
	return form.Get("body")
}

// handleCreateJSON is POST /api/v1/pastes.
func (s *Server) handleCreateJSON(w http.ResponseWriter, r *http.Request) {
	if !s.allowWrite(w, r) {
		return
	}
	tokenName, err := s.authorizeCreate(w, r, "")
	if err != nil {
		s.error(w, r, err)
		return
	}
	// JSON escapes may double the size of binary-ish text; allow for it.
	r.Body = http.MaxBytesReader(w, r.Body, 2*s.cfg.MaxPasteSize+formOverhead)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	var req pastenode.CreateRequest
	if err := dec.Decode(&req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.error(w, r, tooLarge(s.cfg.MaxPasteSize))
			return
		}
		s.error(w, r, errorf(http.StatusBadRequest, "bad JSON: %v", err))
		return
	}
	content, _, err := s.checkSize([]byte(req.Content), nil)
	if err != nil {
		s.error(w, r, err)
		return
	}
	fields := map[string]string{"title": req.Title, "lang": req.Lang, "expire": req.Expire}
	opts, err := s.parseOptions(func(name string) (string, bool) {
		v, ok := fields[name]
		return v, ok && v != ""
	})
	if err != nil {
		s.error(w, r, err)
		return
	}
	opts.burn, opts.encrypted, opts.tokenName = req.Burn, req.Encrypted, tokenName
	created, err := s.create(r, content, opts)
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.writeCreated(w, r, created, true)
}

// create replicates a new paste under a fresh delete token.
func (s *Server) create(r *http.Request, content []byte, o options) (*pastenode.Created, error) {
	if err := s.storeHasRoom(len(content)); err != nil {
		return nil, err
	}
	token := newToken()
	p, err := s.cfg.Store.Create(r.Context(), node.CreateRequest{
		Content:     content,
		Title:       o.title,
		Lang:        o.lang,
		Expire:      o.expire,
		Burn:        o.burn,
		Encrypted:   o.encrypted,
		DeleteToken: token,
	})
	if err != nil {
		return nil, err
	}
	s.metrics.creates.Inc()
	if o.tokenName != "" {
		s.metrics.tokenCreates.WithLabelValues(o.tokenName).Inc()
	}
	return s.created(r, p, token), nil
}

// storeHasRoom refuses, with 507, content that would take the store past
// --max-store-bytes.
func (s *Server) storeHasRoom(size int) error {
	if max := s.cfg.MaxStoreBytes; max > 0 {
		if _, held := s.cfg.Store.Stats(); held+int64(size) > max {
			return errorf(http.StatusInsufficientStorage, "the store is full (%s of %s): nothing was stored",
				pastenode.FormatSize(held), pastenode.FormatSize(max))
		}
	}
	return nil
}

func (s *Server) created(r *http.Request, p *fsm.Paste, token string) *pastenode.Created {
	base := s.baseURL(r)
	c := &pastenode.Created{
		ID:          p.ID,
		URL:         base + "/" + p.ID,
		RawURL:      base + "/raw/" + p.ID,
		DeleteToken: token,
		Burn:        p.Burn,
		Lang:        p.Lang,
		Title:       p.Title,
		Size:        len(p.Content),
	}
	if p.ExpiresAt != 0 {
		t := time.Unix(0, p.ExpiresAt).UTC()
		c.ExpiresAt = &t
	}
	return c
}

func (s *Server) writeCreated(w http.ResponseWriter, r *http.Request, c *pastenode.Created, asJSON bool) {
	h := w.Header()
	h.Set("Location", c.URL)
	h.Set("X-Paste-Id", c.ID)
	h.Set("X-Delete-Token", c.DeleteToken)
	h.Set("Cache-Control", "no-store")
	if asJSON {
		writeJSON(w, http.StatusCreated, c)
		return
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, c.URL+"\n")
}

// newToken draws a delete token: 22 base64url characters, 132 bits.
func newToken() string {
	var b [17]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])[:22]
}
