package mirror

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pastenode/pastenode/cdb"
	"github.com/pastenode/pastenode/ui"
)

// PageCache keeps, in one file, what an export spent its time on: the
// rendered and compressed page and the metadata document of every paste,
// and the compressed raw bytes of those that compress. The next export
// takes them from there rather than highlight and compress the paste
// again. A paste never changes and a mirror's page does not depend on the
// time of the export (ui.Options.Mirror), so a page is the same in every
// export made by the same build with the same UI; the file records both,
// and a cache made by another is not used. An export whose UI's pages do
// depend on the time (not a mirror's) neither reads nor writes it.
//
// Each export that uses a PageCache writes a new file beside the old one
// with the pastes it exported, and renames it over the old one when it
// succeeds, so the file holds what the last export held: its size is
// about that of the pages in one archive, about half of the archive, and
// deleted pastes leave it with the next export. The file may be removed
// at any time; the next export is then as slow as the first. A value that
// does not read back as written (a file cut short by a crash, a flipped
// bit) is not used: the page is made again.
//
// A PageCache is safe for concurrent use. Of exports that run at once,
// only one writes the file; the others read the old one.
type PageCache struct {
	path string
	log  *slog.Logger
	room func(bytes int64) bool
	mu   sync.Mutex // held by the export that writes the next file
}

// NewPageCache returns a PageCache kept in the file at path. log, which
// may be nil, hears of a cache that could not be read or written; an
// export goes on without it. room, which may be nil, reports whether the
// file system of path can take bytes more and keep the room it needs for
// more important things (a node's Raft log): the next file is written
// only while it says so, and abandoned when it stops saying so.
func NewPageCache(path string, log *slog.Logger, room func(bytes int64) bool) *PageCache {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if room == nil {
		room = func(int64) bool { return true }
	}
	return &PageCache{path: path, log: log, room: room}
}

// cacheRoomEvery is how many bytes of the next file are written between
// two asks of room, and what each ask is for; a var so that tests can
// make it small.
var cacheRoomEvery int64 = 16 << 20

// cacheFormat names the layout of the file's values; a file of another
// layout is not read.
const cacheFormat = "pastenode-page-cache-2"

// cacheIdentityKey is the key of the record that says which build and UI
// made the file. A paste's key is 32 bytes, so it cannot be this one.
var cacheIdentityKey = []byte("identity")

// buildHash is the SHA-256 of the running executable: code, templates,
// assets, lexers and compression level are all in it, and any of them
// changes what a page is. It is nil when the executable cannot be read;
// the cache is then not used. On Linux it reads /proc/self/exe, which is
// the file the process runs even after an upgrade has put a new binary
// at its path: hashing the new one would give the old build's pages the
// new build's name.
var buildHash = sync.OnceValue(func() []byte {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		path, err := os.Executable()
		if err != nil {
			return nil
		}
		if f, err = os.Open(path); err != nil {
			return nil
		}
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil
	}
	return h.Sum(nil)
})

// identityOf is what a cache made for pages records: the format, the
// build, and a probe page that pages renders, which tells its options
// (a base path, say) from another UI's. It fails for a UI whose pages
// depend on the time they are rendered at, as a live node's do.
func identityOf(pages *ui.UI) ([]byte, error) {
	build := buildHash()
	if build == nil {
		return nil, errors.New("cannot read the executable to tell its build")
	}
	var probe, later bytes.Buffer
	created := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	p := ui.Paste{ID: "probe", Title: "probe", Content: []byte("probe\n"), CreatedAt: created, ExpiresAt: created.Add(time.Hour)}
	if err := pages.Paste(&probe, p, created); err != nil {
		return nil, err
	}
	if err := pages.Paste(&later, p, created.Add(48*time.Hour)); err != nil {
		return nil, err
	}
	if !bytes.Equal(probe.Bytes(), later.Bytes()) {
		return nil, errors.New("the UI's pages depend on the time they are rendered at: not a mirror's")
	}
	h := sha256.New()
	h.Write([]byte(cacheFormat))
	h.Write(build)
	h.Write(probe.Bytes())
	return h.Sum(nil), nil
}

// cacheKey names the page and raw bytes of p: a hash of everything the
// page shows (every field of ui.Paste; TestCacheKeyCoversThePaste
// checks that none is left out).
func cacheKey(p *ui.Paste) [sha256.Size]byte {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	field := func(b []byte) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
		h.Write(b)
	}
	field([]byte(p.ID))
	field([]byte(p.Title))
	field([]byte(p.Lang))
	field(p.Content)
	var flags byte
	if p.Burn {
		flags |= 1
	}
	if p.Encrypted {
		flags |= 2
	}
	var fixed [17]byte
	binary.LittleEndian.PutUint64(fixed[0:], uint64(p.CreatedAt.UnixNano()))
	if !p.ExpiresAt.IsZero() {
		binary.LittleEndian.PutUint64(fixed[8:], uint64(p.ExpiresAt.UnixNano()))
	}
	fixed[16] = flags
	h.Write(fixed[:])
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// A cached value is a CRC-32C of the rest, a flags byte, the page's
// length as a uvarint and its stored bytes, the metadata document's
// length as a uvarint and its bytes, and, when the raw bytes are stored
// gzipped, their gzip bytes.
const (
	cachedPageGzip = 1 << iota // the page is stored gzipped
	cachedRawGzip              // the raw bytes follow, gzipped; otherwise they are stored as they are
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// cached is what the cache holds of one paste.
type cached struct {
	page, raw         []byte // as stored in the archive; raw is nil when stored as they are
	meta              []byte // the metadata document, as it is: each export compresses it when that pays, which a small one's never does
	pageGzip, rawGzip bool
}

// appendCached appends the value of c to b.
func appendCached(b []byte, c cached) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0, 0)
	if c.pageGzip {
		b[start+4] |= cachedPageGzip
	}
	if c.rawGzip {
		b[start+4] |= cachedRawGzip
	}
	b = binary.AppendUvarint(b, uint64(len(c.page)))
	b = append(b, c.page...)
	b = binary.AppendUvarint(b, uint64(len(c.meta)))
	b = append(b, c.meta...)
	if c.rawGzip {
		b = append(b, c.raw...)
	}
	binary.LittleEndian.PutUint32(b[start:], crc32.Checksum(b[start+4:], castagnoli))
	return b
}

// parseCached reads a value that appendCached wrote; ok is false for one
// it did not. The slices of c point into v.
func parseCached(v []byte) (c cached, ok bool) {
	if len(v) < 5 || binary.LittleEndian.Uint32(v) != crc32.Checksum(v[4:], castagnoli) {
		return cached{}, false
	}
	flags := v[4]
	if flags&^(cachedPageGzip|cachedRawGzip) != 0 {
		return cached{}, false
	}
	rest := v[5:]
	for _, field := range []*[]byte{&c.page, &c.meta} {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return cached{}, false
		}
		rest = rest[w:]
		*field, rest = rest[:n], rest[n:]
	}
	c.pageGzip, c.rawGzip = flags&cachedPageGzip != 0, flags&cachedRawGzip != 0
	switch {
	case c.rawGzip:
		c.raw = rest
	case len(rest) != 0:
		return cached{}, false
	}
	return c, true
}

// cacheRun is one export's use of a PageCache: the file of the last
// export to read from, and the next one to write, either of which may be
// missing.
type cacheRun struct {
	c        *PageCache
	old      *cdb.Reader // nil: nothing to read
	next     *cdb.Writer // nil: this run writes nothing
	nextFile *os.File
	locked   bool  // this run holds c.mu
	written  int64 // bytes put in the next file, about
	roomFor  int64 // written when room last said yes, plus cacheRoomEvery
	hits     int
}

// begin starts an export's use of c with pages. It never fails: what it
// cannot read or write it logs and does without.
func (c *PageCache) begin(pages *ui.UI) *cacheRun {
	r := &cacheRun{c: c}
	identity, err := identityOf(pages)
	if err != nil {
		c.log.Warn("export page cache not used", "err", err)
		return r
	}
	if old, err := cdb.Open(c.path); err == nil {
		if v, found, err := old.Get(cacheIdentityKey); err == nil && found && bytes.Equal(v, identity) {
			r.old = old
		} else {
			old.Close()
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		c.log.Warn("export page cache not read", "path", c.path, "err", err)
	}
	if !c.mu.TryLock() {
		return r // another export writes the next file
	}
	r.locked = true
	// A next file left by a process that stopped in an export: no other
	// export is writing one now.
	if stale, err := filepath.Glob(c.path + ".*.tmp"); err == nil {
		for _, name := range stale {
			os.Remove(name)
		}
	}
	if !c.room(cacheRoomEvery) {
		c.log.Warn("export page cache not written: its file system keeps its room for the data", "path", c.path)
		return r
	}
	r.roomFor = cacheRoomEvery
	f, err := os.CreateTemp(filepath.Dir(c.path), filepath.Base(c.path)+".*.tmp")
	if err == nil {
		var w *cdb.Writer
		if w, err = cdb.NewWriter(f); err == nil {
			err = w.Put(cacheIdentityKey, identity)
			r.next, r.nextFile = w, f
		}
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			r.next, r.nextFile = nil, nil
		}
	}
	if err != nil {
		c.log.Warn("export page cache not written", "path", c.path, "err", err)
	}
	return r
}

// get returns what the last export kept for key, and the value as stored,
// for put to copy.
func (r *cacheRun) get(key *[sha256.Size]byte) (c cached, value []byte, ok bool) {
	if r == nil || r.old == nil {
		return cached{}, nil, false
	}
	v, found, err := r.old.Get(key[:])
	if err != nil || !found {
		return cached{}, nil, false
	}
	if c, ok = parseCached(v); !ok {
		return cached{}, nil, false
	}
	return c, v, true
}

// put keeps value under key in the next file. It is called from one
// goroutine, in the archive's order. A failure, such as a full disk,
// abandons the next file and leaves the old one in place.
func (r *cacheRun) put(key *[sha256.Size]byte, value []byte) {
	if r == nil || r.next == nil {
		return
	}
	if r.written += int64(8 + len(key) + len(value)); r.written > r.roomFor {
		if !r.c.room(cacheRoomEvery) {
			r.c.log.Warn("export page cache not written: its file system keeps its room for the data", "path", r.c.path)
			r.abandon()
			return
		}
		r.roomFor = r.written + cacheRoomEvery
	}
	if err := r.next.Put(key[:], value); err != nil {
		r.c.log.Warn("export page cache not written", "path", r.c.path, "err", err)
		r.abandon()
	}
}

// abandon drops the next file.
func (r *cacheRun) abandon() {
	if r.nextFile != nil {
		r.nextFile.Close()
		os.Remove(r.nextFile.Name())
	}
	r.next, r.nextFile = nil, nil
}

// finish ends the run: after an export that succeeded the next file
// replaces the old one, after one that failed it is dropped, since it
// lacks the pastes not reached.
func (r *cacheRun) finish(exported bool) {
	if r == nil {
		return
	}
	if r.next != nil && exported {
		err := r.next.Close()
		if err == nil {
			err = r.nextFile.Close()
		}
		if err == nil {
			err = os.Rename(r.nextFile.Name(), r.c.path)
		}
		if err != nil {
			r.c.log.Warn("export page cache not written", "path", r.c.path, "err", fmt.Errorf("finish: %w", err))
			os.Remove(r.nextFile.Name())
		}
		r.next, r.nextFile = nil, nil
	}
	r.abandon()
	if r.old != nil {
		r.old.Close()
	}
	if r.locked {
		r.c.mu.Unlock()
	}
}

// writes reports whether this run keeps values in a next file.
func (r *cacheRun) writes() bool { return r != nil && r.next != nil }
