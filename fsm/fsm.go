package fsm

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

const (
	// ConsumeGrace is how long a consumed burn paste's content stays with its
	// tombstone, so that a retry of the same consume (same request id, after
	// a lost answer) still gets the content instead of a 404.
	ConsumeGrace = time.Minute
	// TombstoneTTL is how long the ids of deleted, burned and expired pastes
	// stay reserved, so that retried requests are recognised.
	TombstoneTTL = 10 * time.Minute
)

// Tombstone remembers a paste that is gone.
type Tombstone struct {
	RequestID string `msgpack:"r,omitempty"` // of the command that removed it
	At        int64  `msgpack:"at"`          // Unix nanoseconds
	// Paste keeps a consumed burn paste, content included, for ConsumeGrace.
	// The first Expire after the grace drops it, and snapshots never hold it.
	Paste *Paste `msgpack:"p,omitempty"`
	// CreatedBy is the request id of the create, so a retried create after
	// the paste is already gone still succeeds.
	CreatedBy string `msgpack:"cb,omitempty"`
	// Index is the log index of the removal (0 in tombstones written
	// before it was recorded).
	Index uint64 `msgpack:"i,omitempty"`
}

// state is one immutable version of everything the FSM holds.
type state struct {
	arena   *arena     // the records of pastes; see arena.go
	pastes  pasteIndex // id -> record
	expiry  timeTree   // ExpiresAt and id of every paste that expires
	tombs   idTree[*Tombstone]
	tombGC  timeTree      // tombstone At and id
	graceGC timeTree      // the same keys, of tombstones that keep a Paste
	removed idTree[int64] // node id -> when it was removed
	cluster string        // the cluster's id; "" until TypeInitCluster
	admin   []byte        // HashToken of the cluster's admin token
	clock   int64         // the largest Command.Now applied
	index   uint64        // the last log index applied
	removal uint64        // the last log index that removed a paste
	count   int64
	bytes   int64
}

func emptyState(segs *segments) *state {
	return &state{
		arena:   newArena(segs),
		pastes:  newPasteIndex(),
		expiry:  newTimeTree(),
		tombs:   newIDTree[*Tombstone](),
		tombGC:  newTimeTree(),
		graceGC: newTimeTree(),
		removed: newIDTree[int64](),
	}
}

// FSM implements raft.BatchingFSM over the paste store.
type FSM struct {
	cur atomic.Pointer[state]
	mu  sync.Mutex // serialises writers: ApplyBatch, Restore, a step of Compact
	// compacting serialises Compact, which reads without mu.
	compacting sync.Mutex

	nmu     sync.Mutex
	changed chan struct{} // closed and replaced after every apply

	appliedBytes atomic.Int64
	// sinceSnapshot counts the commands applied since the last snapshot
	// Raft took or restored, those inside a batch entry one by one.
	sinceSnapshot atomic.Int64
	log           *slog.Logger
	peerProto     atomic.Pointer[func() int] // see SetPeerProtocol

	segs *segments
	// persisting counts the snapshots being persisted: while one is, no
	// segment file leaves the directory, since Persist links them.
	persisting atomic.Int32
}

var _ raft.BatchingFSM = (*FSM)(nil)

// New returns an empty FSM that keeps its segments in memory and logs
// nowhere.
func New() *FSM { return NewLogged(nil) }

// NewLogged returns an empty FSM that keeps its segments in memory and
// logs to log (nil: nowhere).
func NewLogged(log *slog.Logger) *FSM { return newFSM(&segments{}, log) }

// Open returns an empty FSM that keeps its segments in dir, which it
// creates if need be. Segment files already there belong to no state:
// Load or Restore replaces them.
func Open(dir string, log *slog.Logger) (*FSM, error) {
	segs, err := openSegments(dir)
	if err != nil {
		return nil, err
	}
	return newFSM(segs, log), nil
}

func newFSM(segs *segments, log *slog.Logger) *FSM {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &FSM{changed: make(chan struct{}), log: log, segs: segs}
	f.cur.Store(emptyState(segs))
	return f
}

// HashToken returns the hash under which a delete token is stored.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// Apply applies one log entry. An entry it cannot decode changes nothing and
// gives a Result whose Err wraps ErrBadCommand, the same on every node, so
// the nodes stay identical and none of them stops on it.
func (f *FSM) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies committed entries in order and returns one *Result per
// entry (nil for configuration entries).
func (f *FSM) ApplyBatch(logs []*raft.Log) []interface{} {
	f.mu.Lock()
	defer f.mu.Unlock()

	old := f.cur.Load()
	tx := newTxn(old)
	out := make([]interface{}, len(logs))
	for i, l := range logs {
		tx.index = l.Index
		if l.Type != raft.LogCommand {
			continue
		}
		f.appliedBytes.Add(int64(len(l.Data)))
		c, err := Decode(l.Data)
		if err != nil {
			f.log.Error("skipping a log entry that is not a valid command", "index", l.Index, "bytes", len(l.Data), "err", err)
			out[i] = &Result{Err: err}
			continue
		}
		out[i] = tx.apply(c)
		f.sinceSnapshot.Add(int64(max(1, len(c.Batch))))
	}
	f.commit(tx)
	return out
}

// commit writes what tx appended to its segments and publishes its state.
// A write that fails stops the node: the applies happened, on every node,
// and this one must not go on without them.
func (f *FSM) commit(tx *txn) {
	if err := tx.arena.flush(); err != nil {
		panic(fmt.Sprintf("fsm: %v", err))
	}
	f.publish(tx.commit())
	f.dropSegments()
}

func (f *FSM) publish(s *state) {
	f.cur.Store(s)
	f.nmu.Lock()
	close(f.changed)
	f.changed = make(chan struct{})
	f.nmu.Unlock()
}

// Get returns the paste id if it exists and has not expired at now. The
// Paste is the caller's, copied from its record; its strings
// and slices share one buffer, whose bytes callers must not modify.
func (f *FSM) Get(id string, now time.Time) (*Paste, bool) {
	it, ok := f.cur.Load().pastes.get(id)
	if !ok || it.expires != 0 && it.expires <= now.UnixNano() {
		return nil, false
	}
	return f.read(it)
}

// read reads the paste it indexes.
func (f *FSM) read(it pasteItem) (*Paste, bool) {
	p, err := it.r.paste()
	if err != nil {
		// The index names a record its segment does not hold: the data
		// dir was damaged under the node. Say so, and answer as if the
		// paste were not here rather than with wrong bytes.
		f.log.Error("cannot read a paste", "id", it.id, "err", err)
		return nil, false
	}
	return p, true
}

// Stats returns the number of live pastes and their total content bytes.
func (f *FSM) Stats() (count, bytes int64) {
	s := f.cur.Load()
	return s.count, s.bytes
}

// Index returns the last log index applied.
func (f *FSM) Index() uint64 { return f.cur.Load().index }

// LastRemoval returns the log index of the last entry applied that removed
// a paste (a delete, a consume of a burn paste, an expiry), or, after a
// snapshot was restored, the snapshot's index. The read leases use it: a
// node that has applied this far has applied every removal this node knows.
func (f *FSM) LastRemoval() uint64 { return f.cur.Load().removal }

// Changed returns a channel that is closed at the next apply or restore.
func (f *FSM) Changed() <-chan struct{} {
	f.nmu.Lock()
	defer f.nmu.Unlock()
	return f.changed
}

// Gone reports whether paste id was removed (deleted, burned or expired)
// within the last TombstoneTTL, a miss that a removal caused, and the log
// index of that removal (LastRemoval for a tombstone that does not know).
func (f *FSM) Gone(id string) (index uint64, ok bool) {
	st := f.cur.Load()
	ts, ok := st.tombs.get(id)
	if !ok {
		return 0, false
	}
	if ts.Index == 0 {
		return st.removal, true
	}
	return ts.Index, true
}

// Removed reports whether an operator removed node id from the cluster.
func (f *FSM) Removed(id string) bool {
	_, ok := f.cur.Load().removed.get(id)
	return ok
}

// WaitIndex blocks until the FSM has applied index, or ctx ends.
func (f *FSM) WaitIndex(ctx context.Context, index uint64) error {
	for {
		f.nmu.Lock()
		ch := f.changed
		f.nmu.Unlock()
		if f.cur.Load().index >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for index %d: %w", index, ctx.Err())
		}
	}
}

// View is a consistent, immutable view of the store at one log index.
type View struct{ s *state }

// View returns the current state. Later applies do not change it.
func (f *FSM) View() View { return View{f.cur.Load()} }

// Index returns the log index the view was taken at.
func (v View) Index() uint64 { return v.s.index }

// Len returns the number of pastes in the view.
func (v View) Len() int { return v.s.pastes.len() }

// Walk calls fn for every paste in id order until fn returns false, or a
// paste cannot be read, which it returns. Each paste is fn's to keep.
func (v View) Walk(fn func(p *Paste) bool) error {
	var err error
	v.s.pastes.ascend(func(_ string, it pasteItem) bool {
		var p *Paste
		if p, err = it.r.paste(); err != nil {
			return false
		}
		return fn(p)
	})
	return err
}

// paste returns the stored paste id, in a Paste of its own. The writer
// reads records it must be able to read: one it cannot means the data dir
// was damaged under the node, and applying on without it would part this
// node's state from the others'.
func (s *state) paste(id string) (*Paste, bool) {
	it, ok := s.pastes.get(id)
	if !ok {
		return nil, false
	}
	p, err := it.r.paste()
	if err != nil {
		panic(fmt.Sprintf("fsm: %v", err))
	}
	return p, true
}

// txn builds the next state from the current one. Its trees are clones:
// the state it started from stays unchanged for its readers.
type txn struct {
	state
}

func newTxn(s *state) *txn {
	t := &txn{*s}
	t.pastes = s.pastes.clone()
	t.expiry = s.expiry.clone()
	t.tombs = s.tombs.clone()
	t.tombGC = s.tombGC.clone()
	t.graceGC = s.graceGC.clone()
	t.removed = s.removed.clone()
	return t
}

// commit returns the state built. The txn must not be used afterwards:
// the state shares its trees.
func (t *txn) commit() *state {
	s := t.state
	return &s
}

func (t *txn) apply(c *Command) *Result {
	t.clock = max(t.clock, c.Now)
	switch c.Type {
	case TypeCreate:
		return t.create(c)
	case TypeDelete:
		return t.delete(c)
	case TypeConsume:
		return t.consume(c)
	case TypeExpire:
		t.expire(c.Now)
		return &Result{}
	case TypeRemoveNode:
		t.removed.set(c.ID, c.Now)
		return &Result{}
	case TypeAllowNode:
		t.removed.delete(c.ID)
		return &Result{}
	case TypeInitCluster:
		if t.cluster == "" {
			t.cluster, t.admin = c.ID, c.TokenHash
		}
		return &Result{}
	case TypeAdminToken:
		t.admin = c.TokenHash
		return &Result{}
	case TypeBatch:
		return t.batch(c)
	}
	// Decode refuses unknown types; this is a type it knows but no case
	// handles, which every node of this version treats the same.
	return &Result{Err: fmt.Errorf("%w: unhandled %s", ErrBadCommand, c.Type)}
}

// batch applies the commands of a TypeBatch entry in order. One that does
// not decode, or is a batch itself, fails alone, the same on every node.
func (t *txn) batch(c *Command) *Result {
	out := make([]*Result, len(c.Batch))
	for i, b := range c.Batch {
		sub, err := Decode(b)
		if err == nil && sub.Type == TypeBatch {
			err = fmt.Errorf("%w: a batch inside a batch", ErrBadCommand)
		}
		if err != nil {
			out[i] = &Result{Err: err}
			continue
		}
		out[i] = t.apply(sub)
	}
	return &Result{Batch: out}
}

func (t *txn) create(c *Command) *Result {
	p := c.Paste
	if ts, ok := t.tombs.get(p.ID); ok {
		if c.RequestID != "" && ts.CreatedBy == c.RequestID {
			return &Result{Paste: p}
		}
		return &Result{Err: ErrExists}
	}
	if p.RequestID == "" {
		p.RequestID = c.RequestID
	}
	if prev, taken := t.pastes.get(p.ID); taken {
		old, _ := prev.r.paste()
		if old != nil && c.RequestID != "" && old.RequestID == c.RequestID {
			return &Result{Paste: old}
		}
		return &Result{Err: ErrExists}
	}
	t.add(p)
	return &Result{Paste: p}
}

// add stores p, whose id must be free. A record that cannot be written
// stops the node: the others wrote it, and this node must not go on
// without it. The storage guard keeps creates from filling the disk.
func (t *txn) add(p *Paste) {
	r, err := t.arena.put(p, t.index)
	if err != nil {
		panic(fmt.Sprintf("fsm: store paste %s: %v", p.ID, err))
	}
	p.Text = t.arena.buf[rFlags]&flagText != 0
	t.pastes.set(newItem(p.ID, r, p.ExpiresAt))
	if p.ExpiresAt != 0 {
		t.expiry.insert(newTimeKey(p.ExpiresAt, p.ID))
	}
	t.count++
	t.bytes += int64(len(p.Content))
}

// move copies rec, the record at off of the segment s under compaction, to
// the active segment, unless its paste was removed.
func (t *txn) move(s *segment, off int64, rec []byte) {
	id := str(rec[rHeader : rHeader+binary.LittleEndian.Uint32(rec[rLens+4*fieldID:])])
	it, ok := t.pastes.get(id)
	if !ok || it.r.s != s || int64(it.r.off) != off {
		return // removed
	}
	moved, err := t.arena.write(rec, t.index)
	if err != nil {
		panic(fmt.Sprintf("fsm: compact: %v", err))
	}
	t.arena.free(it.r, t.clock, false)
	it.r = moved
	t.pastes.set(it)
}

// addTomb stores a tombstone, without a paste, under id.
func (t *txn) addTomb(id string, ts *Tombstone) {
	t.tombs.set(id, ts.withoutPaste())
	t.tombGC.insert(newTimeKey(ts.At, id))
}

func (t *txn) delete(c *Command) *Result {
	p, ok := t.paste(c.ID)
	if !ok {
		if ts, ok := t.tombs.get(c.ID); ok && c.RequestID != "" && ts.RequestID == c.RequestID {
			return &Result{} // a retry of the delete that made the tombstone
		}
		return &Result{Err: ErrNotFound}
	}
	if p.Expired(c.Now) {
		return &Result{Err: ErrNotFound}
	}
	if !c.Admin && subtle.ConstantTimeCompare(p.TokenHash, c.TokenHash) != 1 {
		return &Result{Err: ErrForbidden}
	}
	t.remove(p, &Tombstone{RequestID: c.RequestID, At: c.Now})
	return &Result{}
}

func (t *txn) consume(c *Command) *Result {
	p, ok := t.paste(c.ID)
	if !ok {
		ts, ok := t.tombs.get(c.ID)
		if ok && ts.Paste != nil && c.RequestID != "" && ts.RequestID == c.RequestID &&
			c.Now <= ts.At+int64(ConsumeGrace) {
			return &Result{Paste: ts.Paste}
		}
		return &Result{Err: ErrNotFound}
	}
	if p.Expired(c.Now) {
		return &Result{Err: ErrNotFound}
	}
	if !p.Burn {
		return &Result{Paste: p}
	}
	t.remove(p, &Tombstone{RequestID: c.RequestID, At: c.Now, Paste: p})
	return &Result{Paste: p}
}

// expire deletes every paste due at or before now, the content of every
// consumed burn paste past ConsumeGrace, and every tombstone older than
// TombstoneTTL. It touches only what is due.
func (t *txn) expire(now int64) {
	for _, k := range t.graceGC.due(now - int64(ConsumeGrace)) {
		t.graceGC.delete(k)
		if ts, ok := t.tombs.get(k.id); ok && ts.Paste != nil && ts.At == k.at {
			t.tombs.set(k.id, ts.withoutPaste())
		}
	}
	for _, k := range t.expiry.due(now) {
		t.expiry.delete(k)
		if p, ok := t.paste(k.id); ok {
			t.remove(p, &Tombstone{At: now})
		}
	}
	for _, k := range t.tombGC.due(now - int64(TombstoneTTL)) {
		t.tombGC.delete(k)
		// A newer tombstone for the same id has its own GC key; keep it.
		if ts, ok := t.tombs.get(k.id); ok && ts.At == k.at {
			t.tombs.delete(k.id)
		}
	}
}

// remove drops p and leaves ts in its place.
func (t *txn) remove(p *Paste, ts *Tombstone) {
	if it, ok := t.pastes.delete(p.ID); ok {
		t.arena.free(it.r, t.clock, true)
	}
	t.removal = t.index
	if p.ExpiresAt != 0 {
		t.expiry.delete(newTimeKey(p.ExpiresAt, p.ID))
	}
	t.count--
	t.bytes -= int64(len(p.Content))
	ts.CreatedBy = p.RequestID
	ts.Index = t.index
	if old, ok := t.tombs.get(p.ID); ok {
		t.tombGC.delete(newTimeKey(old.At, p.ID))
		t.graceGC.delete(newTimeKey(old.At, p.ID))
	}
	t.tombs.set(p.ID, ts)
	t.tombGC.insert(newTimeKey(ts.At, p.ID))
	if ts.Paste != nil {
		t.graceGC.insert(newTimeKey(ts.At, p.ID))
	}
}

// withoutPaste returns a copy of ts that no longer holds a paste.
func (ts *Tombstone) withoutPaste() *Tombstone {
	c := *ts
	c.Paste = nil
	return &c
}

// NextDue returns when the next Expire command has work to do, in Unix
// nanoseconds: the earliest paste expiry, end of a consume grace or
// tombstone collection. It returns
// 0 when nothing is due ever.
func (f *FSM) NextDue() int64 {
	s := f.cur.Load()
	var next int64
	if k, ok := s.expiry.min(); ok {
		next = k.at
	}
	for _, gc := range []struct {
		tree  timeTree
		after time.Duration
	}{{s.tombGC, TombstoneTTL}, {s.graceGC, ConsumeGrace}} {
		if k, ok := gc.tree.min(); ok {
			at := k.at + int64(gc.after)
			if next == 0 || at < next {
				next = at
			}
		}
	}
	return next
}

// CommandsSinceSnapshot returns how many commands were applied since Raft
// last took or restored a snapshot (or since the FSM was created): what a
// start would replay after that snapshot.
func (f *FSM) CommandsSinceSnapshot() int64 { return f.sinceSnapshot.Load() }

// AppliedBytes returns the total size of the command entries applied since
// the FSM was created. The node snapshots when it grows by too much.
func (f *FSM) AppliedBytes() int64 { return f.appliedBytes.Load() }
