package fsm

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	iradix "github.com/hashicorp/go-immutable-radix/v2"
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
	pastes  *iradix.Tree[*Paste]
	expiry  *iradix.Tree[struct{}] // key: ExpiresAt (8 bytes big-endian) + id
	tombs   *iradix.Tree[*Tombstone]
	tombGC  *iradix.Tree[struct{}] // key: tombstone At (8 bytes) + id
	graceGC *iradix.Tree[struct{}] // the same keys, of tombstones that keep a Paste
	removed *iradix.Tree[int64]    // node id -> when it was removed
	clock   int64                  // the largest Command.Now applied
	index   uint64                 // the last log index applied
	removal uint64                 // the last log index that removed a paste
	count   int64
	bytes   int64
}

func emptyState() *state {
	return &state{
		pastes:  iradix.New[*Paste](),
		expiry:  iradix.New[struct{}](),
		tombs:   iradix.New[*Tombstone](),
		tombGC:  iradix.New[struct{}](),
		graceGC: iradix.New[struct{}](),
		removed: iradix.New[int64](),
	}
}

// FSM implements raft.BatchingFSM over the paste store.
type FSM struct {
	cur atomic.Pointer[state]
	mu  sync.Mutex // serialises writers: ApplyBatch and Restore

	nmu     sync.Mutex
	changed chan struct{} // closed and replaced after every apply

	appliedBytes atomic.Int64
	log          *slog.Logger
}

var _ raft.BatchingFSM = (*FSM)(nil)

// New returns an empty FSM that logs nowhere.
func New() *FSM { return NewLogged(nil) }

// NewLogged returns an empty FSM that logs to log (nil: nowhere).
func NewLogged(log *slog.Logger) *FSM {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &FSM{changed: make(chan struct{}), log: log}
	f.cur.Store(emptyState())
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
	}
	f.publish(tx.commit())
	return out
}

func (f *FSM) publish(s *state) {
	f.cur.Store(s)
	f.nmu.Lock()
	close(f.changed)
	f.changed = make(chan struct{})
	f.nmu.Unlock()
}

// Get returns the paste id if it exists and has not expired at now. The
// returned paste is shared: callers must not modify it.
func (f *FSM) Get(id string, now time.Time) (*Paste, bool) {
	p, ok := f.cur.Load().pastes.Get([]byte(id))
	if !ok || p.Expired(now.UnixNano()) {
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
	ts, ok := st.tombs.Get([]byte(id))
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
	_, ok := f.cur.Load().removed.Get([]byte(id))
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

// Walk calls fn for every paste in id order until fn returns false.
func (v View) Walk(fn func(p *Paste) bool) {
	it := v.s.pastes.Root().Iterator()
	for _, p, ok := it.Next(); ok; _, p, ok = it.Next() {
		if !fn(p) {
			return
		}
	}
}

// txn builds the next state from the current one.
type txn struct {
	pastes  *iradix.Txn[*Paste]
	expiry  *iradix.Txn[struct{}]
	tombs   *iradix.Txn[*Tombstone]
	tombGC  *iradix.Txn[struct{}]
	graceGC *iradix.Txn[struct{}]
	removed *iradix.Txn[int64]
	clock   int64
	index   uint64
	removal uint64
	count   int64
	bytes   int64
}

func newTxn(s *state) *txn {
	return &txn{
		pastes:  s.pastes.Txn(),
		expiry:  s.expiry.Txn(),
		tombs:   s.tombs.Txn(),
		tombGC:  s.tombGC.Txn(),
		graceGC: s.graceGC.Txn(),
		removed: s.removed.Txn(),
		clock:   s.clock,
		index:   s.index,
		removal: s.removal,
		count:   s.count,
		bytes:   s.bytes,
	}
}

func (t *txn) commit() *state {
	return &state{
		pastes:  t.pastes.CommitOnly(),
		expiry:  t.expiry.CommitOnly(),
		tombs:   t.tombs.CommitOnly(),
		tombGC:  t.tombGC.CommitOnly(),
		graceGC: t.graceGC.CommitOnly(),
		removed: t.removed.CommitOnly(),
		clock:   t.clock,
		index:   t.index,
		removal: t.removal,
		count:   t.count,
		bytes:   t.bytes,
	}
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
		t.removed.Insert([]byte(c.ID), c.Now)
		return &Result{}
	case TypeAllowNode:
		t.removed.Delete([]byte(c.ID))
		return &Result{}
	}
	// Decode refuses unknown types; this is a type it knows but no case
	// handles, which every node of this version treats the same.
	return &Result{Err: fmt.Errorf("%w: unhandled %s", ErrBadCommand, c.Type)}
}

func (t *txn) create(c *Command) *Result {
	p := c.Paste
	key := []byte(p.ID)
	if old, ok := t.pastes.Get(key); ok {
		if c.RequestID != "" && old.RequestID == c.RequestID {
			return &Result{Paste: old}
		}
		return &Result{Err: ErrExists}
	}
	if ts, ok := t.tombs.Get(key); ok {
		if c.RequestID != "" && ts.CreatedBy == c.RequestID {
			return &Result{Paste: p}
		}
		return &Result{Err: ErrExists}
	}
	if p.RequestID == "" {
		p.RequestID = c.RequestID
	}
	p.Seal()
	t.pastes.Insert(key, p)
	if p.ExpiresAt != 0 {
		t.expiry.Insert(timeKey(p.ExpiresAt, p.ID), struct{}{})
	}
	t.count++
	t.bytes += int64(len(p.Content))
	return &Result{Paste: p}
}

func (t *txn) delete(c *Command) *Result {
	key := []byte(c.ID)
	p, ok := t.pastes.Get(key)
	if !ok {
		if ts, ok := t.tombs.Get(key); ok && c.RequestID != "" && ts.RequestID == c.RequestID {
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
	key := []byte(c.ID)
	p, ok := t.pastes.Get(key)
	if !ok {
		ts, ok := t.tombs.Get(key)
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
	for _, key := range dueKeys(t.graceGC.Root(), now-int64(ConsumeGrace)) {
		t.graceGC.Delete(key)
		id := key[8:]
		if ts, ok := t.tombs.Get(id); ok && ts.Paste != nil && ts.At == int64(binary.BigEndian.Uint64(key)) {
			t.tombs.Insert(id, ts.withoutPaste())
		}
	}
	for _, key := range dueKeys(t.expiry.Root(), now) {
		id := key[8:]
		t.expiry.Delete(key)
		if p, ok := t.pastes.Get(id); ok {
			t.remove(p, &Tombstone{At: now})
		}
	}
	for _, key := range dueKeys(t.tombGC.Root(), now-int64(TombstoneTTL)) {
		t.tombGC.Delete(key)
		id := key[8:]
		// A newer tombstone for the same id has its own GC key; keep it.
		if ts, ok := t.tombs.Get(id); ok && ts.At == int64(binary.BigEndian.Uint64(key)) {
			t.tombs.Delete(id)
		}
	}
}

// remove drops p and leaves ts in its place.
func (t *txn) remove(p *Paste, ts *Tombstone) {
	key := []byte(p.ID)
	t.pastes.Delete(key)
	t.removal = t.index
	if p.ExpiresAt != 0 {
		t.expiry.Delete(timeKey(p.ExpiresAt, p.ID))
	}
	t.count--
	t.bytes -= int64(len(p.Content))
	ts.CreatedBy = p.RequestID
	ts.Index = t.index
	if old, ok := t.tombs.Get(key); ok {
		t.tombGC.Delete(timeKey(old.At, p.ID))
		t.graceGC.Delete(timeKey(old.At, p.ID))
	}
	t.tombs.Insert(key, ts)
	t.tombGC.Insert(timeKey(ts.At, p.ID), struct{}{})
	if ts.Paste != nil {
		t.graceGC.Insert(timeKey(ts.At, p.ID), struct{}{})
	}
}

// withoutPaste returns a copy of ts that no longer holds a paste.
func (ts *Tombstone) withoutPaste() *Tombstone {
	c := *ts
	c.Paste = nil
	return &c
}

// timeKey orders keys by time, then id. Times before 1970 sort as 0.
func timeKey(at int64, id string) []byte {
	k := make([]byte, 8, 8+len(id))
	binary.BigEndian.PutUint64(k, uint64(max(at, 0)))
	return append(k, id...)
}

// dueKeys returns the keys of a time-keyed tree whose time is at or before
// now, in order.
func dueKeys(root *iradix.Node[struct{}], now int64) [][]byte {
	var keys [][]byte
	it := root.Iterator()
	for k, _, ok := it.Next(); ok; k, _, ok = it.Next() {
		if int64(binary.BigEndian.Uint64(k)) > now {
			break
		}
		keys = append(keys, k)
	}
	return keys
}

// Snapshot captures the current state. It copies nothing: the state is
// immutable, so Persist can stream it while applies go on.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return &snapshot{s: f.cur.Load()}, nil
}

// Restore replaces the whole state with a snapshot. It builds the new state
// aside and swaps it in only once the snapshot was read completely, so a
// failed restore leaves the old state untouched.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	s, err := readSnapshot(rc)
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.publish(s)
	return nil
}

// NextDue returns when the next Expire command has work to do, in Unix
// nanoseconds: the earliest paste expiry, end of a consume grace or
// tombstone collection. It returns
// 0 when nothing is due ever.
func (f *FSM) NextDue() int64 {
	s := f.cur.Load()
	var next int64
	if k, _, ok := s.expiry.Root().Minimum(); ok {
		next = int64(binary.BigEndian.Uint64(k))
	}
	for _, gc := range []struct {
		tree  *iradix.Tree[struct{}]
		after time.Duration
	}{{s.tombGC, TombstoneTTL}, {s.graceGC, ConsumeGrace}} {
		if k, _, ok := gc.tree.Root().Minimum(); ok {
			at := int64(binary.BigEndian.Uint64(k)) + int64(gc.after)
			if next == 0 || at < next {
				next = at
			}
		}
	}
	return next
}

// AppliedBytes returns the total size of the command entries applied since
// the FSM was created. The node snapshots when it grows by too much.
func (f *FSM) AppliedBytes() int64 { return f.appliedBytes.Load() }
