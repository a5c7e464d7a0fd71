package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"
)

// Content is a paste's content as a file region: a server copies it to a
// connection with io.Copy, which the kernel does by sendfile when the
// connection allows, without the bytes passing through the Go heap.
type Content struct {
	*io.LimitedReader // over the file, positioned at the content
	file              *os.File
}

// Close closes the file of c.
func (c *Content) Close() error { return c.file.Close() }

// OpenContent returns paste id, its Content field nil, and its content as
// a file region of Content's length, or ok false when the paste is not
// there or has expired at now. An error wrapping ErrNoContentFile means
// the paste is there but not to be had this way: Get reads it. It reads the record's head with one pread
// and opens the segment afresh: sendfile sends from a file's own offset,
// which the FSM's descriptor, shared by every read, cannot lend. It is
// for large pastes, where that open costs less than copying the content
// into memory; the content's checksum is not checked on this path.
func (f *FSM) OpenContent(id string, now time.Time) (*Paste, *Content, bool, error) {
	it, ok := f.cur.Load().pastes.get(id)
	if !ok || it.expires != 0 && it.expires <= now.UnixNano() {
		return nil, nil, false, nil
	}
	p, c, err := openContent(it)
	return p, c, err == nil, err
}

// openContent is OpenContent of the paste it indexes.
func openContent(it pasteItem) (*Paste, *Content, error) {
	id := it.id
	s := it.r.s
	osf, isFile := s.file.(*os.File)
	if !isFile {
		return nil, nil, fmt.Errorf("%w: paste %s is in memory", ErrNoContentFile, id)
	}
	head := make([]byte, min(it.r.n, 4096))
	if _, err := osf.ReadAt(head, int64(it.r.off)); err != nil {
		return nil, nil, fmt.Errorf("read paste %s: %w", id, err)
	}
	le := binary.LittleEndian
	at := rHeader
	for i := range fieldBody {
		at += int(le.Uint32(head[rLens+4*i:]))
	}
	body := int64(le.Uint32(head[rLens+4*fieldBody:]))
	if at > len(head) || int64(at)+body != int64(it.r.n) {
		// A record whose short fields pass 4 KiB, or a damaged one: the
		// whole read, which checks it, answers.
		return nil, nil, fmt.Errorf("%w: paste %s has a head of %d bytes", ErrNoContentFile, id, at)
	}
	// The record's head is the paste but for its content.
	rec := head[:at]
	le.PutUint32(rec[rLens+4*fieldBody:], 0)
	var p Paste
	readRecord(rec, &p)
	p.Content = nil
	p.Text = head[rFlags]&flagText != 0
	// A new open file description of the same file, even one compaction
	// has removed from the directory since; s stays reachable, and its
	// descriptor open, until the open is done.
	var file *os.File
	raw, err := osf.SyscallConn()
	if err == nil {
		cerr := raw.Control(func(fd uintptr) {
			file, err = os.Open(fmt.Sprintf("/proc/self/fd/%d", fd))
		})
		err = errors.Join(err, cerr)
	}
	runtime.KeepAlive(s)
	if err != nil {
		return nil, nil, fmt.Errorf("open paste %s: %w", id, err)
	}
	if _, err := file.Seek(int64(it.r.off)+int64(at), io.SeekStart); err != nil {
		file.Close()
		return nil, nil, fmt.Errorf("open paste %s: %w", id, err)
	}
	return &p, &Content{&io.LimitedReader{R: file, N: body}, file}, nil
}

// LargeContent is the record size from which GetRaw hands out a file
// region: below it a pread into memory costs less than opening the file.
const LargeContent = 64 << 10

// GetRaw is Get for a server that sends a paste and is done with it: a
// paste whose record is LargeContent or more, in a segment file, comes as
// OpenContent hands it out, its Content nil and the content in c, which
// the caller closes; a smaller one is read into into, its fields pointing
// into buf, grown as need be and returned, so that the caller can reuse
// both once it has sent the content rather than leave them to the
// collector on every read.
func (f *FSM) GetRaw(id string, now time.Time, into *Paste, buf []byte) (rec []byte, c *Content, ok bool) {
	it, ok := f.cur.Load().pastes.get(id)
	if !ok || it.expires != 0 && it.expires <= now.UnixNano() {
		return buf, nil, false
	}
	if it.r.n >= LargeContent {
		p, c, err := openContent(it)
		if err == nil {
			*into = *p
			return buf, c, true
		}
		if !errors.Is(err, ErrNoContentFile) {
			f.log.Error("cannot open a paste", "id", id, "err", err)
			return buf, nil, false
		}
	}
	rec, err := it.r.readInto(buf)
	if err != nil {
		f.log.Error("cannot read a paste", "id", id, "err", err)
		return rec, nil, false
	}
	readRecord(rec, into)
	return rec, nil, true
}

// ErrNoContentFile means OpenContent cannot hand out a paste that Get can.
var ErrNoContentFile = errors.New("no content file")
