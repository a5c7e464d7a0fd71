package fsm

import (
	"encoding/binary"
	"fmt"
)

// ref locates a record: a segment, an offset and a length. Offsets fit 32
// bits because a segment is sealed at sealSize and a record is at most
// maxRecord.
type ref struct {
	s   *segment
	off uint32
	n   uint32
}

// paste reads r's record into a Paste of its own.
func (r ref) paste() (*Paste, error) {
	rec, err := r.s.read(int64(r.off), r.n)
	if err == nil {
		err = checkRecord(rec)
	}
	if err != nil {
		return nil, fmt.Errorf("paste at %d of segment %s: %w", r.off, segmentName(r.s.id), err)
	}
	p := new(Paste)
	readRecord(rec, p)
	return p, nil
}

// arena writes records to segments and counts their garbage. Only the
// writer uses it: an apply, a restore building its state aside, or a
// compaction, each under the FSM's lock.
type arena struct {
	segs *segments
	cur  *segment // the active segment; nil until the next write
	// all holds every segment that may hold an indexed record.
	all    map[uint64]*segment
	sparse []*segment // sealed, at least half garbage, to be compacted
	// dropped are segments nothing indexes any more, whose files go once
	// no snapshot is being persisted (FSM.dropSegments).
	dropped []*segment
	buf     []byte // builds a record
}

func newArena(segs *segments) *arena {
	return &arena{segs: segs, all: make(map[uint64]*segment)}
}

// put stores p's record and returns where.
func (a *arena) put(p *Paste) (ref, error) {
	if n := recordLen(p); n > maxRecord {
		return ref{}, fmt.Errorf("a paste record of %d bytes", n)
	}
	a.buf = appendRecord(a.buf[:0], p)
	return a.write(a.buf)
}

// write appends rec to the active segment, counted as live.
func (a *arena) write(rec []byte) (ref, error) {
	if a.cur == nil || a.cur.size >= sealSize {
		if err := a.seal(); err != nil {
			return ref{}, err
		}
		s, err := a.segs.create()
		if err != nil {
			return ref{}, err
		}
		a.cur = s
		a.all[s.id] = s
	}
	off := a.cur.append(rec)
	a.cur.live += int64(len(rec))
	return ref{a.cur, uint32(off), uint32(len(rec))}, nil
}

// flush writes what the writes since the last flush collected. Everything
// a state indexes must be flushed before the state is published.
func (a *arena) flush() error {
	if a.cur == nil {
		return nil
	}
	return a.cur.flush()
}

// seal ends the active segment, flushed: the next write starts a new one.
func (a *arena) seal() error {
	s := a.cur
	if s == nil || s.size == 0 {
		return nil
	}
	if err := s.flush(); err != nil {
		return err
	}
	s.sealed = true
	a.cur = nil
	a.check(s)
	return nil
}

// free counts r's record as garbage, removed at now.
func (a *arena) free(r ref, now int64) {
	r.s.live -= int64(r.n)
	if r.s.freed == 0 {
		r.s.freed = max(now, 1)
	}
	if r.s.sealed {
		a.check(r.s)
	}
}

// check queues the sealed segment s for compaction once half of it is
// garbage.
func (a *arena) check(s *segment) {
	if !s.queued && s.live*2 < s.size {
		s.queued = true
		a.sparse = append(a.sparse, s)
	}
}

// drop forgets s, which holds no indexed record.
func (a *arena) drop(s *segment) {
	delete(a.all, s.id)
	a.dropped = append(a.dropped, s)
}

// dropAll forgets every segment, when a restore replaces the state.
func (a *arena) dropAll() {
	for _, s := range a.all {
		a.drop(s)
	}
	a.cur, a.sparse = nil, nil
}

// compactPerApply is how many segments an apply batch compacts at most,
// so an apply copies at most half a segment however much it removed (an
// expiry after a long stop, say). The rest waits for the next applies, or
// for FSM.Compact while the node is idle.
const compactPerApply = 1

// takeSparse returns up to compactPerApply segments to compact and
// forgets them.
func (a *arena) takeSparse() []*segment {
	n := min(len(a.sparse), compactPerApply)
	s := a.sparse[:n:n]
	a.sparse = a.sparse[n:]
	return s
}

// records calls fn for every record of the sealed segment s, removed ones
// included, with its offset; it reads the whole segment at once.
func (s *segment) records(fn func(off int, rec []byte) error) error {
	b, err := s.read(0, uint32(s.size))
	if err != nil {
		return err
	}
	for off := 0; off < len(b); {
		if len(b)-off < rHeader {
			return fmt.Errorf("segment %s: a record cut short at %d", segmentName(s.id), off)
		}
		n := int(binary.LittleEndian.Uint32(b[off+rLen:]))
		if n < rHeader || n > len(b)-off {
			return fmt.Errorf("segment %s: a record of %d bytes at %d", segmentName(s.id), n, off)
		}
		if err := fn(off, b[off:off+n:off+n]); err != nil {
			return err
		}
		off += n
	}
	return nil
}
