package cdb

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// ArchiveWriter writes a kawipiko-2022a archive: a CDB file that
// kawipiko-server and Archive can serve. Identical bodies (but those of
// entries made by NewUniqueFile) and identical metadata blocks are stored
// once and shared by every path that uses them. An ArchiveWriter is not
// safe for concurrent use.
type ArchiveWriter struct {
	w      *Writer
	lastID int                      // the counter shared by m… and d… ids
	metas  map[[sha256.Size]byte]id // metadata block hash → its m… id
	bodies map[[sha256.Size]byte]id // body hash → its d… id
	keys   map[string]struct{}      // every f: and r: key written
	files  []string                 // paths of the f: keys, for F0000001
	redir  []string                 // paths of the r: keys, for R0000001
	closed bool
}

// id is an 8-byte record id such as m0000001 or d000000a.
type id [8]byte

// NewArchive starts an archive at the current position of w and writes
// its schema record.
func NewArchive(w io.WriteSeeker) (*ArchiveWriter, error) {
	cw, err := NewWriter(w)
	if err != nil {
		return nil, err
	}
	return startArchive(cw)
}

// NewTailArchive starts an archive written to w in tail order (see
// NewTailWriter): its last TailSize bytes belong at its start.
func NewTailArchive(w io.Writer) (*ArchiveWriter, error) {
	return startArchive(NewTailWriter(w))
}

func startArchive(cw *Writer) (*ArchiveWriter, error) {
	if err := cw.Put([]byte(schemaKey), []byte(schemaVersion)); err != nil {
		return nil, err
	}
	return &ArchiveWriter{
		w:      cw,
		metas:  make(map[[sha256.Size]byte]id),
		bodies: make(map[[sha256.Size]byte]id),
		keys:   make(map[string]struct{}),
	}, nil
}

// Reserve makes room for files more paths, so that an archive whose size
// the caller knows does not grow its index of paths step by step, on the
// one goroutine of an export that cannot be spread over the CPUs. It may be
// called at any time; a count that turns out wrong costs only memory or
// the growing it would have saved.
func (a *ArchiveWriter) Reserve(files int) {
	if files <= 0 {
		return
	}
	keys := make(map[string]struct{}, len(a.keys)+files)
	for k := range a.keys {
		keys[k] = struct{}{}
	}
	a.keys = keys
	a.files = slices.Grow(a.files, files)
}

// AddFile stores body under path with the given status and headers. The
// body is stored as given: if it is compressed, headers must say so with
// Content-Encoding (see Compressor). Headers are written in the given order
// after the status; their names must be in kawipiko's built-in list
// (matched case-insensitively) and Content-Length is refused, because the
// server computes it.
//
// A path is "/" followed by the rest of the request path, or "://host/…"
// to match only requests with that Host header. Paths under /__/ are
// valid but hidden by the server's built-in pages.
func (a *ArchiveWriter) AddFile(path string, status int, headers []Header, body []byte) error {
	return a.add('f', path, status, headers, body)
}

// AddRedirect stores a redirect from path to location with status 301,
// 302, 303, 307 or 308, and an empty body.
func (a *ArchiveWriter) AddRedirect(path, location string, status int) error {
	switch status {
	case 301, 302, 303, 307, 308:
	default:
		return fmt.Errorf("redirect %s: status %d is not 301, 302, 303, 307 or 308: %w", path, status, ErrInvalidHeader)
	}
	return a.add('r', path, status, []Header{{Name: "Location", Value: location}}, nil)
}

func (a *ArchiveWriter) add(ns byte, path string, status int, headers []Header, body []byte) error {
	e, err := newEntry(ns, path, status, headers, body, false)
	if err != nil {
		return err
	}
	return a.Add(e)
}

// Entry is a file or redirect made ready for an archive: checked, its
// metadata encoded and its fingerprints taken. Making entries is the work
// that can run on every CPU; Add, which is not safe for concurrent use,
// only writes them.
type Entry struct {
	key              string // "f:" or "r:", then the path
	meta, body       []byte
	metaSum, bodySum [sha256.Size]byte // bodySum is unset when unique
	unique           bool              // the body is stored without a fingerprint
}

// NewFile makes the entry that AddFile(path, status, headers, body) would
// add. The entry keeps body.
func NewFile(path string, status int, headers []Header, body []byte) (Entry, error) {
	return newEntry('f', path, status, headers, body, false)
}

// NewUniqueFile is NewFile for a body that the caller knows no other file
// of the archive has, such as a page that names its own path: Add stores
// it under an id of its own without fingerprinting it, which costs a hash
// of the body and a map entry per file that could never be shared. A body
// that is not unique after all is stored twice; the archive stays valid.
func NewUniqueFile(path string, status int, headers []Header, body []byte) (Entry, error) {
	return newEntry('f', path, status, headers, body, true)
}

// Meta is the metadata of a file, its status and headers, encoded once
// for the many files of an archive that share it (EncodeMeta).
type Meta struct {
	b   []byte
	sum [sha256.Size]byte
}

// EncodeMeta encodes the status and headers that NewFile encodes for each
// file, for NewUniqueFileMeta.
func EncodeMeta(status int, headers []Header) (Meta, error) {
	b, err := encodeMeta(status, headers)
	if err != nil {
		return Meta{}, err
	}
	return Meta{b: b, sum: sha256.Sum256(b)}, nil
}

// NewUniqueFileMeta is NewUniqueFile with the status and headers that
// meta encodes, which saves encoding and fingerprinting them for each
// file. The entry keeps body.
func NewUniqueFileMeta(path string, meta Meta, body []byte) (Entry, error) {
	if meta.b == nil {
		return Entry{}, fmt.Errorf("%s: %w: NewUniqueFileMeta takes metadata made by EncodeMeta", path, ErrInvalidHeader)
	}
	e, err := newKey('f', path)
	if err != nil {
		return Entry{}, err
	}
	e.body, e.unique, e.meta, e.metaSum = body, true, meta.b, meta.sum
	return e, nil
}

// newEntry checks and encodes an entry, and fingerprints its body unless it
// is unique (NewUniqueFile).
func newEntry(ns byte, path string, status int, headers []Header, body []byte, unique bool) (Entry, error) {
	e, err := newKey(ns, path)
	if err != nil {
		return Entry{}, err
	}
	e.body, e.unique = body, unique
	if e.meta, err = encodeMeta(status, headers); err != nil {
		return Entry{}, fmt.Errorf("%s: %w", e.key, err)
	}
	e.metaSum = sha256.Sum256(e.meta)
	if !unique {
		e.bodySum = sha256.Sum256(body)
	}
	return e, nil
}

// newKey starts the entry of path in namespace ns, checking its key.
func newKey(ns byte, path string) (Entry, error) {
	if err := checkPath(path); err != nil {
		return Entry{}, err
	}
	e := Entry{key: string(ns) + ":" + path}
	if hashString(e.key) == 0 {
		return Entry{}, fmt.Errorf("%s: %w", e.key, ErrZeroHash)
	}
	return e, nil
}

// Add writes an entry made by NewFile or NewUniqueFile. Like AddFile, it
// refuses a path already in the archive.
func (a *ArchiveWriter) Add(e Entry) error {
	if a.closed {
		return ErrClosed
	}
	if len(e.key) < 3 {
		return fmt.Errorf("%w: Add takes an entry made by NewFile", ErrInvalidPath)
	}
	if _, dup := a.keys[e.key]; dup {
		return fmt.Errorf("%s: %w", e.key, ErrDuplicatePath)
	}
	mid, err := a.store(a.metas, 'm', e.meta, e.metaSum)
	if err != nil {
		return err
	}
	var did id
	if e.unique {
		did, err = a.put('d', e.body)
	} else {
		did, err = a.store(a.bodies, 'd', e.body, e.bodySum)
	}
	if err != nil {
		return err
	}
	if err := a.w.Put([]byte(e.key), append(mid[:], did[:]...)); err != nil {
		return err
	}
	a.keys[e.key] = struct{}{}
	if path := e.key[2:]; e.key[0] == 'f' {
		a.files = append(a.files, path)
	} else {
		a.redir = append(a.redir, path)
	}
	return nil
}

// store writes value, whose SHA-256 is sum, under a new id unless an
// identical value is already stored, and returns the id to reference.
func (a *ArchiveWriter) store(seen map[[sha256.Size]byte]id, letter byte, value []byte, sum [sha256.Size]byte) (id, error) {
	if i, ok := seen[sum]; ok {
		return i, nil
	}
	i, err := a.put(letter, value)
	if err == nil {
		seen[sum] = i
	}
	return i, err
}

// put writes value under a new id and returns the id.
func (a *ArchiveWriter) put(letter byte, value []byte) (id, error) {
	i, err := a.newID(letter)
	if err != nil {
		return id{}, err
	}
	if err := a.w.Put(i[:], value); err != nil {
		return id{}, err
	}
	return i, nil
}

// newID takes the next number from the shared counter, skipping the rare
// id whose CDB hash is 0, since the server could not find it.
func (a *ArchiveWriter) newID(letter byte) (id, error) {
	for {
		a.lastID++
		if a.lastID >= 1<<24 {
			return id{}, fmt.Errorf("archive ran out of record ids: %w", ErrTooLarge)
		}
		var i id
		appendID(i[:0], letter, a.lastID)
		if Hash(i[:]) != 0 {
			return i, nil
		}
	}
}

// Close writes the path indexes and finishes the file. The indexes are
// complete and every path in them ends with a newline; the L0000001 index
// is empty, since the archive has no folder listings. Close does not close
// the underlying writer.
func (a *ArchiveWriter) Close() error {
	if a.closed {
		return ErrClosed
	}
	a.closed = true
	for _, idx := range []struct {
		key   string
		paths []string
	}{
		{fileIndexKey, a.files},
		{folderIndexKey, nil},
		{redirectIndexKey, a.redir},
	} {
		if err := a.w.Put([]byte(idx.key), pathIndex(idx.paths)); err != nil {
			return err
		}
	}
	return a.w.Close()
}

// pathIndex formats an index value: the paths sorted, each followed by a
// newline. An empty line would hang kawipiko-server at startup; checkPath
// ensures there is none.
func pathIndex(paths []string) []byte {
	slices.Sort(paths)
	var b bytes.Buffer
	for _, p := range paths {
		b.WriteString(p)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// checkPath accepts the paths kawipiko-server can match: "/…" or
// "://host/…", without control bytes, spaces or "?", which never appear in
// the part of a request URI that the server compares.
func checkPath(path string) error {
	rest, hosted := strings.CutPrefix(path, "://")
	if hosted {
		slash := strings.IndexByte(rest, '/')
		if slash < 1 {
			return fmt.Errorf("path %.64q has no host or no path after it: %w", path, ErrInvalidPath)
		}
		rest = rest[slash:]
	}
	if !strings.HasPrefix(rest, "/") {
		return fmt.Errorf("path %.64q does not start with / or ://host/: %w", path, ErrInvalidPath)
	}
	for i := 0; i < len(path); i++ {
		if c := path[i]; c <= ' ' || c == 0x7f || c == '?' {
			return fmt.Errorf("path %.64q has byte %q at %d: %w", path, c, i, ErrInvalidPath)
		}
	}
	return nil
}

// Compressor gzips bodies with a gzip writer of its own. A caller that
// compresses many bodies on one goroutine, such as an export's worker,
// keeps one rather than take one from a sync.Pool: the pool is emptied by
// the garbage collections that a busy node runs often, and a new writer
// allocates about 1 MiB of compressor state, far more than the small
// bodies it compresses. A Compressor is not safe for concurrent use.
type Compressor struct{ zw *gzip.Writer }

// NewCompressor returns a Compressor.
//
// Its writer is klauspost/compress's: an export compresses every page and
// paste, and the standard library's writer at its best level spent most
// of an export's time there, mostly resetting its state for each small
// body. At levels 4 and 5 klauspost's output is within a few percent of
// that size, several times faster, and it stores what does not compress
// without trying hard.
//
// The level is 4: an export is bound by its CPU, and level 4 is quicker
// than 5 for output a few percent larger. Level 3 costs more in size than
// it saves in time, and below it many small pages no longer shrink enough
// to be stored compressed.
func NewCompressor() *Compressor {
	zw, _ := gzip.NewWriterLevel(nil, 4) // the level is valid
	return &Compressor{zw: zw}
}

// Compress returns the gzip of body with encoding "gzip" if that saves
// enough, otherwise body itself with encoding "identity". The thresholds
// are kawipiko-archiver's: the saving, as a percentage of the original
// size, must be at least 90%, or at least 40% for bodies over 1 KiB, 35%
// over 2 KiB, 30% over 4 KiB, 25% over 8 KiB, 20% over 16 KiB, 15% over
// 32 KiB, 10% over 64 KiB and 5% over 1 MiB.
//
// The gzip bytes are appended to *buf, so that a caller can keep the
// bodies of many files in one buffer it reuses: out is then the end of
// *buf. *buf
// grows at most once, to hold the largest gzip that pays; the compressor
// stops at a write beyond it, since what it makes would not be kept.
func (c *Compressor) Compress(buf *[]byte, body []byte) (out []byte, encoding string) {
	limit := maxPacked(len(body))
	if len(body) == 0 || gzipFloor(body) > limit {
		return body, "identity"
	}
	grown := slices.Grow(*buf, limit)
	b := cappedBuffer{b: grown[len(grown) : len(grown) : len(grown)+limit]}
	c.zw.Reset(&b)
	_, err := c.zw.Write(body)
	if err == nil {
		err = c.zw.Close()
	}
	if err != nil {
		return body, "identity"
	}
	*buf = grown[:len(grown)+len(b.b)]
	return b.b, "gzip"
}

// cappedBuffer is a buffer that refuses to grow beyond its capacity.
type cappedBuffer struct{ b []byte }

// errNoRoom stops a compressor whose output would not pay.
var errNoRoom = errors.New("cdb: compressed body larger than what pays")

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if len(c.b)+len(p) > cap(c.b) {
		return 0, errNoRoom
	}
	c.b = append(c.b, p...)
	return len(p), nil
}

// gzipFloor is a size that the gzip of body cannot be under, found in one
// cheap pass: a small document such as a paste's metadata has too many
// different bytes to shrink by the 90% that a body of 1 KiB or less must,
// and Compress then need not try. The floor is the gzip header and
// trailer, 18 bytes, and the first occurrence of each of the k different
// bytes, which must be a literal: k codes of one prefix code take at least
// k·⌊log₂ k⌋ bits. That holds within one deflate block, which is what the
// writer makes of a small body; above 1 KiB the floor is only the header
// and trailer.
func gzipFloor(body []byte) int {
	const overhead = 18
	if len(body) > 1<<10 {
		return overhead
	}
	var seen [256]bool
	k := 0
	for _, c := range body {
		if !seen[c] {
			seen[c] = true
			k++
		}
	}
	return overhead + k*(bits.Len(uint(k))-1)/8
}

// maxPacked is the largest size that a body of raw bytes may be
// compressed to for the compressed form to be stored.
func maxPacked(raw int) int {
	minSaving := 90 // percent, for any size
	for _, band := range []struct{ over, saving int }{
		{1 << 20, 5}, {64 << 10, 10}, {32 << 10, 15}, {16 << 10, 20},
		{8 << 10, 25}, {4 << 10, 30}, {2 << 10, 35}, {1 << 10, 40},
	} {
		if raw > band.over {
			minSaving = band.saving
			break
		}
	}
	return raw - int((int64(minSaving)*int64(raw)+99)/100)
}
