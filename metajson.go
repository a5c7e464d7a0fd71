package pastenode

import (
	"encoding/json"
	"strconv"
	"time"
)

// AppendJSON appends m as the API sends it: the bytes of an encoding/json
// Encoder with a two-space indent, its final newline included. An export
// writes one such document for every paste, and Encode's reflection was a
// visible share of its CPU; the common case is written here directly, and
// anything else (a string that needs escaping, a time that JSON cannot
// hold) goes through encoding/json, so the bytes, and the error, are always
// encoding/json's.
func (m Meta) AppendJSON(b []byte) ([]byte, error) {
	if !plainJSON(m) {
		out, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return b, err
		}
		return append(append(b, out...), '\n'), nil
	}
	b = append(b, "{\n  \"id\": \""...)
	b = append(b, m.ID...)
	b = append(b, "\",\n  \"url\": \""...)
	b = append(b, m.URL...)
	b = append(b, "\",\n  \"raw_url\": \""...)
	b = append(b, m.RawURL...)
	b = append(b, "\",\n  \"title\": \""...)
	b = append(b, m.Title...)
	b = append(b, "\",\n  \"lang\": \""...)
	b = append(b, m.Lang...)
	b = append(b, "\",\n  \"size\": "...)
	b = strconv.AppendInt(b, int64(m.Size), 10)
	b = append(b, ",\n  \"created_at\": "...)
	b = appendJSONTime(b, m.CreatedAt)
	b = append(b, ",\n  \"expires_at\": "...)
	if m.ExpiresAt == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONTime(b, *m.ExpiresAt)
	}
	b = append(b, ",\n  \"burn\": "...)
	b = strconv.AppendBool(b, m.Burn)
	b = append(b, ",\n  \"encrypted\": "...)
	b = strconv.AppendBool(b, m.Encrypted)
	return append(b, "\n}\n"...), nil
}

// plainJSON reports whether AppendJSON may write m itself: every string
// is printable ASCII that JSON keeps as it is, and every time is in UTC
// within the years that Time.MarshalJSON accepts.
func plainJSON(m Meta) bool {
	for _, s := range [...]string{m.ID, m.URL, m.RawURL, m.Title, m.Lang} {
		if !plainJSONString(s) {
			return false
		}
	}
	if !plainJSONTime(m.CreatedAt) {
		return false
	}
	return m.ExpiresAt == nil || plainJSONTime(*m.ExpiresAt)
}

// plainJSONString reports whether encoding/json writes s as it is, between
// quotes: it escapes quotes, backslashes, control bytes and, for HTML's
// sake, <, > and &, and rewrites what is not ASCII or not UTF-8.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// plainJSONTime reports whether t is in UTC (encoding/json would write its
// offset otherwise) and in a year of four digits, which Time.MarshalJSON
// requires.
func plainJSONTime(t time.Time) bool {
	y := t.Year()
	return t.Location() == time.UTC && y >= 0 && y <= 9999
}

// appendJSONTime appends t as Time.MarshalJSON writes a time in UTC.
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}
