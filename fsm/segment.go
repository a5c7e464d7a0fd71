package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
)

// The pastes live in segment files; memory holds only the index (tree.go).
//
// Pastes never change: a create writes one, and a delete, burn or expiry
// only drops it from the index. So the store is a log of records, as in
// Bitcask or a Haystack volume: the apply appends each new paste's record
// to the active segment, and the index maps the paste's id to the segment,
// offset and length of its record. A read looks the id up and copies the
// record from the segment's mapping: from the page cache when the paste is
// hot, without a system call.
//
// A segment is sealed, and never written again, once it reaches sealSize
// or when Raft takes a snapshot. A snapshot then refers to the sealed
// segments by hard links instead of copying them (snapshot.go), which is
// why a segment's bytes, once written, never change: every link of a file
// is the same file. Space that removed pastes leave is taken back by
// compaction, which writes the records still indexed into a new segment
// and drops the old file; the last link of its bytes goes when the
// snapshots that refer to it are replaced.
//
// Segments are files of the FSM's directory, or, for an FSM made by New,
// buffers in memory that behave the same.

// sealSize is the length at which the active segment is sealed.
const sealSize = 16 << 20

// The record layout: a header, then the fields in order. All integers are
// little-endian; the CRC-32C covers everything after itself.
const (
	rLen       = 0  // uint32: the record's length, header included
	rCRC       = 4  // uint32
	rCreated   = 8  // int64
	rExpires   = 16 // int64
	rFlags     = 24 // byte, then three bytes of zero
	rLens      = 28 // uint32 per field
	rHeader    = rLens + 4*rFields
	rFields    = 6
	maxRecord  = 1 << 30 // far above any paste a command can carry
	fieldID    = 0
	fieldReq   = 1
	fieldTitle = 2
	fieldLang  = 3
	fieldToken = 4
	fieldBody  = 5
)

const (
	flagBurn = 1 << iota
	flagEncrypted
	flagText
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fieldsOf returns p's fields in record order.
func fieldsOf(p *Paste) [rFields][]byte {
	return [rFields][]byte{
		fieldID:    bytesOf(p.ID),
		fieldReq:   bytesOf(p.RequestID),
		fieldTitle: bytesOf(p.Title),
		fieldLang:  bytesOf(p.Lang),
		fieldToken: p.TokenHash,
		fieldBody:  p.Content,
	}
}

func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// recordLen returns the length of p's record.
func recordLen(p *Paste) int {
	n := rHeader
	for _, f := range fieldsOf(p) {
		n += len(f)
	}
	return n
}

// appendRecord appends p's record to b.
func appendRecord(b []byte, p *Paste) []byte {
	start := len(b)
	var hdr [rHeader]byte
	le := binary.LittleEndian
	le.PutUint64(hdr[rCreated:], uint64(p.CreatedAt))
	le.PutUint64(hdr[rExpires:], uint64(p.ExpiresAt))
	var flags byte
	if p.Burn {
		flags |= flagBurn
	}
	if p.Encrypted {
		flags |= flagEncrypted
	}
	if utf8.Valid(p.Content) {
		flags |= flagText
	}
	hdr[rFlags] = flags
	fields := fieldsOf(p)
	n := rHeader
	for i, f := range fields {
		le.PutUint32(hdr[rLens+4*i:], uint32(len(f)))
		n += len(f)
	}
	le.PutUint32(hdr[rLen:], uint32(n))
	b = append(b, hdr[:]...)
	for _, f := range fields {
		b = append(b, f...)
	}
	le.PutUint32(b[start+rCRC:], crc32.Checksum(b[start+rCreated:], castagnoli))
	return b
}

// checkRecord reports whether rec is a whole record whose checksum and
// lengths hold, so that readRecord can read it.
func checkRecord(rec []byte) error {
	le := binary.LittleEndian
	if len(rec) < rHeader {
		return fmt.Errorf("a record of %d bytes, under its header", len(rec))
	}
	if n := le.Uint32(rec[rLen:]); int(n) != len(rec) {
		return fmt.Errorf("a record of %d bytes says %d", len(rec), n)
	}
	if crc32.Checksum(rec[rCreated:], castagnoli) != le.Uint32(rec[rCRC:]) {
		return fmt.Errorf("a record fails its checksum")
	}
	n := rHeader
	for i := range rFields {
		n += int(le.Uint32(rec[rLens+4*i:]))
	}
	if n != len(rec) {
		return fmt.Errorf("fields of %d bytes in a record of %d", n, len(rec))
	}
	if le.Uint32(rec[rLens+4*fieldID:]) == 0 {
		return fmt.Errorf("a record without an id")
	}
	return nil
}

// readRecord sets p to the paste of rec, which checkRecord accepted or this
// process wrote. p's strings and slices point into rec, which the caller
// must not change afterwards.
func readRecord(rec []byte, p *Paste) {
	le := binary.LittleEndian
	var f [rFields][]byte
	at := rHeader
	for i := range f {
		n := int(le.Uint32(rec[rLens+4*i:]))
		f[i] = rec[at : at+n : at+n]
		at += n
	}
	flags := rec[rFlags]
	*p = Paste{
		ID:        str(f[fieldID]),
		RequestID: str(f[fieldReq]),
		Title:     str(f[fieldTitle]),
		Lang:      str(f[fieldLang]),
		TokenHash: f[fieldToken],
		Content:   f[fieldBody],
		CreatedAt: int64(le.Uint64(rec[rCreated:])),
		ExpiresAt: int64(le.Uint64(rec[rExpires:])),
		Burn:      flags&flagBurn != 0,
		Encrypted: flags&flagEncrypted != 0,
		Text:      flags&flagText != 0,
	}
}

// str returns b as a string without copying; b must never change.
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// segmentFile is where a segment's bytes are: an *os.File, or a memFile.
type segmentFile interface {
	io.ReaderAt
	io.WriterAt
	Sync() error
	Close() error
}

// segment is one file of records. Records below size never change, and
// readers of any state may read them at any time; only the writer (an
// apply, a restore, a compaction under the FSM's lock) appends.
type segment struct {
	id   uint64
	file segmentFile
	path string // "" in memory
	// mapped is the file mapped read-only (mapSegment), nil in memory. A
	// record that lies in it is copied from it rather than read with a
	// pread; the mapping may be longer than the file, so only what was
	// flushed is read from it.
	mapped []byte
	crc    uint32 // of bytes [0, size), kept while appending
	// size and sealed are the writer's. Appends collect in pending, which
	// flush writes at the end of an apply batch, before any reader can
	// look for them: one write a batch rather than one a paste.
	size    int64
	sealed  bool
	pending []byte
	flushed atomic.Int64 // bytes written to the file
	live    int64        // bytes of records still indexed; the writer's
	queued  bool         // waiting for compaction
	// freed is the Command.Now of the first removal of a record of s,
	// 0 while it has none: Purge compacts s once that is old enough.
	freed int64
	// wrote is the log index of the last apply or compaction that wrote
	// to s (or of the snapshot s was loaded from): no record in s came
	// from a later entry. created is what wrote was when a paste was last
	// removed from s: Purge reports it, as the log entries up to it may
	// hold the content of the pastes removed.
	wrote, created uint64
}

// segmentName is the file name of segment id.
func segmentName(id uint64) string { return fmt.Sprintf("%016x.seg", id) }

// parseSegmentName returns the id of a segment's file name.
func parseSegmentName(name string) (uint64, bool) {
	hex, ok := strings.CutSuffix(name, ".seg")
	if !ok || len(hex) != 16 {
		return 0, false
	}
	id, err := strconv.ParseUint(hex, 16, 64)
	return id, err == nil
}

// closeWhenUnreachable unmaps and closes s's file once no state, paste
// read or snapshot refers to s. A segment's file may be gone from the
// directory long before: an older state still reads through the open
// descriptor and the mapping.
func closeWhenUnreachable(s *segment) {
	type open struct {
		file   segmentFile
		mapped []byte
	}
	runtime.AddCleanup(s, func(o open) {
		unmapSegment(o.mapped)
		o.file.Close()
	}, open{s.file, s.mapped})
}

// read returns the n bytes at off, in a buffer of their own.
func (s *segment) read(off int64, n uint32) ([]byte, error) { return s.readInto(nil, off, n) }

// readInto reads the n bytes at off into buf, grown as need be. Bytes not
// flushed yet are the writer's to read, from pending.
func (s *segment) readInto(buf []byte, off int64, n uint32) ([]byte, error) {
	b := slices.Grow(buf[:0], int(n))[:n]
	if flushed := s.flushed.Load(); off+int64(n) > flushed {
		if off < flushed || int(off-flushed)+int(n) > len(s.pending) {
			return nil, fmt.Errorf("read segment %s at %d: past its end", segmentName(s.id), off)
		}
		copy(b, s.pending[off-flushed:])
		return b, nil
	}
	if end := off + int64(n); end <= int64(len(s.mapped)) {
		err := copyMapped(b, s.mapped[off:end])
		runtime.KeepAlive(s) // its cleanup unmaps s.mapped
		if err != nil {
			return nil, fmt.Errorf("read segment %s at %d: %w", segmentName(s.id), off, err)
		}
		return b, nil
	}
	if _, err := s.file.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("read segment %s at %d: %w", segmentName(s.id), off, err)
	}
	return b, nil
}

// copyMapped copies src, part of a mapping, to dst. A page the file no
// longer backs (it was cut short behind the node's back) or cannot be read
// from disk is a fault, which makes this read fail instead of the process.
func copyMapped(dst, src []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if e := recover(); e != nil {
			err = fmt.Errorf("mapped segment: %v", e)
		}
	}()
	copy(dst, src)
	return nil
}

// append adds rec at the end of s, to be written by flush, and returns its
// offset.
func (s *segment) append(rec []byte) int64 {
	off := s.size
	s.pending = append(s.pending, rec...)
	s.size += int64(len(rec))
	s.crc = crc32.Update(s.crc, castagnoli, rec)
	return off
}

// flush writes what append collected.
func (s *segment) flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	at := s.flushed.Load()
	if _, err := s.file.WriteAt(s.pending, at); err != nil {
		return fmt.Errorf("write segment %s: %w", segmentName(s.id), err)
	}
	s.flushed.Store(at + int64(len(s.pending)))
	if cap(s.pending) > 1<<20 {
		s.pending = nil // a compaction's or a large paste's: let it go
	} else {
		s.pending = s.pending[:0]
	}
	return nil
}

// segments makes and opens the segments of one FSM: files in dir, or
// memFiles when dir is "".
type segments struct {
	dir     string
	discard bool   // keep nothing: InspectSnapshot only counts
	next    uint64 // the id of the next segment made
}

// create makes a new, empty segment.
func (ss *segments) create() (*segment, error) {
	ss.next++
	s := &segment{id: ss.next}
	switch {
	case ss.discard:
		s.file = discard{}
		return s, nil
	case ss.dir == "":
		s.file = &memFile{}
		return s, nil
	}
	s.path = filepath.Join(ss.dir, segmentName(s.id))
	f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create segment: %w", err)
	}
	s.file = f
	// The active segment grows to sealSize and a record beyond; a record
	// past the mapping is read with a pread.
	s.mapped = mapSegment(f, 2*sealSize)
	closeWhenUnreachable(s)
	return s, nil
}

// remove deletes s's file from the FSM's directory. Open descriptors and
// hard links in snapshots keep its bytes while they last.
func (ss *segments) remove(s *segment) {
	if s.path != "" {
		os.Remove(s.path)
	}
}

// memFile is a segment file in memory. Appends never move the bytes
// already written, so readers need the lock only for the slice header.
type memFile struct {
	mu  sync.RWMutex
	buf []byte
}

func (m *memFile) ReadAt(b []byte, off int64) (int, error) {
	m.mu.RLock()
	buf := m.buf
	m.mu.RUnlock()
	if off < 0 || off > int64(len(buf)) {
		return 0, io.EOF
	}
	n := copy(b, buf[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (m *memFile) WriteAt(b []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if off != int64(len(m.buf)) {
		return 0, fmt.Errorf("memFile: write at %d, not at its end %d", off, len(m.buf))
	}
	m.buf = append(m.buf, b...)
	return len(b), nil
}

func (m *memFile) Sync() error  { return nil }
func (m *memFile) Close() error { return nil }

// openSegments opens the segment directory dir, creating it if need be.
func openSegments(dir string) (*segments, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open segments: %w", err)
	}
	ss := &segments{dir: dir}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open segments: %w", err)
	}
	for _, e := range entries {
		if id, ok := parseSegmentName(e.Name()); ok {
			ss.next = max(ss.next, id)
		}
	}
	return ss, nil
}

// adopt makes the sealed segment id, of size bytes, whose file is src (a
// snapshot's link), a segment of this directory: it links src in unless
// the directory has it already, and opens it. Id 0 links src under a new
// id, for a snapshot of another node's segments.
func (ss *segments) adopt(src string, id uint64, size int64, crc uint32) (*segment, error) {
	if id == 0 {
		id = ss.next + 1
	}
	ss.next = max(ss.next, id)
	s := &segment{id: id, size: size, crc: crc, sealed: true}
	s.flushed.Store(size)
	s.path = filepath.Join(ss.dir, segmentName(id))
	if err := linkFile(src, s.path); err != nil {
		return nil, fmt.Errorf("link segment %s: %w", segmentName(id), err)
	}
	f, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("open segment: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() != size {
		err = fmt.Errorf("segment %s is %d bytes, its snapshot says %d", segmentName(id), fi.Size(), size)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	s.file = f
	s.mapped = mapSegment(f, size)
	closeWhenUnreachable(s)
	return s, nil
}

// clean removes the segment files of the directory that keep does not
// hold: what a state replaced by a restore left, or a crash.
func (ss *segments) clean(keep map[uint64]*segment) {
	if ss.dir == "" {
		return
	}
	entries, _ := os.ReadDir(ss.dir)
	for _, e := range entries {
		if id, ok := parseSegmentName(e.Name()); ok && keep[id] == nil {
			os.Remove(filepath.Join(ss.dir, e.Name()))
		}
	}
}

// syncDir makes the entries of dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// linkFile makes dst a hard link of src, replacing whatever other file dst
// names.
func linkFile(src, dst string) error {
	err := os.Link(src, dst)
	if !os.IsExist(err) {
		return err
	}
	a, err := os.Stat(src)
	if err != nil {
		return err
	}
	if b, err := os.Stat(dst); err == nil && os.SameFile(a, b) {
		return nil
	}
	if err := os.Remove(dst); err != nil {
		return err
	}
	return os.Link(src, dst)
}

// discard is a segment file that keeps nothing.
type discard struct{}

func (discard) ReadAt([]byte, int64) (int, error)      { return 0, errors.New("segment discarded") }
func (discard) WriteAt(b []byte, _ int64) (int, error) { return len(b), nil }
func (discard) Sync() error                            { return nil }
func (discard) Close() error                           { return nil }
