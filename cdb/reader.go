package cdb

import (
	"bytes"
	"fmt"
	"math"
	"os"
)

// Reader looks keys up in a CDB file held in memory, usually a read-only
// memory mapping made by Open. Lookups are safe for concurrent use; Close
// must not run concurrently with them.
//
// Every offset and length read from the file is checked before use, so a
// truncated or corrupt file gives an error wrapping ErrCorrupt, never a
// panic or a read outside the data.
type Reader struct {
	data   []byte
	tables [256]table
	end    uint64             // end of the record area: the first hash table
	unmap  func([]byte) error // releases data; nil when the caller owns it
	info   os.FileInfo        // of the file mapped; nil for bytes in memory
}

// table locates one of the 256 hash tables.
type table struct{ off, slots uint32 }

// Open maps the CDB file at path read-only and returns a Reader over it.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cdb: %w", err)
	}
	// The mapping stays valid after the file is closed.
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cdb: %w", err)
	}
	size := fi.Size()
	if size < headerSize {
		return nil, fmt.Errorf("%s is %d bytes, shorter than the header: %w", path, size, ErrCorrupt)
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("%s is %d bytes: %w", path, size, ErrTooLarge)
	}
	data, unmap, err := mapFile(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("cdb: map %s: %w", path, err)
	}
	release := func() {
		if unmap != nil {
			unmap(data)
		}
	}
	defer releaseOnPanic(release)
	r, err := NewReader(data)
	if err != nil {
		release()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.unmap, r.info = unmap, fi
	return r, nil
}

// releaseOnPanic, deferred, runs release if the function that deferred it
// panics, and lets the panic go on. A file cut short after it was mapped
// faults on the first read beyond its new end; where the caller turned
// such faults into panics (debug.SetPanicOnFault), as the mirror does,
// the mapping is released before the panic reaches it.
func releaseOnPanic(release func()) {
	if e := recover(); e != nil {
		release()
		panic(e)
	}
}

// Info describes the file that Open mapped, as it was when mapped: nil
// for a Reader over bytes in memory.
func (r *Reader) Info() os.FileInfo { return r.info }

// NewReader returns a Reader over a complete CDB file held in b. The
// Reader keeps b, and the slices it returns point into it; b must not be
// modified while they are in use.
func NewReader(b []byte) (*Reader, error) {
	if len(b) < headerSize {
		return nil, fmt.Errorf("file is %d bytes, shorter than the header: %w", len(b), ErrCorrupt)
	}
	r := &Reader{data: b, end: uint64(len(b))}
	for t := range r.tables {
		off, slots := u32(b[t*8:]), u32(b[t*8+4:])
		if slots > 0 && (off < headerSize || uint64(off)+8*uint64(slots) > uint64(len(b))) {
			return nil, fmt.Errorf("hash table %d (%d slots at offset %d) is outside the %d-byte file: %w",
				t, slots, off, len(b), ErrCorrupt)
		}
		r.tables[t] = table{off: off, slots: slots}
		// Records end where the hash tables begin. Writers place the
		// tables in order, but taking the minimum tolerates any order.
		if slots > 0 {
			r.end = min(r.end, uint64(off))
		}
	}
	return r, nil
}

// Close releases the memory mapping made by Open. Slices returned by Get
// and ForEach must not be used after Close.
func (r *Reader) Close() error {
	if r.data == nil {
		return ErrClosed
	}
	data := r.data
	r.data = nil
	if r.unmap != nil {
		if err := r.unmap(data); err != nil {
			return fmt.Errorf("cdb: unmap: %w", err)
		}
	}
	return nil
}

// Get returns the value of the first record with the given key. The value
// points into the file's memory: it is valid until Close and must not be
// modified (a mapped file is read-only, and writing to it crashes).
func (r *Reader) Get(key []byte) (value []byte, found bool, err error) {
	if r.data == nil {
		return nil, false, ErrClosed
	}
	h := Hash(key)
	t := r.tables[h&0xff]
	if t.slots == 0 {
		return nil, false, nil
	}
	i := (h >> 8) % t.slots
	// At most one full turn around the table, even if no slot is free.
	for range t.slots {
		p := int(t.off) + 8*int(i)
		sh, off := u32(r.data[p:]), u32(r.data[p+4:])
		if off == 0 {
			break
		}
		if sh == h {
			k, v, _, err := r.record(uint64(off), uint64(len(r.data)))
			if err != nil {
				return nil, false, fmt.Errorf("slot %d of hash table %d: %w", i, h&0xff, err)
			}
			if bytes.Equal(k, key) {
				return v, true, nil
			}
		}
		if i++; i == t.slots {
			i = 0
		}
	}
	return nil, false, nil
}

// ForEach calls fn for every record, in file order, and stops at the first
// error, which it returns. The slices passed to fn point into the file's
// memory, as with Get.
func (r *Reader) ForEach(fn func(key, value []byte) error) error {
	if r.data == nil {
		return ErrClosed
	}
	for p := uint64(headerSize); p < r.end; {
		k, v, next, err := r.record(p, r.end)
		if err != nil {
			return err
		}
		if err := fn(k, v); err != nil {
			return err
		}
		p = next
	}
	return nil
}

// record decodes the record at offset p, which must end by limit, and
// returns its key, its value and the offset just after it. The slices have
// no spare capacity, so appending to them copies.
func (r *Reader) record(p, limit uint64) (key, value []byte, next uint64, err error) {
	if p < headerSize || p+8 > limit {
		return nil, nil, 0, fmt.Errorf("record at offset %d is outside the data: %w", p, ErrCorrupt)
	}
	ks := p + 8
	ke := ks + uint64(u32(r.data[p:]))
	ve := ke + uint64(u32(r.data[p+4:]))
	if ve > limit {
		return nil, nil, 0, fmt.Errorf("record at offset %d runs %d bytes past the data: %w", p, ve-limit, ErrCorrupt)
	}
	return r.data[ks:ke:ke], r.data[ke:ve:ve], ve, nil
}
