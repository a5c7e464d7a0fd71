package api

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"fmt"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// tokenRecheck is how often, at most, the create tokens file is checked
// for a change (its modification time and size).
const tokenRecheck = time.Second

// createToken is one line of the create tokens file.
type createToken struct {
	name  string // the metrics label: the line's name, or "unnamed"
	value []byte
}

// createTokens is the set of tokens that may create pastes, read from a
// file and read again, on the next create, once the file has changed. It
// needs no goroutine: the creates themselves notice the change.
type createTokens struct {
	path string

	mu      sync.Mutex
	checked time.Time
	modTime time.Time
	size    int64
	tokens  []createToken
}

// loadCreateTokens reads the file at path; an unreadable or empty file is
// an error, so that a node never starts open by mistake.
func loadCreateTokens(path string) (*createTokens, error) {
	t := &createTokens{path: path}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("api: create tokens: %w", err)
	}
	if err := t.load(fi); err != nil {
		return nil, err
	}
	return t, nil
}

// load reads the file whose stat is fi. On an error the old tokens stay.
func (t *createTokens) load(fi os.FileInfo) error {
	t.modTime, t.size = fi.ModTime(), fi.Size()
	b, err := os.ReadFile(t.path)
	if err != nil {
		return fmt.Errorf("api: create tokens: %w", err)
	}
	tokens, err := parseCreateTokens(b)
	if err != nil {
		return fmt.Errorf("api: create tokens %s: %w", t.path, err)
	}
	t.tokens = tokens
	return nil
}

// parseCreateTokens reads lines "token" or "name:token"; blank lines and
// lines starting with # are skipped.
func parseCreateTokens(b []byte) ([]createToken, error) {
	var out []createToken
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, named := strings.Cut(line, ":")
		if !named {
			name, value = "unnamed", line
		}
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if name == "" || value == "" || strings.ContainsAny(value, " \t") {
			return nil, fmt.Errorf("line %d: want TOKEN or NAME:TOKEN", n)
		}
		out = append(out, createToken{name: name, value: []byte(value)})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no tokens")
	}
	return out, nil
}

// refresh reads the file again if it changed since the last look, which is
// at most every tokenRecheck. A file that has become unreadable or empty
// keeps the last good tokens, and the error is returned once to be logged.
func (t *createTokens) refresh(now time.Time) error {
	if now.Sub(t.checked) < tokenRecheck {
		return nil
	}
	t.checked = now
	fi, err := os.Stat(t.path)
	if err != nil {
		return fmt.Errorf("api: create tokens: %w", err)
	}
	if fi.ModTime().Equal(t.modTime) && fi.Size() == t.size {
		return nil
	}
	return t.load(fi)
}

// match returns the name of the token that value is, comparing with every
// token in constant time.
func (t *createTokens) match(value string, now time.Time) (name string, ok bool, reloadErr error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	reloadErr = t.refresh(now)
	for _, tok := range t.tokens {
		if subtle.ConstantTimeCompare([]byte(value), tok.value) == 1 && !ok {
			name, ok = tok.name, true
		}
	}
	return name, ok, reloadErr
}

// requestToken is the create token a request carries: Authorization:
// Bearer, or X-Paste-Token.
func requestToken(r *http.Request) string {
	if v := r.Header.Get("X-Paste-Token"); v != "" {
		return strings.TrimSpace(v)
	}
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	return ""
}

// isForm reports whether r's body is a form, which may carry the token in
// a "token" field (the web form without JavaScript).
func isForm(r *http.Request) bool {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return ct == "multipart/form-data" || ct == "application/x-www-form-urlencoded"
}

// errNoToken and errBadToken are the answers to a create without a valid
// token on a node that requires one.
var (
	errNoToken  = errorf(http.StatusUnauthorized, "creating pastes here needs a token: send Authorization: Bearer TOKEN or X-Paste-Token: TOKEN")
	errBadToken = errorf(http.StatusUnauthorized, "the create token is not valid")
)

// authorizeCreate checks a create's token when the node requires one and
// returns the name that its metrics count it under ("" when tokens are
// off). formToken is the form's token field, for form posts. The token is
// never logged.
func (s *Server) authorizeCreate(w http.ResponseWriter, r *http.Request, formToken string) (string, error) {
	if s.tokens == nil {
		return "", nil
	}
	value := requestToken(r)
	if value == "" {
		value = strings.TrimSpace(formToken)
	}
	name, ok, err := s.tokens.match(value, time.Now())
	if err != nil {
		s.log.Warn("create tokens not reloaded; the last good ones stay", "err", err)
	}
	// The admin token may create too; without one, loopback may not, or a
	// proxy on the same host would open the node to everyone.
	if !ok && s.isAdmin(r) {
		name, ok = "admin", true
	}
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="pastenode create"`)
		if value == "" {
			return "", errNoToken
		}
		return "", errBadToken
	}
	return name, nil
}
