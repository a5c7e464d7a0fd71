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
	s := it.r.s
	osf, isFile := s.file.(*os.File)
	if !isFile {
		return nil, nil, false, fmt.Errorf("%w: paste %s is in memory", ErrNoContentFile, id)
	}
	head := make([]byte, min(it.r.n, 4096))
	if _, err := osf.ReadAt(head, int64(it.r.off)); err != nil {
		return nil, nil, false, fmt.Errorf("read paste %s: %w", id, err)
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
		return nil, nil, false, fmt.Errorf("%w: paste %s has a head of %d bytes", ErrNoContentFile, id, at)
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
		return nil, nil, false, fmt.Errorf("open paste %s: %w", id, err)
	}
	if _, err := file.Seek(int64(it.r.off)+int64(at), io.SeekStart); err != nil {
		file.Close()
		return nil, nil, false, fmt.Errorf("open paste %s: %w", id, err)
	}
	return &p, &Content{&io.LimitedReader{R: file, N: body}, file}, true, nil
}

// ErrNoContentFile means OpenContent cannot hand out a paste that Get can.
var ErrNoContentFile = errors.New("no content file")
