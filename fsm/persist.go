package fsm

import (
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"
)

// OpenDir moves an FSM made by New or NewLogged, before anything was
// applied to it, into dir, as Open would have made it.
func (f *FSM) OpenDir(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.cur.Load(); s.index != 0 || len(s.arena.all) > 0 {
		return fmt.Errorf("open %s: the FSM holds state already", dir)
	}
	segs, err := openSegments(dir)
	if err != nil {
		return err
	}
	f.segs = segs
	f.cur.Store(emptyState(segs))
	return nil
}

// Compact takes a step of compaction, if a segment waits for it, and
// reports whether more wait: it reads compactBudget bytes of the segment's
// records beside the writers, since a sealed segment never changes, then
// takes the writer's lock to append those still indexed to the active
// segment and point the index at them, as an apply appends new pastes.
// Applies never compact; the node calls Compact at the pace it chooses.
// It changes where records are, not what the store holds: the nodes need
// not agree on it.
func (f *FSM) Compact() (more bool) {
	f.compacting.Lock()
	defer f.compacting.Unlock()
	f.mu.Lock()
	a := f.cur.Load().arena
	s, from := a.compactNext()
	f.dropSegments()
	f.mu.Unlock()
	if s == nil {
		return false
	}
	type record struct {
		off int64
		rec []byte
	}
	var recs []record
	next, err := s.records(from, compactBudget, func(off int64, rec []byte) error {
		recs = append(recs, record{off, rec})
		return nil
	})

	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.cur.Load()
	if a = old.arena; a.compacting != s || a.cursor != from {
		return a.waiting() > 0 // a restore replaced the state meanwhile
	}
	if err != nil {
		panic(fmt.Sprintf("fsm: compact: %v", err))
	}
	tx := newTxn(old)
	for _, r := range recs {
		tx.move(s, r.off, r.rec)
	}
	if a.cursor = next; next >= s.size {
		a.drop(s)
		a.compacting = nil
	}
	f.commit(tx)
	return a.waiting() > 0
}

// Purge queues for compaction every segment that holds a record removed
// at or before the time before (Unix nanoseconds, as Command.Now),
// however little of it is garbage, sealing the active segment if need be;
// then it takes a step of compaction, as Compact does. Once it reports
// neither Found nor More and a snapshot was taken after it, the content
// of the pastes removed by then is in no file of the FSM's directory or
// its snapshots'; the Raft log is the node's to cut (Purged.Created).
// Compaction alone leaves a segment until half of it is garbage.
func (f *FSM) Purge(before int64) (p Purged) {
	f.mu.Lock()
	a := f.cur.Load().arena
	for _, s := range a.all {
		if s.freed == 0 || s.freed > before {
			continue
		}
		p.Found = true
		p.Created = max(p.Created, s.created)
		if s == a.cur {
			if err := a.seal(); err != nil {
				panic(fmt.Sprintf("fsm: %v", err))
			}
		}
		if !s.queued {
			s.queued = true
			a.sparse = append(a.sparse, s)
		}
	}
	f.mu.Unlock()
	p.More = f.Compact()
	return p
}

// Purged is what a call of Purge found.
type Purged struct {
	Found bool // a segment holding a record removed by then
	More  bool // compaction waits still: call Purge again
	// Created is a log index no earlier than the entries that created
	// the removed pastes: the last that wrote to their segments before
	// the removal (segment.created). The Raft log holds their content
	// until it holds no entry up to it.
	Created uint64
}

// dropSegments removes the files of the segments nothing indexes any more,
// unless a snapshot is being persisted, which may link them yet: then
// the next apply after it does. Only the writer calls it.
func (f *FSM) dropSegments() {
	a := f.cur.Load().arena
	if len(a.dropped) == 0 || f.persisting.Load() > 0 {
		return
	}
	for _, s := range a.dropped {
		f.segs.remove(s)
	}
	a.dropped = nil
}

// Compacting returns how many segments wait for compaction.
func (f *FSM) Compacting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur.Load().arena.waiting()
}

// Snapshot captures the current state. It copies nothing: the state is
// immutable, so Persist can write it while applies go on. It seals the
// active segment, so that every segment the snapshot refers to is one
// that never changes again.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.sinceSnapshot.Store(0)
	return f.capture(), nil
}

func (f *FSM) capture() *snapshot {
	v := byte(snapshotSegments)
	if fn := f.peerProto.Load(); fn != nil {
		switch proto := (*fn)(); {
		case proto < s2Protocol:
			v = snapshotGzip
		case proto < segmentsProtocol:
			v = snapshotS2
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.cur.Load()
	if err := s.arena.seal(); err != nil {
		panic(fmt.Sprintf("fsm: %v", err))
	}
	f.persisting.Add(1)
	return &snapshot{s: s, version: v, done: func() { f.persisting.Add(-1) }}
}

// SetPeerProtocol tells the FSM how to learn the lowest protocol among the
// cluster's members, so that it writes snapshots they can all read. Until
// it is set, the FSM writes its newest snapshot version.
func (f *FSM) SetPeerProtocol(fn func() int) { f.peerProto.Store(&fn) }

// Restore replaces the whole state with a snapshot. It builds the new state
// aside, in new segments, and swaps it in only once the snapshot was read
// completely, so a failed restore leaves the old state untouched.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	start := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	s, err := readSnapshot(rc, f.segs)
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	f.replace(s)
	f.log.Info("restored snapshot", "index", s.index, "pastes", s.count, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// replace makes s the state, as a restore does, and lets go of the
// segments of the state it replaces. The caller holds f.mu.
func (f *FSM) replace(s *state) {
	old := f.cur.Load().arena
	old.dropAll()
	s.arena.dropped = append(s.arena.dropped, old.dropped...)
	old.dropped = nil
	f.publish(s)
	f.sinceSnapshot.Store(0)
	if f.persisting.Load() == 0 {
		// Whatever else the directory holds, a crash left.
		f.segs.clean(s.arena.all)
		s.arena.dropped = nil
	}
	f.dropSegments()
}
