package cdb

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// Writer streams a CDB file to an io.WriteSeeker, or in tail order to an
// io.Writer (NewTailWriter). Records go straight to the underlying writer
// through a buffer; only the hash and offset of each record (8 bytes) stay
// in memory until Close builds the hash tables.
//
// A Writer is not safe for concurrent use. Keys are not deduplicated: if a
// key is put twice, readers find the first value.
type Writer struct {
	w     io.WriteSeeker // nil in tail order
	bw    *bufio.Writer
	base  int64  // position in w where the file starts
	pos   uint64 // offset of the next record, relative to base
	limit uint64 // largest file size allowed; lowered by tests
	slots []slot // one per record, in the order they were put
	err   error  // first failure, or ErrClosed; returned by later calls
	hdr   [8]byte
}

// slot is one hash table entry: the hash of a key and the offset of its
// record.
type slot struct{ hash, off uint32 }

// NewWriter starts a CDB file at the current position of w. It writes a
// placeholder header, which Close overwrites, so w must support seeking
// back. Offsets in the file are relative to that starting position.
func NewWriter(w io.WriteSeeker) (*Writer, error) {
	base, err := w.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("cdb: find start position: %w", err)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := bw.Write(make([]byte, headerSize)); err != nil {
		return nil, fmt.Errorf("cdb: write header: %w", err)
	}
	return &Writer{w: w, bw: bw, base: base, pos: headerSize, limit: MaxSize}, nil
}

// TailSize is how many bytes a file written in tail order ends with that
// belong at its start: the table directory.
const TailSize = headerSize

// NewTailWriter writes a CDB file to w in tail order, for a writer that
// cannot seek, such as an HTTP answer: first the file from offset TailSize
// on, then its first TailSize bytes, which only Close knows. Moving the
// last TailSize bytes of what w got to its front gives the file NewWriter
// would have written.
func NewTailWriter(w io.Writer) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, 64<<10), pos: headerSize, limit: MaxSize}
}

// Put appends a record. It returns ErrZeroHash for a key whose hash is 0
// and ErrTooLarge if the record and its hash table slots would take the
// file to 4 GiB; in both cases nothing is written and the Writer stays
// usable. Any other error comes from the underlying writer and is final.
func (w *Writer) Put(key, value []byte) error {
	if w.err != nil {
		return w.err
	}
	h := Hash(key)
	if h == 0 {
		return fmt.Errorf("put key %.64q: %w", key, ErrZeroHash)
	}
	end := w.pos + 8 + uint64(len(key)) + uint64(len(value))
	// Every record later costs two 8-byte slots in the hash tables, so
	// checking here means Close can never overflow.
	if end+16*uint64(len(w.slots)+1) > w.limit {
		return fmt.Errorf("put %d-byte record at offset %d: %w", end-w.pos, w.pos, ErrTooLarge)
	}
	// The record header lives in the Writer: a local array would escape
	// through bufio and cost an allocation per record.
	binary.LittleEndian.PutUint32(w.hdr[0:], uint32(len(key)))
	binary.LittleEndian.PutUint32(w.hdr[4:], uint32(len(value)))
	if err := w.write(w.hdr[:], key, value); err != nil {
		return err
	}
	w.slots = append(w.slots, slot{hash: h, off: uint32(w.pos)})
	w.pos = end
	return nil
}

// Close writes the hash tables and the header. It does not close the
// underlying writer, and leaves its position at the end of the file (in
// tail order, after the header).
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if err := w.finish(); err != nil {
		return err
	}
	w.err = ErrClosed
	return nil
}

func (w *Writer) finish() error {
	// Group the slots by table with a counting sort. It is stable, so
	// duplicate keys are probed in the order they were put.
	var start [257]int
	for _, s := range w.slots {
		start[s.hash&0xff+1]++
	}
	for t := 1; t <= 256; t++ {
		start[t] += start[t-1]
	}
	sorted := make([]slot, len(w.slots))
	next := start
	for _, s := range w.slots {
		t := s.hash & 0xff
		sorted[next[t]] = s
		next[t]++
	}
	w.slots = nil

	var header [headerSize]byte
	var table []slot
	var buf []byte
	pos := w.pos
	for t := range 256 {
		entries := sorted[start[t]:start[t+1]]
		n := uint32(2 * len(entries))
		binary.LittleEndian.PutUint32(header[t*8:], uint32(pos))
		binary.LittleEndian.PutUint32(header[t*8+4:], n)
		if n == 0 {
			continue
		}
		table = append(table[:0], make([]slot, n)...)
		for _, s := range entries {
			i := (s.hash >> 8) % n
			for table[i].off != 0 { // records start after the header, so 0 means free
				if i++; i == n {
					i = 0
				}
			}
			table[i] = s
		}
		buf = buf[:0]
		for _, s := range table {
			buf = binary.LittleEndian.AppendUint32(buf, s.hash)
			buf = binary.LittleEndian.AppendUint32(buf, s.off)
		}
		if err := w.write(buf); err != nil {
			return err
		}
		pos += 8 * uint64(n)
	}
	return w.putHeader(&header, pos)
}

// putHeader writes the header at the start of the file, or in tail order
// after everything else, and leaves the position at the end, end bytes
// from the start.
func (w *Writer) putHeader(header *[headerSize]byte, end uint64) error {
	if w.w == nil { // tail order: the header comes last
		if err := w.write(header[:]); err != nil {
			return err
		}
		if err := w.bw.Flush(); err != nil {
			return w.fail(err)
		}
		return nil
	}
	if err := w.bw.Flush(); err != nil {
		return w.fail(err)
	}
	if _, err := w.w.Seek(w.base, io.SeekStart); err != nil {
		return w.fail(err)
	}
	if _, err := w.w.Write(header[:]); err != nil {
		return w.fail(err)
	}
	if _, err := w.w.Seek(w.base+int64(end), io.SeekStart); err != nil {
		return w.fail(err)
	}
	return nil
}

func (w *Writer) write(bufs ...[]byte) error {
	for _, b := range bufs {
		if _, err := w.bw.Write(b); err != nil {
			return w.fail(err)
		}
	}
	return nil
}

// fail records err as the Writer's final error: after a failed write the
// file is in an unknown state.
func (w *Writer) fail(err error) error {
	w.err = fmt.Errorf("cdb: write: %w", err)
	return w.err
}
