package ui

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

// asset is one embedded file as it is served.
type asset struct {
	body        []byte
	contentType string
	version     string // a hash of body; pages ask for the file with ?v=version
}

func newAsset(body []byte, contentType string) *asset {
	sum := sha256.Sum256(body)
	return &asset{body: body, contentType: contentType, version: hex.EncodeToString(sum[:6])}
}

// Static returns the handler of the embedded assets, app.css and app.js.
// The api mounts it with http.StripPrefix("/static/", ...). A request whose
// ?v= matches the file's current version may be cached for a year, since
// the pages change the version whenever the file changes; other requests
// must revalidate (the ETag makes that cheap).
func (u *UI) Static() http.Handler {
	return http.HandlerFunc(u.serveStatic)
}

func (u *UI) serveStatic(w http.ResponseWriter, r *http.Request) {
	a, ok := u.assets[strings.TrimPrefix(r.URL.Path, "/")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("ETag", `"`+a.version+`"`)
	if r.URL.Query().Get("v") == a.version {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
