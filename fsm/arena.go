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
	rec, err := r.readInto(nil)
	if err != nil {
		return nil, err
	}
	p := new(Paste)
	readRecord(rec, p)
	return p, nil
}

// readInto reads r's record into buf, grown as need be, and checks it.
func (r ref) readInto(buf []byte) ([]byte, error) {
	rec, err := r.s.readInto(buf, int64(r.off), r.n)
	if err == nil {
		err = checkRecord(rec)
	}
	if err != nil {
		return rec, fmt.Errorf("paste at %d of segment %s: %w", r.off, segmentName(r.s.id), err)
	}
	return rec, nil
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
	// compacting is the segment being compacted, up to cursor.
	compacting *segment
	cursor     int64
	// dropped are segments nothing indexes any more, whose files go once
	// no snapshot is being persisted (FSM.dropSegments).
	dropped []*segment
	buf     []byte // builds a record
}

func newArena(segs *segments) *arena {
	return &arena{segs: segs, all: make(map[uint64]*segment)}
}

// put stores p's record, written by the apply of the log entry at index,
// and returns where.
func (a *arena) put(p *Paste, index uint64) (ref, error) {
	if n := recordLen(p); n > maxRecord {
		return ref{}, fmt.Errorf("a paste record of %d bytes", n)
	}
	a.buf = appendRecord(a.buf[:0], p)
	return a.write(a.buf, index)
}

// write appends rec to the active segment, counted as live, for the
// state at log index index.
func (a *arena) write(rec []byte, index uint64) (ref, error) {
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
	a.cur.wrote = max(a.cur.wrote, index)
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

// free counts r's record as garbage, removed at now: its paste was
// removed, or the record moved (compaction).
func (a *arena) free(r ref, now int64, removed bool) {
	r.s.live -= int64(r.n)
	if r.s.freed == 0 {
		r.s.freed = max(now, 1)
	}
	if removed {
		r.s.created = r.s.wrote
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
	a.cur, a.sparse, a.compacting = nil, nil, nil
}

// waiting returns how many segments wait for compaction, the one under
// way included.
func (a *arena) waiting() int {
	n := len(a.sparse)
	if a.compacting != nil {
		n++
	}
	return n
}

// compactNext returns the segment under compaction and where its next
// step starts, taking the next in line when none is, and nil when none
// waits. A segment with nothing left to move is dropped on the way.
func (a *arena) compactNext() (*segment, int64) {
	for {
		s := a.compacting
		if s == nil {
			if len(a.sparse) == 0 {
				return nil, 0
			}
			s, a.sparse = a.sparse[0], a.sparse[1:]
			a.compacting, a.cursor = s, 0
		}
		if s.live > 0 && a.cursor < s.size {
			return s, a.cursor
		}
		a.drop(s)
		a.compacting = nil
	}
}

// compactBudget is how many bytes of a segment's records a step of
// compaction (FSM.Compact) reads: what the step appends under the
// writer's lock is at most that.
const compactBudget = 1 << 20

// records calls fn for each whole record of the sealed segment s that
// starts in [off, off+budget), removed ones included, with its offset,
// and returns the offset after the last: where the next step starts. A
// record longer than the budget is read whole when it comes first.
func (s *segment) records(off, budget int64, fn func(off int64, rec []byte) error) (int64, error) {
	n := min(budget, s.size-off)
	if n < rHeader {
		n = min(rHeader, s.size-off)
	}
	b, err := s.read(off, uint32(n))
	if err != nil {
		return off, err
	}
	at := 0
	for at+rHeader <= len(b) {
		size := int(binary.LittleEndian.Uint32(b[at+rLen:]))
		if size < rHeader || off+int64(at)+int64(size) > s.size {
			return off, fmt.Errorf("segment %s: a record of %d bytes at %d", segmentName(s.id), size, off+int64(at))
		}
		rec := b[at:min(at+size, len(b))]
		if len(rec) < size {
			if at > 0 {
				break // the next step reads it
			}
			if rec, err = s.read(off, uint32(size)); err != nil {
				return off, err
			}
		}
		if err := fn(off+int64(at), rec[:size:size]); err != nil {
			return off, err
		}
		at += size
	}
	if at == 0 {
		return off, fmt.Errorf("segment %s: a record cut short at %d", segmentName(s.id), off)
	}
	return off + int64(at), nil
}
