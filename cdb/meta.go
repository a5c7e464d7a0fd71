package cdb

import (
	"fmt"
	"net/textproto"
	"strconv"
	"strings"
)

// Header is one HTTP response header stored in an archive.
type Header struct {
	Name, Value string
}

// headerNames is kawipiko's built-in list of header names for schema
// 2022a; a name's id is its 1-based position. It must match the server's
// list exactly.
var headerNames = [...]string{
	"!Status", "Accept", "Accept-CH", "Accept-CH-Lifetime", "Accept-Charset",
	"Accept-Encoding", "Accept-Language", "Accept-Patch", "Accept-Push-Policy",
	"Accept-Ranges", "Accept-Signature", "Access-Control-Allow-Credentials",
	"Access-Control-Allow-Headers", "Access-Control-Allow-Methods",
	"Access-Control-Allow-Origin", "Access-Control-Expose-Headers",
	"Access-Control-Max-Age", "Access-Control-Request-Headers",
	"Access-Control-Request-Method", "Age", "Allow", "Alt-Svc", "Authorization",
	"Cache-Control", "Clear-Site-Data", "Connection", "Content-DPR",
	"Content-Disposition", "Content-Encoding", "Content-Id", "Content-Language",
	"Content-Length", "Content-Location", "Content-Range",
	"Content-Security-Policy", "Content-Security-Policy-Report-Only",
	"Content-Transfer-Encoding", "Content-Type", "Cookie",
	"Cross-Origin-Resource-Policy", "DNT", "DPR", "Date", "ETag", "Early-Data",
	"Expect", "Expect-CT", "Expires", "Feature-Policy", "Forwarded", "Host",
	"If-Match", "If-Modified-Since", "If-None-Match", "If-Range",
	"If-Unmodified-Since", "Index", "Keep-Alive", "Large-Allocation",
	"Last-Event-ID", "Last-Modified", "Link", "Location", "Max-Forwards", "NEL",
	"Origin", "Ping-From", "Ping-To", "Pragma", "Proxy-Authenticate",
	"Proxy-Authorization", "Public-Key-Pins", "Public-Key-Pins-Report-Only",
	"Push-Policy", "Range", "Referer", "Referrer-Policy", "Report-To",
	"Retry-After", "Save-Data", "Sec-WebSocket-Accept", "Sec-WebSocket-Extensions",
	"Sec-WebSocket-Key", "Sec-WebSocket-Protocol", "Sec-WebSocket-Version",
	"Server", "Server-Timing", "Set-Cookie", "Signature", "Signed-Headers",
	"SourceMap", "Strict-Transport-Security", "TE", "Timing-Allow-Origin", "Tk",
	"Trailer", "Transfer-Encoding", "Upgrade", "Upgrade-Insecure-Requests",
	"User-Agent", "Vary", "Via", "Viewport-Width", "WWW-Authenticate", "Warning",
	"Width", "X-Content-Type-Options", "X-DNS-Prefetch-Control",
	"X-Download-Options", "X-Forwarded-By", "X-Forwarded-For", "X-Forwarded-Host",
	"X-Forwarded-Proto", "X-Frame-Options", "X-Imforwards",
	"X-Permitted-Cross-Domain-Policies", "X-Pingback", "X-Powered-By",
	"X-Requested-With", "X-Robots-Tag", "X-UA-Compatible", "X-XSS-Protection",
}

// headerValues is kawipiko's built-in list of header values for schema
// 2022a, numbered like headerNames.
var headerValues = [...]string{
	"public, immutable, max-age=3600", "no-store, max-age=0", "identity",
	"deflate", "gzip", "br", "max-age=31536000", "upgrade-insecure-requests",
	"strict-origin-when-cross-origin", "nosniff", "1; mode=block", "sameorigin",
	"200", "404", "text/plain; charset=utf-8", "text/csv; charset=utf-8",
	"text/html; charset=utf-8", "text/css; charset=utf-8",
	"application/javascript; charset=utf-8", "application/json; charset=utf-8",
	"application/xml; charset=utf-8", "application/xslt+xml; charset=utf-8",
	"application/xhtml+xml; charset=utf-8", "image/svg+xml; charset=utf-8",
	"image/png", "image/jpeg", "image/webp", "image/gif", "image/x-icon",
	"image/bmp", "image/tiff", "image/apng", "image/avif", "image/avif-sequence",
	"image/heic", "image/heic-sequence", "image/heif", "image/heif-sequence",
	"font/otf", "font/ttf", "font/woff", "font/woff2", "audio/wav", "audio/midi",
	"audio/aac", "audio/opus", "audio/mpeg", "audio/webm", "audio/ogg",
	"video/x-msvideo", "video/mp4", "video/mpeg", "video/webm", "video/ogg",
	"application/pdf", "application/postscript", "text/calendar",
	"application/zip", "application/octet-stream", "text/plain; charset=utf-16be",
	"text/plain; charset=utf-16le", "audio/aiff", "audio/basic", "audio/wave",
	"video/avi", "font/collection", "application/ogg",
	"application/vnd.ms-fontobject", "application/wasm", "application/x-gzip",
	"application/x-rar-compressed",
}

const (
	statusNameID        = 0x01 // !Status
	contentLengthNameID = 0x20 // Content-Length, which must not be stored

	// maxEntries is the archiver's limit on entries in one metadata
	// block, !Status included.
	maxEntries = 128
	// maxInline is the archiver's limit on an inline value's length; the
	// three base-25 digits could describe up to 15624 bytes.
	maxInline = 4096
)

var (
	// nameIDs maps lowercased header names to their ids, so that any
	// spelling such as "etag" is accepted too.
	nameIDs = make(map[string]int, len(headerNames))
	// spelledIDs maps the list's spellings and Go's canonical ones, such
	// as "Etag", to their ids: the names an encoder usually gets, found
	// without lowercasing them.
	spelledIDs = make(map[string]int, 2*len(headerNames))
	// valueIDs maps exact header values to their ids.
	valueIDs = make(map[string]int, len(headerValues))
)

func init() {
	for i, name := range headerNames {
		nameIDs[strings.ToLower(name)] = i + 1
		spelledIDs[name] = i + 1
		spelledIDs[textproto.CanonicalMIMEHeaderKey(name)] = i + 1
	}
	for i, value := range headerValues {
		valueIDs[value] = i + 1
	}
}

// encodeMeta encodes a metadata block: !Status first, then the headers in
// the given order, each value by its canonical id when it has one and
// inline otherwise.
func encodeMeta(status int, headers []Header) ([]byte, error) {
	if status < 200 || status > 599 {
		return nil, fmt.Errorf("status %d is outside 200-599: %w", status, ErrInvalidHeader)
	}
	if 1+len(headers) > maxEntries {
		return nil, fmt.Errorf("%d headers, more than %d: %w", len(headers), maxEntries-1, ErrInvalidHeader)
	}
	b := make([]byte, 0, 16*(1+len(headers)))
	b = appendID(b, 'h', statusNameID)
	b = appendValue(b, strconv.Itoa(status))
	for _, h := range headers {
		id, ok := nameID(h.Name)
		switch {
		case !ok:
			return nil, fmt.Errorf("header %q is not in the kawipiko-2022a name list: %w", h.Name, ErrInvalidHeader)
		case id == statusNameID:
			return nil, fmt.Errorf("header %q: pass the status separately: %w", h.Name, ErrInvalidHeader)
		case id == contentLengthNameID:
			return nil, fmt.Errorf("header %q is computed by the server and must not be stored: %w", h.Name, ErrInvalidHeader)
		}
		if err := checkValue(h.Value); err != nil {
			return nil, fmt.Errorf("header %s: %w", h.Name, err)
		}
		b = appendID(b, 'h', id)
		b = appendValue(b, h.Value)
	}
	return b, nil
}

// nameID returns the id of a header name, matched case-insensitively.
func nameID(name string) (int, bool) {
	if id, ok := spelledIDs[name]; ok {
		return id, true
	}
	id, ok := nameIDs[strings.ToLower(name)]
	return id, ok
}

// checkValue applies the archiver's rule for header values: printable
// ASCII words separated by single spaces, at most maxInline bytes.
func checkValue(v string) error {
	if len(v) == 0 || len(v) > maxInline {
		return fmt.Errorf("value is %d bytes, not 1-%d: %w", len(v), maxInline, ErrInvalidHeader)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == ' ' && i > 0 && i < len(v)-1 && v[i-1] != ' ' {
			continue
		}
		if c <= ' ' || c > '~' {
			return fmt.Errorf("value %.64q: byte %d is not printable ASCII or not a single inner space: %w", v, i, ErrInvalidHeader)
		}
	}
	return nil
}

// appendValue appends v as a canonical value id if it has one, else
// inline: 'Z', three base-25 length digits 'a'-'y', then the bytes.
func appendValue(b []byte, v string) []byte {
	if id, ok := valueIDs[v]; ok {
		return appendID(b, 'H', id)
	}
	n := len(v)
	b = append(b, 'Z', byte('a'+n/625), byte('a'+n/25%25), byte('a'+n%25))
	return append(b, v...)
}

// appendID appends an 8-byte id: the letter and 7 lowercase hex digits.
func appendID(b []byte, letter byte, id int) []byte {
	const hex = "0123456789abcdef"
	b = append(b, letter)
	for shift := 24; shift >= 0; shift -= 4 {
		b = append(b, hex[id>>shift&0xf])
	}
	return b
}

// parseID decodes an 8-byte id written by appendID and returns its number,
// or -1 if b is not such an id.
func parseID(b []byte, letter byte) int {
	if len(b) != 8 || b[0] != letter {
		return -1
	}
	id := 0
	for _, c := range b[1:] {
		switch {
		case '0' <= c && c <= '9':
			id = id<<4 | int(c-'0')
		case 'a' <= c && c <= 'f':
			id = id<<4 | int(c-'a'+10)
		default:
			return -1
		}
	}
	return id
}

// decodeMeta decodes a metadata block into a status and headers, the way
// kawipiko-server does: a missing !Status means 200, and the other headers
// keep their stored order. Anything the server would answer with a 500 is
// an error wrapping ErrCorrupt.
func decodeMeta(b []byte) (status int, headers []Header, err error) {
	status = 200
	for len(b) > 0 {
		if len(b) < 8 {
			return 0, nil, fmt.Errorf("metadata ends inside a header name: %w", ErrCorrupt)
		}
		id := parseID(b[:8], 'h')
		if id < 1 || id > len(headerNames) {
			return 0, nil, fmt.Errorf("metadata has unknown header name id %q: %w", b[:8], ErrCorrupt)
		}
		name := headerNames[id-1]
		b = b[8:]
		var value string
		value, b, err = decodeValue(b)
		if err != nil {
			return 0, nil, fmt.Errorf("metadata header %s: %w", name, err)
		}
		if id != statusNameID {
			headers = append(headers, Header{Name: name, Value: value})
			continue
		}
		status, err = parseStatus(value)
		if err != nil {
			return 0, nil, err
		}
	}
	return status, headers, nil
}

// decodeValue decodes the header value at the start of b and returns it
// with the rest of b.
func decodeValue(b []byte) (value string, rest []byte, err error) {
	if len(b) == 0 {
		return "", nil, fmt.Errorf("value missing: %w", ErrCorrupt)
	}
	switch b[0] {
	case 'H':
		if len(b) < 8 {
			return "", nil, fmt.Errorf("value id truncated: %w", ErrCorrupt)
		}
		id := parseID(b[:8], 'H')
		if id < 1 || id > len(headerValues) {
			return "", nil, fmt.Errorf("unknown value id %q: %w", b[:8], ErrCorrupt)
		}
		return headerValues[id-1], b[8:], nil
	case 'Z':
		if len(b) < 4 {
			return "", nil, fmt.Errorf("inline length truncated: %w", ErrCorrupt)
		}
		n := 0
		for _, c := range b[1:4] {
			if c < 'a' || c > 'y' {
				return "", nil, fmt.Errorf("inline length %q is not base-25 a-y: %w", b[1:4], ErrCorrupt)
			}
			n = n*25 + int(c-'a')
		}
		if len(b)-4 < n {
			return "", nil, fmt.Errorf("inline value of %d bytes has only %d: %w", n, len(b)-4, ErrCorrupt)
		}
		return string(b[4 : 4+n]), b[4+n:], nil
	default:
		return "", nil, fmt.Errorf("value starts with %q, not H or Z: %w", b[0], ErrCorrupt)
	}
}

// parseStatus checks a !Status value the way the server does: a decimal
// code from 200 to 599.
func parseStatus(v string) (int, error) {
	code, err := strconv.Atoi(v)
	if err != nil || len(v) != 3 || v[0] < '2' || v[0] > '5' {
		return 0, fmt.Errorf("status %q is not a code from 200 to 599: %w", v, ErrCorrupt)
	}
	return code, nil
}
