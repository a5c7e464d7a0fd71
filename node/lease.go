package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"
)

// Read leases make local hits linearizable without a network round trip
// (docs/CONSISTENCY.md). Every follower asks the leader for a lease of
// Config.ReadLease every quarter lease, and at once after it applied a
// removal; the request carries its term and applied index. The follower's
// lease starts when it sent the request, by its own monotonic clock; the
// leader counts from when it received it, plus leaseMargin. The leader
// itself holds a lease from the start of its last successful
// VerifyLeader. A node serves a local hit only while its lease of the
// current term holds; otherwise it takes the read-index path.
//
// The leader acknowledges a delete or consume only when every lease it
// granted in its term has either run out or comes from a node that applied
// the entry, and only once it has led for a lease length and a margin, so
// that leases its predecessor granted have run out. It grants a lease only
// to a node that applied every removal the leader applied, after confirming
// it still leads.

// leaseMargin is how much longer the leader holds a lease than the
// follower: it covers the rate difference of the two monotonic clocks and
// timer slack.
func leaseMargin(length time.Duration) time.Duration { return length / 10 }

// heldLease is a lease this node holds: it may serve local hits until
// until, while Raft is in term.
type heldLease struct {
	term  uint64
	until time.Time
}

// leaseHolder is the lease this node holds, as any node, leader or
// follower.
type leaseHolder struct {
	held atomic.Pointer[heldLease]
}

// valid reports whether the lease held for term is in force at now.
func (h *leaseHolder) valid(term uint64, now time.Time) bool {
	l := h.held.Load()
	return l != nil && l.term == term && now.Before(l.until)
}

// extend holds a lease for term until until, unless a longer one of the
// same term is held.
func (h *leaseHolder) extend(term uint64, until time.Time) {
	for {
		old := h.held.Load()
		if old != nil && old.term == term && !until.After(old.until) {
			return
		}
		if h.held.CompareAndSwap(old, &heldLease{term: term, until: until}) {
			return
		}
	}
}

// grant is the leader's record of a lease it gave a follower.
type grant struct {
	applied uint64    // the follower's applied index, as last reported
	expiry  time.Time // the leader's view of when the lease ends
}

// leaseGrants is the leader's side: the leases it granted in its term.
// Every method takes the lock and enters the caller's term first
// (enterTerm), which resets the state of an older term.
type leaseGrants struct {
	length time.Duration

	mu        sync.Mutex
	term      uint64 // the term the state below belongs to
	termStart time.Time
	grants    map[string]*grant
	changed   chan struct{} // closed and replaced when a grant changes
}

func newLeaseGrants(length time.Duration) *leaseGrants {
	return &leaseGrants{length: length, grants: map[string]*grant{}, changed: make(chan struct{})}
}

// enterTerm resets the state when term is newer than its own; now is when
// this node is known to lead in term, at the latest. It reports false for
// a term older than l's: its caller was deposed. Call with mu held.
func (l *leaseGrants) enterTerm(term uint64, now time.Time) bool {
	if term > l.term {
		l.term, l.termStart = term, now
		clear(l.grants)
		l.broadcast()
	}
	return term == l.term
}

// broadcast wakes the removals waiting for a grant. Call with mu held.
func (l *leaseGrants) broadcast() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// startTerm records that this node leads in term since now at the latest.
func (l *leaseGrants) startTerm(term uint64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.enterTerm(term, now)
}

// entry returns follower id's grant, made on first use. Call with mu held.
func (l *leaseGrants) entry(id string) *grant {
	g := l.grants[id]
	if g == nil {
		g = &grant{}
		l.grants[id] = g
	}
	return g
}

// report records that follower id has applied index.
func (l *leaseGrants) report(term uint64, id string, applied uint64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.enterTerm(term, now) {
		return
	}
	if g := l.entry(id); applied > g.applied {
		g.applied = applied
		l.broadcast()
	}
}

// grant extends follower id's lease to expiry if it has applied fence,
// the last removal this leader applied, and reports whether it did.
func (l *leaseGrants) grant(term uint64, id string, applied uint64, expiry time.Time, fence func() uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.enterTerm(term, time.Now()) {
		return false
	}
	g := l.entry(id)
	g.applied = max(g.applied, applied)
	if applied < fence() {
		return false
	}
	if expiry.After(g.expiry) {
		g.expiry = expiry
	}
	return true
}

// blocked returns how long a removal at index must still wait in term at
// now (0: not at all), and a channel closed when a grant changes. others
// are the other servers of the Raft configuration: until a lease length
// has passed since this node took office, one of them may hold a lease of
// an earlier term, unless it reported in this term that it applied index.
func (l *leaseGrants) blocked(term, index uint64, now time.Time, others []string) (time.Duration, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.enterTerm(term, now) {
		return l.length, l.changed
	}
	wait := time.Duration(0)
	if d := l.termStart.Add(l.length + leaseMargin(l.length)).Sub(now); d > 0 {
		for _, id := range others {
			if g := l.grants[id]; g == nil || g.applied < index {
				wait = d
				break
			}
		}
	}
	for _, g := range l.grants {
		if g.applied < index && g.expiry.After(now) {
			wait = max(wait, g.expiry.Sub(now))
		}
	}
	return wait, l.changed
}

// leaseValid reports whether this node may serve a local hit now without
// asking anyone.
func (n *Node) leaseValid() bool { return n.leaseValidAt(time.Now()) }

// leaseValidAt is leaseValid with the time read by the caller.
func (n *Node) leaseValidAt(now time.Time) bool {
	return n.lease.valid(n.raft.CurrentTerm(), now)
}

// waitLeases returns once a removal at index may be acknowledged: every
// lease this leader granted has run out or is held by a node that applied
// index, and leases of earlier leaders have run out.
func (n *Node) waitLeases(ctx context.Context, index uint64) error {
	term := n.raft.CurrentTerm()
	// The leader serves hits too: it must have applied the removal itself.
	if err := n.fsm.WaitIndex(ctx, index); err != nil {
		return err
	}
	others := n.otherServers()
	for {
		if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
			return errNotLeader
		}
		wait, changed := n.grants.blocked(term, index, time.Now(), others)
		if wait == 0 {
			return nil
		}
		t := time.NewTimer(min(wait, 50*time.Millisecond))
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("wait for read leases: %w", ctx.Err())
		case <-n.stop:
			t.Stop()
			return ErrClosed
		}
		t.Stop()
	}
}

// verifyLeader is Raft's VerifyLeader bounded by ctx and by Close: Raft
// never answers a verification still queued when it shuts down, and Close
// waits for the loops that call this.
func (n *Node) verifyLeader(ctx context.Context) error {
	f := n.raft.VerifyLeader()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("verify leader: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("verify leader: %w", ctx.Err())
	case <-n.stop:
		return ErrClosed
	}
}

// otherServers returns the ids of the Raft configuration but this node's.
// If the configuration cannot be read, it returns a placeholder, so that a
// new leader waits out the old leases in full.
func (n *Node) otherServers() []string {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return []string{""}
	}
	var ids []string
	for _, s := range f.Configuration().Servers {
		if string(s.ID) != n.cfg.ID {
			ids = append(ids, string(s.ID))
		}
	}
	return ids
}

// leaseLoop renews this node's lease every quarter lease, and at once after
// it applied a removal, so that the leader need not wait for the next tick
// to acknowledge a delete.
func (n *Node) leaseLoop() {
	tick := time.NewTicker(n.cfg.ReadLease / 4)
	defer tick.Stop()
	var reported uint64
	for {
		if n.raft.State() == raft.Leader {
			// The leader's own lease does not depend on what it has
			// applied: a removal is no reason for an extra quorum round.
			reported = n.fsm.LastRemoval()
		}
		if n.fsm.LastRemoval() == reported {
			changed := n.fsm.Changed()
			if n.fsm.LastRemoval() == reported {
				select {
				case <-n.stop:
					return
				case <-changed:
					continue
				case <-tick.C:
				}
			}
		}
		reported = n.fsm.LastRemoval()
		n.renewLease()
	}
}

// renewLease renews this node's lease: a leader by confirming it still
// leads, a follower by asking the leader.
func (n *Node) renewLease() {
	if n.closing.Load() {
		return
	}
	term := n.raft.CurrentTerm()
	sent := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ReadLease/2)
	defer cancel()
	if n.raft.State() == raft.Leader {
		n.grants.startTerm(term, time.Now()) // known to lead from now at the latest
		if n.barrierTerm.Load() == term && n.verifyLeader(ctx) == nil {
			n.lease.extend(term, sent.Add(n.cfg.ReadLease))
		}
		return
	}
	addr, _ := n.raft.LeaderWithID()
	if addr == "" || n.leaseHeld() {
		return
	}
	req := leaseRequest{ID: n.cfg.ID, Term: term, Applied: n.fsm.Index()}
	reply, err := n.askLease(ctx, string(addr), &req)
	if err != nil {
		n.log.Debug("lease renewal failed", "err", err)
		return
	}
	if reply.Granted && reply.Term == term && n.raft.CurrentTerm() == term {
		n.lease.extend(term, sent.Add(n.cfg.ReadLease))
	}
}

// leaseRequest asks the leader for a read lease.
type leaseRequest struct {
	ID      string `msgpack:"id"`
	Term    uint64 `msgpack:"t"`
	Applied uint64 `msgpack:"a"`
}

// leaseReply is the leader's answer.
type leaseReply struct {
	Term    uint64 `msgpack:"t"`
	Granted bool   `msgpack:"g"`
}

func (n *Node) askLease(ctx context.Context, addr string, lr *leaseRequest) (*leaseReply, error) {
	body, err := msgpack.Marshal(lr)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/internal/v1/lease", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("lease: leader answered %s", resp.Status)
	}
	var reply leaseReply
	if err := msgpack.NewDecoder(io.LimitReader(resp.Body, 1<<10)).Decode(&reply); err != nil {
		return nil, fmt.Errorf("lease: bad reply: %w", err)
	}
	return &reply, nil
}

// handleLease grants a read lease if this node leads in the asker's term,
// has applied the entries of earlier terms, still has a quorum, and the
// asker has applied every removal this node applied. The asker's applied
// index is recorded first, whatever the answer, so that removals waiting
// for it go on at once.
func (n *Node) handleLease(w http.ResponseWriter, r *http.Request) {
	recv := time.Now()
	var req leaseRequest
	if err := msgpack.NewDecoder(io.LimitReader(r.Body, 1<<10)).Decode(&req); err != nil || req.ID == "" {
		http.Error(w, "bad lease request", http.StatusBadRequest)
		return
	}
	term := n.raft.CurrentTerm()
	reply := leaseReply{Term: term}
	if n.closing.Load() || n.raft.State() != raft.Leader || req.Term != term {
		writeMsgpack(w, &reply)
		return
	}
	n.grants.report(term, req.ID, req.Applied, recv)
	ctx, cancel := context.WithTimeout(r.Context(), n.cfg.ReadLease/2)
	defer cancel()
	if n.barrierTerm.Load() == term && n.verifyLeader(ctx) == nil {
		expiry := recv.Add(n.cfg.ReadLease + leaseMargin(n.cfg.ReadLease))
		reply.Granted = n.grants.grant(term, req.ID, req.Applied, expiry, n.fsm.LastRemoval)
	}
	writeMsgpack(w, &reply)
}
