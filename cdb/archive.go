package cdb

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Keys and values fixed by the kawipiko-2022a schema.
const (
	schemaKey        = "schema"
	schemaVersion    = "kawipiko-2022a"
	fileIndexKey     = "F0000001"
	folderIndexKey   = "L0000001"
	redirectIndexKey = "R0000001"
)

// Resource is what an archive stores for one path.
type Resource struct {
	// Status is the HTTP status code, 200 if the metadata has none.
	Status int
	// Headers are the stored response headers in stored order, without
	// the !Status pseudo-header.
	Headers []Header
	// Body is the response body exactly as stored, still compressed if
	// ContentEncoding says so. It points into the archive's memory: it
	// is valid until the Archive is closed and must not be modified.
	Body []byte
}

// Header returns the value of the first header with the given name,
// compared case-insensitively.
func (r *Resource) Header(name string) (string, bool) {
	for _, h := range r.Headers {
		if strings.EqualFold(h.Name, name) {
			return h.Value, true
		}
	}
	return "", false
}

// ContentEncoding returns the encoding of Body, such as "gzip", or
// "identity" if the resource has no Content-Encoding header.
func (r *Resource) ContentEncoding() string {
	if v, ok := r.Header("Content-Encoding"); ok {
		return v
	}
	return "identity"
}

// Archive reads a kawipiko-2022a archive. Lookups are safe for concurrent
// use; Close must not run concurrently with them.
type Archive struct {
	r *Reader
}

// OpenArchive maps the archive at path read-only. It fails with ErrSchema
// if the file is a CDB without the kawipiko-2022a schema record.
func OpenArchive(path string) (*Archive, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer releaseOnPanic(func() { r.Close() })
	a, err := newArchive(r)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// NewArchiveFromBytes reads an archive held in memory. The Archive keeps
// b, which must not be modified while it is in use.
func NewArchiveFromBytes(b []byte) (*Archive, error) {
	r, err := NewReader(b)
	if err != nil {
		return nil, err
	}
	return newArchive(r)
}

func newArchive(r *Reader) (*Archive, error) {
	v, ok, err := r.Get([]byte(schemaKey))
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, fmt.Errorf("no schema record: %w", ErrSchema)
	case string(v) != schemaVersion:
		return nil, fmt.Errorf("schema %.64q: %w", v, ErrSchema)
	}
	return &Archive{r: r}, nil
}

// Info describes the file that OpenArchive mapped, as it was when mapped:
// nil for an archive held in memory.
func (a *Archive) Info() os.FileInfo { return a.r.Info() }

// Close releases the archive's memory mapping.
func (a *Archive) Close() error {
	return a.r.Close()
}

// Lookup finds the resource stored at exactly path, trying the file,
// redirect and folder-listing namespaces in the server's order. A path may
// be host-qualified ("://host/…"). Wildcards and the host fallback are the
// caller's to try, as separate lookups.
func (a *Archive) Lookup(path string) (Resource, bool, error) {
	var buf [256]byte
	for _, ns := range []string{"f:", "r:", "l:"} {
		key := append(append(buf[:0], ns...), path...)
		ref, ok, err := a.r.Get(key)
		if err != nil {
			return Resource{}, false, err
		}
		if !ok {
			continue
		}
		res, err := a.resolve(ref)
		if err != nil {
			return Resource{}, false, fmt.Errorf("%s%s: %w", ns, path, err)
		}
		return res, true, nil
	}
	return Resource{}, false, nil
}

// resolve loads the metadata and content that a 16-byte reference names.
func (a *Archive) resolve(ref []byte) (Resource, error) {
	if len(ref) != 16 || ref[0] != 'm' || ref[8] != 'd' || allZero(ref[1:8]) || allZero(ref[9:16]) {
		return Resource{}, fmt.Errorf("malformed reference %.64q: %w", ref, ErrCorrupt)
	}
	meta, err := a.record(ref[0:8])
	if err != nil {
		return Resource{}, err
	}
	body, err := a.record(ref[8:16])
	if err != nil {
		return Resource{}, err
	}
	status, headers, err := decodeMeta(meta)
	if err != nil {
		return Resource{}, fmt.Errorf("%s: %w", ref[0:8], err)
	}
	return Resource{Status: status, Headers: headers, Body: body}, nil
}

// record returns the record a reference points to; a missing one is
// corruption (the server answers 500).
func (a *Archive) record(key []byte) ([]byte, error) {
	v, ok, err := a.r.Get(key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("referenced record %q is missing: %w", key, ErrCorrupt)
	}
	return v, nil
}

func allZero(b []byte) bool {
	return bytes.Count(b, []byte{0}) == len(b)
}

// Paths returns the paths of the archive's files, from the F0000001 index
// if there is one, else by walking every key. Paths are sorted when the
// index is absent, and in index order otherwise.
func (a *Archive) Paths() ([]string, error) {
	index, ok, err := a.r.Get([]byte(fileIndexKey))
	if err != nil {
		return nil, err
	}
	if ok {
		return parseIndex(index)
	}
	var paths []string
	err = a.r.ForEach(func(key, _ []byte) error {
		if p, ok := bytes.CutPrefix(key, []byte("f:")); ok {
			paths = append(paths, string(p))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	return paths, nil
}

// parseIndex splits a path index, refusing what would hang the server: an
// empty line, or a last path without its newline.
func parseIndex(index []byte) ([]string, error) {
	if len(index) == 0 {
		return nil, nil
	}
	if index[len(index)-1] != '\n' {
		return nil, fmt.Errorf("path index does not end with a newline: %w", ErrCorrupt)
	}
	lines := strings.Split(string(index[:len(index)-1]), "\n")
	for i, line := range lines {
		if line == "" {
			return nil, fmt.Errorf("path index line %d is empty: %w", i+1, ErrCorrupt)
		}
	}
	return lines, nil
}
