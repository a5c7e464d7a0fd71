package fsm

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// The store keeps every paste in memory, and the garbage collector marks
// whatever the heap holds at every collection. A paste of its own struct,
// strings and buffers is a dozen pointers to follow, and a node serving
// reads collects several times a second. So the pastes live as records in
// large byte slabs, which hold no pointers and are marked in one step
// each, and the index holds, per paste, where the record is and the first
// bytes of its id (tree.go): marking the store then costs a small part of
// what it did. Get and Walk hand out a Paste whose fields point into the
// record.
//
// A record is the paste's fields in a fixed order, written once and never
// changed: the state that indexes it may still be read while later states
// are built, as the B-trees' nodes are. Space that removed pastes leave
// behind is taken back by compaction: once half of a slab is garbage, the
// records still indexed move to the current slab (a few slabs per apply
// batch, and the rest by FSM.Compact while the node is idle) and the slab
// is left to the collector, which frees it once no older state and no
// Paste handed out points into it.
const (
	slabSize = 4 << 20
	// largeRecord is the size beyond which a record gets a slab of its
	// own, which it then leaves entirely when it is removed.
	largeRecord = slabSize / 4
)

// The fields of a record, in their order after the header.
const (
	fETag = iota // `"ID-created"`, in which the id is
	fLastModified
	fSize
	fExpires
	fRequestID
	fTitle
	fLang
	fTokenHash
	fContent
	nFields
)

// A record's header: created, expires, flags and three bytes of padding,
// the id's length, then the lengths of the fields, all little-endian.
const (
	hCreated    = 0
	hExpires    = 8
	hFlags      = 16
	hIDLen      = 20
	hLens       = 24
	headerBytes = hLens + 4*nFields
)

const (
	flagBurn = 1 << iota
	flagEncrypted
	flagText
)

// slab is a block of records. buf is set once, at its full size, and the
// bytes below used never change: readers of older states may be reading
// them while the writer fills the rest.
type slab struct {
	buf    []byte
	used   int  // bytes handed out; the writer's only
	live   int  // bytes of the records still indexed; the writer's only
	queued bool // waiting for compaction
}

// ref locates a record.
type ref struct {
	s   *slab
	off uint32
	n   uint32
}

func (r ref) record() []byte { return r.s.buf[r.off : r.off+r.n : r.off+r.n] }

// arena hands out room for records. Only the writer (an apply, or a
// restore building its state aside) uses it.
type arena struct {
	cur    *slab
	sparse []*slab // at least half garbage, to be compacted
	// advised are the slabs that adviseFill prepared (huge pages where
	// they pay, then populated) while a restore fills them at once, until
	// it ends (hugeSlabs); nil: slabs get no advice.
	// Not the slabs that writes fill a record at a time: a huge page may
	// cost the kernel a compaction of memory at the fault, a stall the Go
	// runtime stopped risking for the same reason (Go 1.21.1), which a
	// start can afford and an apply should not. Nor, once the restore is
	// over, whatever the heap puts where a restored slab was.
	advised [][]byte
	// ahead delivers the slab a restore fills next (restoreSlab), nil
	// when none is being prepared.
	ahead chan []byte
}

// adviseSlab is adviseFill, or what a test records instead.
var adviseSlab = adviseFill

// populateSlab makes a slab that applies fill resident when it is
// allocated (populate), or is what a test records instead. Writes fill a
// slab a record at a time, and the first write to each of its pages would
// fault: a fault per page costs more than populating the slab in one call,
// most on a virtual machine whose host backs a page at its first write,
// and every node pays it for every create. The price is that the current
// slab is resident whole from its first record: at most slabSize more.
var populateSlab = populate

// hugeSlabs has adviseFill prepare the slabs allocated from now on (huge
// pages where they pay, then every page made resident), or, with on
// false, ends that and takes back the huge page advice given: what is
// resident stays as it is.
func (a *arena) hugeSlabs(on bool) {
	if on {
		a.advised = make([][]byte, 0, 8)
		return
	}
	if a.ahead != nil {
		// The slab prepared for a next one that never came: advised too.
		a.advised = append(a.advised, <-a.ahead)
		a.ahead = nil
	}
	for _, b := range a.advised {
		adviseSlab(b, false)
	}
	a.advised = nil
}

// restoreSlab returns the next slab of a restore, prepared by adviseFill
// and written to once in every page, and starts to prepare the one after it
// on a goroutine of its own. Even populated, a page may cost the host work
// at the process's first write to it (a virtual machine's host backs it
// then), which would fall on the one goroutine that decodes the snapshot;
// so the restore fills one slab while the next is prepared on another core.
// The slab prepared last is one its records do not need: hugeSlabs(false)
// takes back its advice and drops it for the collector.
func (a *arena) restoreSlab() []byte {
	var b []byte
	if a.ahead == nil {
		a.ahead = make(chan []byte, 1)
		b = prepareSlab()
	} else {
		b = <-a.ahead
	}
	go func(ahead chan<- []byte) { ahead <- prepareSlab() }(a.ahead)
	return b
}

// prepareSlab makes a slab, advised as a restore's are (adviseSlab), and
// writes to each of its pages.
func prepareSlab() []byte {
	b := make([]byte, slabSize)
	adviseSlab(b, true)
	for i := 0; i < len(b); i += 4 << 10 {
		b[i] = 0
	}
	return b
}

// headerValues are a paste's header values, formatted once when it is
// stored, with the end of its ETag.
type headerValues struct {
	etagTail, lastModified, size, expires []byte
	buf                                   [128]byte
}

func formatHeaders(p *Paste, h *headerValues) {
	b := h.buf[:0]
	b = strconv.AppendInt(b, p.CreatedAt, 36)
	h.etagTail = b
	b = httpDate(b, p.CreatedAt)
	h.lastModified = b[len(h.etagTail):]
	n := len(b)
	b = strconv.AppendInt(b, int64(len(p.Content)), 10)
	h.size = b[n:]
	n = len(b)
	if p.ExpiresAt != 0 {
		b = httpDate(b, p.ExpiresAt)
	}
	h.expires = b[n:]
}

// fields returns p's fields in record order, formatted as h holds them;
// the ETag is built by writeRecord.
func (h *headerValues) fields(p *Paste) [nFields][]byte {
	return [nFields][]byte{
		fETag:         nil,
		fLastModified: h.lastModified,
		fSize:         h.size,
		fExpires:      h.expires,
		fRequestID:    unsafe.Slice(unsafe.StringData(p.RequestID), len(p.RequestID)),
		fTitle:        unsafe.Slice(unsafe.StringData(p.Title), len(p.Title)),
		fLang:         unsafe.Slice(unsafe.StringData(p.Lang), len(p.Lang)),
		fTokenHash:    p.TokenHash,
		fContent:      p.Content,
	}
}

func etagLen(p *Paste, h *headerValues) int { return len(p.ID) + len(h.etagTail) + 3 }

// recordLen returns the size of p's record.
func recordLen(p *Paste, h *headerValues) int {
	n := headerBytes + etagLen(p, h)
	for _, f := range h.fields(p) {
		n += len(f)
	}
	return n
}

// writeRecord writes p's record to rec, which is recordLen long.
func writeRecord(rec []byte, p *Paste, h *headerValues) {
	le := binary.LittleEndian
	le.PutUint64(rec[hCreated:], uint64(p.CreatedAt))
	le.PutUint64(rec[hExpires:], uint64(p.ExpiresAt))
	var flags byte
	for _, f := range []struct {
		set  bool
		flag byte
	}{{p.Burn, flagBurn}, {p.Encrypted, flagEncrypted}, {utf8.Valid(p.Content), flagText}} {
		if f.set {
			flags |= f.flag
		}
	}
	rec[hFlags] = flags
	le.PutUint32(rec[hIDLen:], uint32(len(p.ID)))
	at := headerBytes
	etag := append(append(append(append(rec[at:at], '"'), p.ID...), '-'), h.etagTail...)
	etag = append(etag, '"')
	le.PutUint32(rec[hLens+4*fETag:], uint32(len(etag)))
	at += len(etag)
	for i, f := range h.fields(p) {
		if i == fETag {
			continue
		}
		le.PutUint32(rec[hLens+4*i:], uint32(len(f)))
		at += copy(rec[at:], f)
	}
}

// readRecord sets p to the paste of rec. p's strings and slices point
// into rec, which must never change.
func readRecord(rec []byte, p *Paste) {
	le := binary.LittleEndian
	flags := rec[hFlags]
	var f [nFields][]byte
	at := headerBytes
	for i := range f {
		n := int(le.Uint32(rec[hLens+4*i:]))
		f[i] = rec[at : at+n : at+n]
		at += n
	}
	etag := str(f[fETag])
	*p = Paste{
		ID:        etag[1 : 1+le.Uint32(rec[hIDLen:])],
		Content:   f[fContent],
		Title:     str(f[fTitle]),
		Lang:      str(f[fLang]),
		CreatedAt: int64(le.Uint64(rec[hCreated:])),
		ExpiresAt: int64(le.Uint64(rec[hExpires:])),
		Burn:      flags&flagBurn != 0,
		Encrypted: flags&flagEncrypted != 0,
		TokenHash: f[fTokenHash],
		RequestID: str(f[fRequestID]),
		info: ReadInfo{Text: flags&flagText != 0, hv: [4]string{
			hvETag:         etag,
			hvLastModified: str(f[fLastModified]),
			hvSize:         str(f[fSize]),
			hvExpires:      str(f[fExpires]),
		}},
	}
}

// recordID returns the id in rec.
func recordID(rec []byte) string {
	n := binary.LittleEndian.Uint32(rec[hIDLen:])
	return unsafe.String(&rec[headerBytes+1], n)
}

// recordExpires returns the expiry in rec.
func recordExpires(rec []byte) int64 { return int64(binary.LittleEndian.Uint64(rec[hExpires:])) }

// recordContentLen returns the length of the content in rec.
func recordContentLen(rec []byte) int { return int(binary.LittleEndian.Uint32(rec[hLens+4*fContent:])) }

// maxRecordBytes bounds a record that a snapshot may hold: a paste's
// content is bounded by the command that created it, far below this.
const maxRecordBytes = 1 << 30

// checkRecord reports whether rec, which a snapshot of version 3 holds, is
// a record that writeRecord could have made, so far as the readers of a
// record rely on it: its lengths add up to its size, its ETag is the id in
// quotes with a tail, and the header values it keeps formatted are
// printable ASCII, since they are sent as they are. A snapshot's checksums
// already caught damage; this keeps a faulty writer from crashing the
// reader or reaching into the headers of an answer.
func checkRecord(rec []byte) error {
	le := binary.LittleEndian
	if len(rec) < headerBytes {
		return fmt.Errorf("a record of %d bytes, under its header", len(rec))
	}
	if rec[hFlags]&^(flagBurn|flagEncrypted|flagText) != 0 {
		return fmt.Errorf("unknown flags %#x", rec[hFlags])
	}
	var f [nFields][]byte
	at := headerBytes
	for i := range f {
		n := int(le.Uint32(rec[hLens+4*i:]))
		if n > len(rec)-at {
			return fmt.Errorf("field %d of %d bytes overruns the record of %d", i, n, len(rec))
		}
		f[i] = rec[at : at+n]
		at += n
	}
	if at != len(rec) {
		return fmt.Errorf("fields of %d bytes in a record of %d", at, len(rec))
	}
	etag, idLen := f[fETag], int(le.Uint32(rec[hIDLen:]))
	if idLen == 0 || len(etag) < idLen+3 || etag[0] != '"' || etag[1+idLen] != '-' || etag[len(etag)-1] != '"' {
		return fmt.Errorf("ETag %.80q does not hold an id of %d bytes", etag, idLen)
	}
	for _, v := range [][]byte{etag, f[fLastModified], f[fSize], f[fExpires]} {
		for _, c := range v {
			if c < ' ' || c > '~' {
				return fmt.Errorf("header value %.80q has byte %#x", v, c)
			}
		}
	}
	return nil
}

// recordSize returns the length of the record that starts rec.
func recordSize(rec []byte) int {
	n := headerBytes
	for i := range nFields {
		n += int(binary.LittleEndian.Uint32(rec[hLens+4*i:]))
	}
	return n
}

// str returns b as a string without copying; b must never change.
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// put stores p's record and returns where.
func (a *arena) put(p *Paste) ref {
	var h headerValues
	formatHeaders(p, &h)
	r := a.alloc(recordLen(p, &h))
	writeRecord(r.record(), p, &h)
	return r
}

// copy stores a copy of the record rec and returns where.
func (a *arena) copy(rec []byte) ref {
	r := a.alloc(len(rec))
	copy(r.record(), rec)
	return r
}

// alloc returns room for a record of n bytes, counted as live.
func (a *arena) alloc(n int) ref {
	room := (n + 7) &^ 7 // records start 8-byte aligned
	if n > largeRecord {
		s := &slab{buf: make([]byte, n), used: n, live: room}
		populateSlab(s.buf)
		return ref{s, 0, uint32(n)}
	}
	if a.cur == nil || len(a.cur.buf)-a.cur.used < room {
		if a.cur != nil {
			a.check(a.cur)
		}
		if a.advised != nil {
			a.cur = &slab{buf: a.restoreSlab()}
			a.advised = append(a.advised, a.cur.buf)
		} else {
			a.cur = &slab{buf: make([]byte, slabSize)}
			populateSlab(a.cur.buf)
		}
	}
	s := a.cur
	r := ref{s, uint32(s.used), uint32(n)}
	s.used += room
	s.live += room
	return r
}

// free counts r's record as garbage.
func (a *arena) free(r ref) {
	r.s.live -= (int(r.n) + 7) &^ 7
	if r.s != a.cur {
		a.check(r.s)
	}
}

// check queues s for compaction once half of it is garbage.
func (a *arena) check(s *slab) {
	if !s.queued && s.live*2 < s.used {
		s.queued = true
		a.sparse = append(a.sparse, s)
	}
}

// compactPerApply is how many slabs an apply batch compacts at most: a
// slab moves at most half its 4 MiB, so an apply copies at most 16 MiB
// however much it removed (an expiry after a long stop, say). The rest
// waits for the next applies.
const compactPerApply = 8

// takeSparse returns up to compactPerApply slabs to compact and forgets
// them.
func (a *arena) takeSparse() []*slab {
	n := min(len(a.sparse), compactPerApply)
	s := a.sparse[:n:n]
	a.sparse = a.sparse[n:]
	return s
}

// records calls fn for every record in s, removed ones included, with its
// offset.
func (s *slab) records(fn func(off int, rec []byte)) {
	for off := 0; off < s.used; {
		n := recordSize(s.buf[off:])
		fn(off, s.buf[off:off+n:off+n])
		off += (n + 7) &^ 7
	}
}

// paste returns the paste of r's record, in a Paste of its own.
func (r ref) paste() *Paste {
	p := new(Paste)
	readRecord(r.record(), p)
	return p
}
