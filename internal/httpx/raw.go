package httpx

import (
	"bytes"
	"hash/maphash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pastenode/pastenode/fsm"
)

// Header values of every raw read, shared rather than built per request:
// this is the hot path, and net/http never modifies a header's values.
var (
	hvText    = []string{"text/plain; charset=utf-8"}
	hvBinary  = []string{"application/octet-stream"}
	hvNosniff = []string{"nosniff"}
	hvRawCSP  = []string{"default-src 'none'; sandbox"}
	hvNoStore = []string{"no-store"}
	hvNoCache = []string{"no-cache"}
)

// RawPrefix is the path of a raw read up to the paste's id: /raw/{id}.
const RawPrefix = "/raw/"

// RawID returns the id of a raw read's path, as the routers of the live
// node and the mirror see it (decoded, under any base path): RawPrefix
// and one non-empty path segment. It is the one place that decides which
// paths are raw reads, for net/http's routes and the fast path alike.
func RawID(path string) (id string, ok bool) {
	id, ok = strings.CutPrefix(path, RawPrefix)
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

// RawHeaders calls set with each header of a raw read of p, in canonical
// form, Content-Length only when length is set (net/http counts a small
// body itself; fasthttp counts every body). It is the one place that
// decides these headers, for the live node on net/http and on its fast
// path and for the mirror's export. Pastes never change, so the id and
// creation time make a strong ETag without hashing the content. The
// values come from p's own fields, not from the header strings fsm keeps
// in its records for now, so that the state machine need not know HTTP;
// only whether the content is text is fsm's (fsm.Paste.Text).
func RawHeaders(p *fsm.Paste, length bool, set func(name string, value []string)) {
	rawHeaders(p, len(p.Content), length, set)
}

// rawHeaders is RawHeaders of a paste whose content is size bytes, which
// p.Content need not hold.
func rawHeaders(p *fsm.Paste, size int, length bool, set func(name string, value []string)) {
	v := rawValuesOf(p, size)
	// fsm worked out once, when the paste entered the store, whether it
	// is UTF-8 text: utf8.Valid per read would cost a pass over it.
	if p.Text {
		set("Content-Type", hvText)
	} else {
		set("Content-Type", hvBinary)
	}
	set("X-Content-Type-Options", hvNosniff)
	set("Content-Security-Policy", hvRawCSP)
	set("Etag", v.get(vETag))
	set("Last-Modified", v.get(vLastModified))
	if length {
		set("Content-Length", v.get(vLength))
	}
	switch {
	case p.Burn:
		set("Cache-Control", hvNoStore)
	case p.ExpiresAt != 0:
		set("Cache-Control", hvNoCache)
		set("Expires", v.get(vExpires))
	default:
		set("Cache-Control", hvNoCache)
	}
}

// SetRawHeaders sets the headers of a raw read of p in h (RawHeaders).
func SetRawHeaders(h http.Header, p *fsm.Paste, length bool) {
	RawHeaders(p, length, func(name string, value []string) { h[name] = value })
}

// rawValues are the values of a raw read's headers that come from one
// paste's fields, formatted once for all its reads while they stay in
// valueCache: the ETag, Last-Modified, Content-Length and Expires ("" if
// the paste never expires), substrings of one string. A paste is known by
// its id and creation time (ids are reused only after a delete, with a
// new time), and its expiry and size are checked too, as an import may
// name any times.
type rawValues struct {
	id               string // a substring of the ETag: p.ID may hold a store's record alive
	created, expires int64
	size             int
	v                [4]string
}

// The indexes of rawValues.v.
const (
	vETag = iota
	vLastModified
	vLength
	vExpires
)

// get returns the value at i as a header value: a slice of one, full, so
// that an append to it copies rather than writes into v.
func (v *rawValues) get(i int) []string { return v.v[i : i+1 : i+1] }

// valueSlots bounds valueCache: a slot holds the values of one paste,
// about 200 bytes, so a full cache holds under 2 MiB, and the pastes read
// most stay in it.
const valueSlots = 1 << 13

// valueCache holds the rawValues of recently read pastes, one per slot by
// a hash of the id. Formatting two HTTP dates and the ETag cost a read
// more than the rest of its headers together, with two allocations; a hit
// costs a hash and a compare. A paste that loses its slot to another is
// formatted again when next read. The entries are never changed, so
// readers share them without a lock.
var (
	valueCache [valueSlots]atomic.Pointer[rawValues]
	valueSeed  = maphash.MakeSeed()
)

// rawValuesOf returns the header values of p, whose content is size
// bytes, from valueCache when they are there.
func rawValuesOf(p *fsm.Paste, size int) *rawValues {
	slot := &valueCache[maphash.String(valueSeed, p.ID)&(valueSlots-1)]
	if v := slot.Load(); v != nil && v.id == p.ID && v.created == p.CreatedAt && v.expires == p.ExpiresAt && v.size == size {
		return v
	}
	v := formatValues(p, size)
	slot.Store(v)
	return v
}

// formatValues formats the header values of p, whose content is size
// bytes.
func formatValues(p *fsm.Paste, size int) *rawValues {
	var buf [128]byte
	var ends [4]int
	b := append(buf[:0], '"')
	b = append(b, p.ID...)
	b = append(b, '-')
	b = strconv.AppendInt(b, p.CreatedAt, 36)
	b = append(b, '"')
	ends[vETag] = len(b)
	b = appendHTTPDate(b, p.CreatedAt)
	ends[vLastModified] = len(b)
	b = strconv.AppendInt(b, int64(size), 10)
	ends[vLength] = len(b)
	if p.ExpiresAt != 0 {
		b = appendHTTPDate(b, p.ExpiresAt)
	}
	ends[vExpires] = len(b)
	s := string(b)
	v := &rawValues{id: s[1 : 1+len(p.ID)], created: p.CreatedAt, expires: p.ExpiresAt, size: size}
	at := 0
	for i, end := range ends {
		v.v[i], at = s[at:end], end
	}
	return v
}

// appendHTTPDate appends the Unix nanoseconds t to b as an HTTP date, as
// AppendFormat with http.TimeFormat does. A read of a paste not in
// valueCache formats one or two, and AppendFormat, which parses its
// layout each time, would cost it more than all its other headers; this
// writes the one layout directly.
func appendHTTPDate(b []byte, t int64) []byte {
	tm := time.Unix(0, t).UTC()
	year, month, day := tm.Date()
	if year < 1000 || year > 9999 { // not four digits: AppendFormat's way
		return tm.AppendFormat(b, http.TimeFormat)
	}
	hour, minute, sec := tm.Clock()
	b = append(b, tm.Weekday().String()[:3]...)
	b = append(b, ", "...)
	b = append2(b, day)
	b = append(b, ' ')
	b = append(b, month.String()[:3]...)
	b = append(b, ' ')
	b = append2(append2(b, year/100), year%100)
	b = append(b, ' ')
	b = append2(b, hour)
	b = append(b, ':')
	b = append2(b, minute)
	b = append(b, ':')
	b = append2(b, sec)
	return append(b, " GMT"...)
}

// append2 appends n, 0 to 99, as two digits.
func append2(b []byte, n int) []byte { return append(b, byte('0'+n/10), byte('0'+n%10)) }

// RawLength reports whether the answer to r, a raw read of p written by
// WriteRaw, needs its Content-Length header set: net/http counts the body
// of a plain GET that fits its buffer itself (NetHTTPCounts), and
// http.ServeContent counts what it sends.
func RawLength(r *http.Request, p *fsm.Paste) bool {
	return !Conditional(r.Header) && (r.Method == http.MethodHead || !NetHTTPCounts(len(p.Content)))
}

// WriteRaw writes the raw bytes of the non-burn paste p under the headers
// set by SetRawHeaders, with RawLength. A plain GET or HEAD is answered
// with one write, with the headers http.ServeContent would send but
// Accept-Ranges: clients may ask for ranges without it (RFC 9110, 14.3),
// and each header costs every read. A conditional or Range request goes
// through http.ServeContent, which answers 304, 206 and 412 as it should.
func WriteRaw(w http.ResponseWriter, r *http.Request, p *fsm.Paste) {
	if Conditional(r.Header) {
		http.ServeContent(w, r, "", time.Unix(0, p.CreatedAt), bytes.NewReader(p.Content))
		return
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(p.Content)
	}
}

// WriteRawFile answers a plain GET of the non-burn paste p, whose Content
// is nil and whose content c holds (fsm.FSM.GetRaw), with the headers
// SetRawHeaders would set. net/http copies a file region to a plain TCP
// connection with sendfile: the bytes go from the page cache to the
// socket without passing through the Go heap. Over TLS it copies them.
func WriteRawFile(w http.ResponseWriter, p *fsm.Paste, c *fsm.Content) {
	h := w.Header()
	rawHeaders(p, int(c.N), true, func(name string, value []string) { h[name] = value })
	w.WriteHeader(http.StatusOK)
	io.Copy(w, c.LimitedReader)
}

// NetHTTPCounts reports whether net/http sends the Content-Length of an
// answer's body of n bytes, written by a handler that then returns: of one
// that fits the buffer net/http holds a body in until the handler returns
// or the buffer fills (not of a HEAD's, which has no body). Left to
// net/http, the header is written without a header map entry, which a
// read would otherwise clone, sort and escape.
func NetHTTPCounts(n int) bool { return n <= netHTTPBuffer }

// netHTTPBuffer is the size of net/http's buffer before it chunks a body.
const netHTTPBuffer = 2048

// ConditionalHeaders are the request headers, in canonical form, that ask
// for a conditional or partial answer.
var ConditionalHeaders = [...]string{"Range", "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range"}

// Conditional reports whether h asks for a conditional or partial answer,
// which http.ServeContent handles; a plain one can be written at once.
func Conditional(h http.Header) bool {
	for _, k := range ConditionalHeaders {
		if h[k] != nil {
			return true
		}
	}
	return false
}
