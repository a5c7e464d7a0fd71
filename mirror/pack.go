package mirror

import (
	"net/http"
	"slices"
	"strings"

	"github.com/pastenode/pastenode/cdb"
)

// packer makes the entries of files, their gzip bytes appended to buf.
// What it appends stays where it is while buf grows: a slice of buf made
// before still holds its bytes after an append moves buf.
type packer struct {
	zc  *cdb.Compressor
	buf []byte
}

// file makes the entry of a file: body compressed when that saves enough,
// and the headers of base and extra with Content-Encoding, ordered by
// name. base and extra must not name the same header, nor
// Content-Encoding.
func (z *packer) file(path string, status int, base, extra []cdb.Header, body []byte) (cdb.Entry, error) {
	body, gzipped := z.compress(body)
	return cdb.NewFile(path, status, fileHeaders(base, extra, gzipped), body)
}

// compress returns body compressed, when that saves enough, and whether
// it is. The compressed bytes are in z.buf; body itself is returned as
// it is.
func (z *packer) compress(body []byte) (out []byte, gzipped bool) {
	out, enc := z.zc.Compress(&z.buf, body)
	return out, enc == "gzip"
}

// keep is compress for a body in a buffer about to be reused: what it
// returns is in z.buf either way.
func (z *packer) keep(body []byte) (out []byte, gzipped bool) {
	if out, gzipped = z.compress(body); !gzipped {
		out = z.copy(body)
	}
	return out, gzipped
}

// copy returns a copy of b in z.buf.
func (z *packer) copy(b []byte) []byte {
	start := len(z.buf)
	z.buf = append(z.buf, b...)
	return z.buf[start:]
}

// fileHeaders are the headers of base and extra, and Content-Encoding as
// gzipped says, ordered by name.
func fileHeaders(base, extra []cdb.Header, gzipped bool) []cdb.Header {
	enc := "identity"
	if gzipped {
		enc = "gzip"
	}
	headers := make([]cdb.Header, 0, len(base)+len(extra)+1)
	headers = append(append(append(headers, base...), extra...), cdb.Header{Name: "Content-Encoding", Value: enc})
	// Stable, so that the values of one header keep their order.
	slices.SortStableFunc(headers, func(a, b cdb.Header) int { return strings.Compare(a.Name, b.Name) })
	return headers
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sortedHeaders lists the headers of h ordered by name.
func sortedHeaders(h http.Header) []cdb.Header {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	headers := make([]cdb.Header, 0, len(names))
	for _, name := range names {
		for _, v := range h[name] {
			headers = append(headers, cdb.Header{Name: name, Value: v})
		}
	}
	return headers
}
