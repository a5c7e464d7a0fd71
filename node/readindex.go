package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pastenode/pastenode/fsm"
)

// ErrUnavailable means a read could not be confirmed with a quorum in
// time: the answer might be stale or a false miss, so none is given. Retry
// later or on another node, or ask for a stale read.
var ErrUnavailable = errors.New("cannot confirm the read with a quorum of the cluster")

// readBudget is how long a read may wait for the read index.
const readBudget = time.Second

// readBatch is one read-index round trip, shared by every read that joined
// it before it started (etcd's linearizableReadLoop).
type readBatch struct {
	waiters int
	done    chan struct{}
	index   uint64
	err     error
}

// readIndexer batches the reads that need the read index.
type readIndexer struct {
	mu   sync.Mutex
	next *readBatch    // the batch new reads join
	wake chan struct{} // one pending wake-up for the loop
}

func newReadIndexer() *readIndexer {
	return &readIndexer{next: &readBatch{done: make(chan struct{})}, wake: make(chan struct{}, 1)}
}

// Read returns paste id, consistent with every write acknowledged before
// the call (G2, G3). A local hit is served at once while this node holds a
// read lease. A miss, or a hit without a lease, waits until this node has
// applied everything committed when the read began (the read index); if that
// cannot be done within a second, Read returns ErrUnavailable, never a
// false fsm.ErrNotFound. With stale set, it answers from the local copy
// whatever the lease and the leader.
func (n *Node) Read(ctx context.Context, id string, stale bool) (*fsm.Paste, error) {
	var r rawRead
	if err := n.read(ctx, id, stale, &r); err != nil {
		return nil, err
	}
	return r.p, nil
}

// ReadRaw is Read for a server that sends the paste and is done with it
// (fsm.FSM.GetRaw): a small paste is read into into, its fields pointing
// into buf, grown as need be and returned for the caller to reuse; a
// large one comes as a file region c, into's Content nil, which the
// caller closes.
func (n *Node) ReadRaw(ctx context.Context, id string, stale bool, into *fsm.Paste, buf []byte) ([]byte, *fsm.Content, error) {
	r := rawRead{p: into, buf: buf}
	err := n.read(ctx, id, stale, &r)
	return r.buf, r.c, err
}

// rawRead is what read reads into: a Paste of Get's when p is nil, or
// p, buf and c as fsm.FSM.GetRaw fills them.
type rawRead struct {
	p   *fsm.Paste
	buf []byte
	c   *fsm.Content
}

// get reads paste id from the local copy into r.
func (n *Node) get(id string, now time.Time, r *rawRead) (ok bool) {
	if r.p == nil {
		r.p, ok = n.fsm.Get(id, now)
		return ok
	}
	r.buf, r.c, ok = n.fsm.GetRaw(id, now, r.p, r.buf)
	return ok
}

// read is Read and ReadRaw, which differ only in how they read the paste
// from the local copy (get).
func (n *Node) read(ctx context.Context, id string, stale bool, r *rawRead) error {
	// One clock read serves the lease and the expiry: reading the clock is
	// a measurable part of a hit.
	now := time.Now()
	if stale || n.leaseValidAt(now) {
		if n.get(id, now, r) {
			return nil
		}
		if stale {
			return fsm.ErrNotFound
		}
	}
	ctx, cancel := context.WithTimeout(ctx, readBudget)
	defer cancel()
	if err := n.linearize(ctx); err != nil {
		return err
	}
	if n.get(id, time.Now(), r) {
		return nil
	}
	// A removal is in effect once no lease lets a node serve what it
	// removed, not when this node applied it: until then, another node may
	// still rightly serve the paste, and a 404 here would come before it.
	if index, gone := n.fsm.Gone(id); gone {
		if err := n.removalSafe(ctx, index); err != nil {
			return fmt.Errorf("%w: removal not confirmed: %v", ErrUnavailable, err)
		}
	}
	return fsm.ErrNotFound
}

// linearize waits until this node has applied every write acknowledged
// before it was called, or fails with ErrUnavailable (or ErrClosed).
func (n *Node) linearize(ctx context.Context) error {
	ri := n.reads
	ri.mu.Lock()
	b := ri.next
	b.waiters++
	ri.mu.Unlock()
	select {
	case ri.wake <- struct{}{}:
	default:
	}
	select {
	case <-b.done:
	case <-ctx.Done():
		return fmt.Errorf("%w: no read index in time: %v", ErrUnavailable, ctx.Err())
	case <-n.stop:
		return ErrClosed
	}
	if b.err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, b.err)
	}
	if err := n.fsm.WaitIndex(ctx, b.index); err != nil {
		return fmt.Errorf("%w: applied index %d is behind the read index: %v", ErrUnavailable, n.fsm.Index(), err)
	}
	return nil
}

// readLoop runs one read-index round trip at a time for every read waiting
// when it starts.
func (n *Node) readLoop() {
	ri := n.reads
	for {
		select {
		case <-n.stop:
			return
		case <-ri.wake:
		}
		ri.mu.Lock()
		b := ri.next
		if b.waiters == 0 {
			ri.mu.Unlock()
			continue
		}
		ri.next = &readBatch{done: make(chan struct{})}
		ri.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), readBudget)
		b.index, b.err = n.confirmIndex(ctx)
		cancel()
		if n.hooks != nil {
			n.hooks.readRounds.Add(1)
		}
		close(b.done)
	}
}

// confirmIndex returns the leader's read index: everything acknowledged
// before the call is at or below it. A leader change is waited out within
// ctx: a deposed leader's or a candidate's "not the leader" is retried.
func (n *Node) confirmIndex(ctx context.Context) (uint64, error) {
	for {
		index, err := n.leaderIndex(ctx)
		if err == nil {
			return index, nil
		}
		if !retryable(err) {
			return 0, err
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-n.stop:
			return 0, ErrClosed
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// catchUpAtStart learns the leader's read index once after Open and waits
// until this node has applied that far; until then Ready reports the node
// behind (G5).
func (n *Node) catchUpAtStart() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		index, err := n.confirmIndex(rctx)
		rcancel()
		if err == nil {
			n.startIndex.Store(index)
			if n.fsm.WaitIndex(ctx, index) != nil {
				return
			}
			n.caughtUp.Store(true)
			n.abstain.Store(false)
			close(n.caughtUpCh)
			n.log.Info("caught up with the cluster", "index", index)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// CaughtUp is closed once the node has applied everything committed when
// it started, the first of the conditions Ready checks. It stays open when
// the node closes first.
func (n *Node) CaughtUp() <-chan struct{} { return n.caughtUpCh }

// Ready reports why the node cannot serve consistent reads yet, or nil
// (G5): it must know a leader, have applied everything committed when this
// node started (the read index learnt then), and hold a read lease or be able to
// confirm a read index now, which a node that rejoins after a partition
// does only once it has caught up again.
func (n *Node) Ready() error {
	if n.closing.Load() {
		return ErrClosed
	}
	if n.WasRemoved() {
		return fmt.Errorf("%w: `pastectl join SEED` on it brings it back", ErrRemoved)
	}
	if addr, _ := n.raft.LeaderWithID(); addr == "" {
		if n.awaitsJoin() {
			return ErrNoCluster
		}
		return errors.New("no leader known")
	}
	if !n.caughtUp.Load() {
		if target := n.startIndex.Load(); target > 0 {
			return fmt.Errorf("catching up: applied index %d of %d", n.fsm.Index(), target)
		}
		return errors.New("catching up: the leader's index is not known yet")
	}
	if n.leaseValid() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	return n.linearize(ctx)
}
