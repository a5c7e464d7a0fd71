package fsm

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// ReadInfo is what every read of a paste sends besides its bytes, as
// HTTP header values. They are derived from the paste's fields when asked
// for; the store keeps no HTTP in its records.
type ReadInfo struct {
	// Text reports whether the content is valid UTF-8.
	Text bool
	hv   [4]string
}

// The indexes of ReadInfo.hv.
const (
	hvETag = iota
	hvLastModified
	hvSize
	hvExpires
)

// ETag is the strong entity tag, `"ID-created"`: the id and the creation
// time name one version of the bytes without hashing them.
func (ri *ReadInfo) ETag() []string { return ri.hv[hvETag : hvETag+1 : hvETag+1] }

// LastModified is the creation time as an HTTP date.
func (ri *ReadInfo) LastModified() []string {
	return ri.hv[hvLastModified : hvLastModified+1 : hvLastModified+1]
}

// Size is the length of the content in decimal.
func (ri *ReadInfo) Size() []string { return ri.hv[hvSize : hvSize+1 : hvSize+1] }

// Expires is the expiry as an HTTP date; nil if the paste never expires.
func (ri *ReadInfo) Expires() []string {
	if ri.hv[hvExpires] == "" {
		return nil
	}
	return ri.hv[hvExpires : hvExpires+1 : hvExpires+1]
}

// ReadInfo returns the header values of p.
func (p *Paste) ReadInfo() *ReadInfo {
	var b [128]byte
	etag := append(append(append(append(b[:0], '"'), p.ID...), '-'), strconv.FormatInt(p.CreatedAt, 36)...)
	etag = append(etag, '"')
	ri := &ReadInfo{Text: p.Text}
	ri.hv[hvETag] = string(etag)
	ri.hv[hvLastModified] = string(httpDate(b[:0], p.CreatedAt))
	ri.hv[hvSize] = strconv.Itoa(len(p.Content))
	if p.ExpiresAt != 0 {
		ri.hv[hvExpires] = string(httpDate(b[:0], p.ExpiresAt))
	}
	return ri
}

// Seal sets what the store derives of a paste when it stores it: whether
// its content is text. A paste built by hand, as in a test, gets it so.
func (p *Paste) Seal() { p.Text = utf8.Valid(p.Content) }

// httpTime is net/http's TimeFormat.
const httpTime = "Mon, 02 Jan 2006 15:04:05 GMT"

// httpDate appends the Unix nanoseconds t as an HTTP date to b, as
// AppendFormat with httpTime does, without parsing the layout each time.
func httpDate(b []byte, t int64) []byte {
	tm := time.Unix(0, t).UTC()
	year, month, day := tm.Date()
	if year < 1000 || year > 9999 { // not four digits: AppendFormat's way
		return tm.AppendFormat(b, httpTime)
	}
	hour, min, sec := tm.Clock()
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
	b = append2(b, min)
	b = append(b, ':')
	b = append2(b, sec)
	return append(b, " GMT"...)
}

// append2 appends n, 0 to 99, as two digits.
func append2(b []byte, n int) []byte { return append(b, byte('0'+n/10), byte('0'+n%10)) }
