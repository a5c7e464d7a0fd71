package fsm

import (
	"time"
)

// ReadInfo is what every read of a paste sends besides its bytes, derived
// from the paste once, when it enters the store (a create applied, a
// snapshot restored), and shared by all its reads: a paste never changes.
// The methods return slices ready to be used as HTTP header values, which
// must not be modified; they point into the ReadInfo, so they allocate
// nothing.
type ReadInfo struct {
	// Text reports whether the content is valid UTF-8.
	Text bool
	// hv holds the header values: the ETag, Last-Modified, Content-Length
	// and Expires ("" if the paste never expires), each a slice of one
	// string that Seal allocated for all of them.
	hv [4]string
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

// httpTime is net/http's TimeFormat.
const httpTime = "Mon, 02 Jan 2006 15:04:05 GMT"

// ReadInfo returns the paste's ReadInfo: the one Seal computed, or, for a
// paste never sealed (one built by hand), a fresh one.
func (p *Paste) ReadInfo() *ReadInfo {
	if p.info.hv[hvETag] != "" {
		return &p.info
	}
	c := *p
	c.Seal()
	return &c.info
}

// Seal computes p's ReadInfo once; p must not change afterwards. The
// store does not need it: the pastes it hands out come with theirs. A paste
// built by hand gets its ReadInfo this way, and its fields then point into
// one record, as a stored paste's do (arena.go).
func (p *Paste) Seal() {
	var h headerValues
	formatHeaders(p, &h)
	rec := make([]byte, recordLen(p, &h))
	writeRecord(rec, p, &h)
	readRecord(rec, p)
}

// httpDate appends the Unix nanoseconds t as an HTTP date to b, as
// AppendFormat with httpTime does. Every paste an apply adds, or a restore
// of a snapshot of version 1 or 2, formats one or two (version 3 keeps
// them formatted), and AppendFormat, which parses its layout each time,
// was a visible share of such a restore's CPU; this writes the one layout
// directly.
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
