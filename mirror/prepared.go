package mirror

import (
	"bytes"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pastenode/pastenode/cdb"
	"github.com/pastenode/pastenode/internal/httpx"
	"github.com/pastenode/pastenode/ui"
)

// A prepared resource is what an archive's resource answers with, worked
// out once per archive rather than per request: the headers in their final
// form (shared values, never modified), the bytes as stored and, for a
// gzip body, decompressed, and the expiry. An archive keeps the resources
// it served, up to maxPrepared of them and maxPreparedBytes of their
// decompressed bytes; beyond that resources are prepared per request.
type prepared struct {
	status int
	// header is for a client that gets the decoded bytes, body; encHeader
	// for one that gets the stored encoded bytes, encoded (nil when the
	// archive stores body as it is).
	header, encHeader http.Header
	body, encoded     []byte
	enc               string // the stored Content-Encoding, "identity" for none
	expires           time.Time
	hasExpires        bool
	// sniff is set when the stored headers name no Content-Type:
	// http.ServeContent then picks one.
	sniff bool
	// fields and encFields are header and encHeader as writeFast sends
	// them.
	fields, encFields []headerField
}

const (
	maxPrepared      = 1 << 16
	maxPreparedBytes = 64 << 20
)

// preparedCache holds an archive's prepared resources by archive path.
type preparedCache struct {
	m            sync.Map // string -> *prepared
	count, bytes atomic.Int64
}

// lookup returns the prepared resource at key in a, from the cache when
// it is there.
func (a *mirrorArchive) lookup(key string) (*prepared, bool, error) {
	if v, ok := a.cache.m.Load(key); ok {
		return v.(*prepared), true, nil
	}
	res, ok, err := a.a.Lookup(key)
	if err != nil || !ok {
		return nil, ok, err
	}
	p, err := prepare(&res)
	if err != nil {
		return nil, false, err
	}
	size := int64(len(p.body))
	if p.encoded == nil {
		size = 0 // the bytes are the archive's mapping, not a copy
	}
	c := &a.cache
	if c.count.Load() < maxPrepared && c.bytes.Load()+size <= maxPreparedBytes {
		if _, loaded := c.m.LoadOrStore(key, p); !loaded {
			c.count.Add(1)
			c.bytes.Add(size)
		}
	}
	return p, true, nil
}

// prepare works out what res answers with. A gzip body is decompressed for
// the clients that do not accept gzip. The live node's security headers
// are added to every page, whatever the archive says.
func prepare(res *cdb.Resource) (*prepared, error) {
	p := &prepared{status: res.Status, enc: res.ContentEncoding(), body: res.Body}
	h := http.Header{}
	for _, hd := range res.Headers {
		if !strings.EqualFold(hd.Name, "Content-Encoding") {
			h.Add(hd.Name, hd.Value)
		}
	}
	if strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		ui.SetPageHeaders(h)
	}
	p.sniff = h.Get("Content-Type") == ""
	if v := h.Get("Expires"); v != "" {
		if t, err := http.ParseTime(v); err == nil {
			p.expires, p.hasExpires = t, true
		}
	}
	if p.enc != "identity" {
		p.encoded = res.Body
		eh := h.Clone()
		eh.Set("Content-Encoding", p.enc)
		// A stored ETag names the decoded bytes; the encoded ones are
		// only weakly the same.
		if etag := eh.Get("Etag"); etag != "" && !strings.HasPrefix(etag, "W/") {
			eh.Set("Etag", "W/"+etag)
		}
		eh.Set("Content-Length", strconv.Itoa(len(p.encoded)))
		p.encHeader = clip(eh)
		p.encFields = fastFields(eh, p.hasExpires)
		if p.enc == "gzip" {
			var buf bytes.Buffer
			if err := gunzip(&buf, res.Body); err != nil {
				return nil, err
			}
			p.body = buf.Bytes()
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(p.body)))
	p.header = clip(h)
	p.fields = fastFields(h, p.hasExpires)
	return p, nil
}

// clip makes every value slice of h full, so that an Add to a header
// copied from h appends to a copy rather than into h's shared array.
func clip(h http.Header) http.Header {
	for k, v := range h {
		h[k] = slices.Clip(v)
	}
	return h
}

// write answers r with p. A gzip body goes as it is to clients that accept
// gzip and decoded to the others; a body in another encoding always goes
// as it is. A plain GET or HEAD of a 200 is one write, without the
// Accept-Ranges that http.ServeContent adds, as on the live node
// (httpx.ServeRaw); a conditional or Range request goes through
// http.ServeContent (which leaves encoded bytes whole).
func (p *prepared) write(w http.ResponseWriter, r *http.Request, now time.Time) {
	hdr, body, encoded := p.header, p.body, false
	if p.encoded != nil && (p.enc != "gzip" || acceptsGzip(r)) {
		hdr, body, encoded = p.encHeader, p.encoded, true
	}
	// net/http counts a small body of a plain GET itself (httpx.NetHTTPCounts);
	// http.ServeContent may not, when the body is encoded.
	plain := p.status != http.StatusOK || !p.sniff && !httpx.Conditional(r.Header)
	counted := plain && r.Method == http.MethodGet && httpx.NetHTTPCounts(len(body))
	h := w.Header()
	for k, v := range hdr {
		if counted && k == "Content-Length" {
			continue
		}
		h[k] = v
	}
	if p.enc == "gzip" {
		h.Add("Vary", "Accept-Encoding")
	}
	if p.hasExpires {
		// Cache no longer than the paste lives, counted from now rather
		// than from the export.
		h["Cache-Control"] = []string{maxAge(p.expires.Sub(now))}
	}
	if p.status != http.StatusOK {
		w.WriteHeader(p.status)
		if r.Method != http.MethodHead {
			w.Write(body)
		}
		return
	}
	if !plain {
		if encoded {
			// ServeContent would cut ranges out of encoded bytes.
			r = r.Clone(r.Context())
			r.Header.Del("Range")
		}
		if !encoded {
			delete(h, "Content-Length") // ServeContent sets it, for a range too
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
		return
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}
