package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/pastenode/pastenode/fsm"
)

// propose replicates cmd and returns its result once a majority has it on
// disk and this node's own state machine has applied it. It stamps the
// command with a request id and the time if they are missing, and retries
// with the same request id through elections and lost answers for up to
// Config.WriteHold, so the command is applied at most once. Application
// errors come back in Result.Err.
func (n *Node) propose(ctx context.Context, cmd *fsm.Command) (*fsm.Result, error) {
	if n.closing.Load() {
		return nil, ErrClosed
	}
	if cmd.RequestID == "" {
		cmd.RequestID = newRequestID()
	}
	if cmd.Now == 0 {
		cmd.Now = time.Now().UnixNano()
	}
	data, err := fsm.Encode(cmd)
	if err != nil {
		return nil, err
	}
	hold, cancel := context.WithTimeout(ctx, n.cfg.WriteHold)
	defer cancel()
	backoff := 20 * time.Millisecond
	for {
		res, index, err := n.applyOnce(hold, data, cmd.Type)
		if err == nil {
			if waitsForLocalApply(cmd.Type) {
				if err := n.fsm.WaitIndex(hold, index); err != nil {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					return nil, fmt.Errorf("%w: committed at index %d, not yet applied on this node", ErrTimeout, index)
				}
			}
			if p := res.Paste; p != nil && p.Content == nil && cmd.Type == fsm.TypeCreate {
				// A lean reply (leanReplies): the paste created is this
				// command's, retried or not, and so is its content.
				p.Content = cmd.Paste.Content
			}
			return res, nil
		}
		if !retryable(err) {
			return nil, err
		}
		if n.awaitsJoin() {
			return nil, ErrNoCluster
		}
		n.log.Debug("write not applied yet, retrying", "err", err)
		select {
		case <-hold.Done():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, n.holdExpired(err)
		case <-n.stop:
			return nil, ErrClosed
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// waitsForLocalApply reports whether propose answers a write of type t
// only once this node has applied it, beyond the leader. A removal does,
// or a read here under the node's lease could still serve what it removed
// (G3), and so does an operator's removal of a node, which the caller may
// look up here next. A create does not: a read of its id that misses on
// this node asks the leader for the read index and applies up to it before
// it answers (Read, G2), so waiting for this node's own apply only added a
// round of AppendEntries to every create through a follower, which slowed
// creates there.
func waitsForLocalApply(t fsm.Type) bool { return t != fsm.TypeCreate }

// applyOnce applies data, a command of type t, on the leader: here, or by
// forwarding. Here, it goes with the other commands this node's clients
// send at the same time, as a follower's go to the leader (forwarder):
// one log entry for many, not one each. A removal goes alone, since it is
// acknowledged only once the read leases allow, which must not hold up
// the writes batched with it.
func (n *Node) applyOnce(ctx context.Context, data []byte, t fsm.Type) (*fsm.Result, uint64, error) {
	if n.raft.State() != raft.Leader {
		return n.forwardApply(ctx, data, t)
	}
	if t.Removes() {
		return n.applyLocal(ctx, data)
	}
	o, err := n.local.forward(ctx, data)
	if err != nil {
		return nil, 0, err
	}
	return o.res, o.index, o.err
}

// applyLocal applies data through this node's Raft, which must lead. It
// proposes only a command that decodes and validates, and whose type every
// live member knows: nothing else ever reaches the log through pastenode.
func (n *Node) applyLocal(ctx context.Context, data []byte) (*fsm.Result, uint64, error) {
	cmd, err := n.checkCommand(data, n.peerProtocol())
	if err != nil {
		return nil, 0, err
	}
	return n.applyChecked(ctx, data, cmd, false)
}

// applyChecked applies data, which checkCommand decoded into cmd; forwarded
// says that a follower sent it, which may wait to apply it too
// (announces).
func (n *Node) applyChecked(ctx context.Context, data []byte, cmd *fsm.Command, forwarded bool) (*fsm.Result, uint64, error) {
	return n.awaitApply(ctx, n.startApply(ctx, data), cmd.Type.Removes(), announces(cmd.Type, forwarded))
}

// announces reports whether the leader announces the commit of a write of
// type t (announceCommit) once it is applied: a removal, which the read
// lease holders wait to apply (waitLeases), and a write a follower
// forwarded and waits to apply before it answers (waitsForLocalApply). Not
// a create: its follower answers at the leader's commit, and a read there
// that needs the create asks for the read index, which announces the
// commit when that follower has not heard of it (handleReadIndex).
func announces(t fsm.Type, forwarded bool) bool {
	return t.Removes() || forwarded && waitsForLocalApply(t)
}

// startApply hands data to Raft without waiting for it to commit, so that
// commands started together share one log append and one fsync.
func (n *Node) startApply(ctx context.Context, data []byte) raft.ApplyFuture {
	timeout := n.cfg.WriteHold
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	return n.raft.Apply(data, timeout)
}

// awaitApply waits for f and returns its result; when the entry may remove
// a paste, not before the read leases allow (waitLeases). With announce
// (announces), other nodes wait to apply it, and the leader announces its
// commit (announceCommit).
func (n *Node) awaitApply(ctx context.Context, f raft.ApplyFuture, removes, announce bool) (*fsm.Result, uint64, error) {
	if announce {
		n.unannounced.Add(1)
	}
	err := f.Error()
	if announce {
		n.unannounced.Add(-1)
	}
	if err != nil {
		return nil, 0, err
	}
	if announce {
		n.announceCommit()
	}
	res, ok := f.Response().(*fsm.Result)
	if !ok {
		return nil, 0, fmt.Errorf("unexpected apply response %T", f.Response())
	}
	// A removal (or a retry of one, which removes nothing itself) is
	// acknowledged only once no read lease lets a node serve what it
	// removed.
	if removes {
		if err := n.waitLeases(ctx, f.Index()); err != nil {
			return nil, 0, err
		}
	}
	return res, f.Index(), nil
}

// checkCommand decodes data and refuses it unless it is a valid command
// whose type proto, the oldest live member's protocol (peerProtocol), knows.
func (n *Node) checkCommand(data []byte, proto int) (*fsm.Command, error) {
	if int64(len(data)) > n.cfg.MaxCommandBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", fsm.ErrBadCommand, len(data), n.cfg.MaxCommandBytes)
	}
	cmd, err := fsm.Decode(data)
	if err != nil {
		return nil, err
	}
	if need, have := fsm.Since(cmd.Type), proto; need > have {
		return nil, fmt.Errorf("%w: %s needs protocol %d, a live member runs %d", ErrOldPeer, cmd.Type, need, have)
	}
	return cmd, nil
}

// SetPeerProtocol tells the node how to learn the lowest command protocol
// among the live members (cluster.MinProtocol), for the commands it
// proposes and the snapshots it writes. Until it is set, the node assumes
// every member runs its own fsm.ProtocolVersion.
func (n *Node) SetPeerProtocol(f func() int) {
	n.minProto.Store(&f)
	n.fsm.SetPeerProtocol(f)
}

func (n *Node) peerProtocol() int {
	if f := n.minProto.Load(); f != nil {
		return (*f)()
	}
	return fsm.ProtocolVersion
}

// holdExpired is the error of a write whose hold ran out, last being its
// last attempt's: ErrTimeout when a leader with a quorum was reachable all
// along and the write was only slow (an overloaded leader, a follower slow
// to apply), else ErrNoLeader.
func (n *Node) holdExpired(last error) error {
	if !leaderless(last) && n.leaderInContact() {
		return fmt.Errorf("%w: %v", ErrTimeout, last)
	}
	return fmt.Errorf("%w: %v", ErrNoLeader, last)
}

// leaderless reports whether err says that no leader was there to take a
// write: none known, or the one asked no longer led.
func leaderless(err error) bool {
	return errors.Is(err, ErrNoLeader) ||
		errors.Is(err, errNotLeader) ||
		errors.Is(err, raft.ErrNotLeader) ||
		errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress)
}

// leaderInContact reports whether this node leads and a quorum confirms it
// within a heartbeat timeout, or follows a leader it heard from within one.
func (n *Node) leaderInContact() bool {
	heartbeat := n.scale(heartbeatTimeout)
	if n.raft.State() == raft.Leader {
		ctx, cancel := context.WithTimeout(context.Background(), heartbeat)
		defer cancel()
		return n.verifyLeader(ctx) == nil
	}
	addr, _ := n.raft.LeaderWithID()
	return addr != "" && time.Since(n.raft.LastContact()) < heartbeat
}

// retryable reports whether a write may be tried again with the same request
// id: it failed for want of a leader, or its fate is unknown.
func retryable(err error) bool {
	return errors.Is(err, raft.ErrNotLeader) ||
		errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress) ||
		errors.Is(err, raft.ErrEnqueueTimeout) ||
		errors.Is(err, errNotLeader) ||
		errors.Is(err, ErrNoLeader) ||
		errors.Is(err, errUnreachable)
}

// leaderIndex returns the leader's applied index: its own, or asked over
// RPC.
func (n *Node) leaderIndex(ctx context.Context) (uint64, error) {
	if n.raft.State() == raft.Leader {
		return n.readIndex(ctx)
	}
	return n.forwardReadIndex(ctx)
}

// readIndex confirms that this node still leads and returns the read
// index: the last entry at or below the commit index that the state
// machine applies, once this node's own state machine has applied it.
// Everything acknowledged so far, and everything any node has applied, is
// at or below it. (The commit index itself would not do: barrier and no-op
// entries never reach the FSM, so its index may stay below it for good.)
func (n *Node) readIndex(ctx context.Context) (uint64, error) {
	if n.raft.State() != raft.Leader {
		return 0, errNotLeader
	}
	if err := n.waitBarrier(ctx); err != nil {
		return 0, err
	}
	if err := n.verifyLeader(ctx); err != nil {
		return 0, err
	}
	index := n.fsmIndexAt(n.raft.CommitIndex())
	if err := n.fsm.WaitIndex(ctx, index); err != nil {
		return 0, err
	}
	return index, nil
}

// fsmIndexAt returns the index of the last entry at or below commit that
// the FSM applies (a command or a configuration), or the FSM's own index
// when that is as high or the log no longer holds the entries. A follower
// can apply an entry before the leader does: without this, a read on
// another node could miss a paste that one node has already served.
func (n *Node) fsmIndexAt(commit uint64) uint64 {
	applied := n.fsm.Index()
	var l raft.Log
	for i := commit; i > applied; i-- {
		if err := n.wal.GetLog(i, &l); err != nil {
			return applied
		}
		if l.Type == raft.LogCommand || l.Type == raft.LogConfiguration {
			return i
		}
	}
	return applied
}

// waitBarrier makes sure a new leader has applied every entry of earlier
// terms before it answers reads.
func (n *Node) waitBarrier(ctx context.Context) error {
	term := n.raft.CurrentTerm()
	if n.barrierTerm.Load() == term {
		return nil
	}
	timeout := time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if err := n.raft.Barrier(timeout).Error(); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	n.barrierTerm.Store(term)
	return nil
}

// leaderLoop runs the leader's duties: a barrier at the start of each term
// and the expiry reaper, which proposes Expire commands when something is
// due. The reaper applies only locally and never forwards, so a deposed
// leader cannot have its stale clock committed by the new one. On every
// node, its tick also runs the store's compaction.
func (n *Node) leaderLoop() {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-n.stop:
			return
		case leader := <-n.notify:
			if leader {
				n.restoreTimeouts()
				n.grants.startTerm(n.raft.CurrentTerm(), time.Now())
				n.log.Info("became leader", "term", n.raft.CurrentTerm())
				n.leaderBarrier()
			} else {
				n.log.Info("lost leadership")
			}
		case <-tick.C:
			n.reap()
			n.stepDownIfRemoved()
			// On every node: compaction (fsm.Compact), which applies
			// leave to this loop. A few steps a tick bound its I/O; each
			// reads beside the writes, and appends what it copied between
			// them.
			for range compactSteps {
				if !n.fsm.Compact() {
					break
				}
			}
		}
	}
}

// compactSteps is how many steps of compaction (fsm.Compact) the leader
// loop takes a tick: with steps of a megabyte, 32 MiB a second at most.
const compactSteps = 8

// await waits for f, or until the node closes (ErrClosed): with
// BatchApplyCh, Raft never answers a future still queued when it shuts
// down, and the leader loop must not wait for it.
func (n *Node) await(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-n.stop:
		return ErrClosed
	}
}

// announceDelay is how long announceCommit waits for an entry that would
// carry the commit index to the followers before it appends one for that.
// A write that nothing follows is announced this much later, so it is
// short; under load the next entry usually comes within it, and then no
// barrier is needed.
const announceDelay = time.Millisecond

// announceCommit makes the followers hear soon of everything the leader
// has committed by now. A follower learns of a commit only from the
// leader's next AppendEntries, which hashicorp/raft sends for new entries
// or, with none, after CommitTimeout. A follower answers a removal it
// forwarded once it has applied it, a read that misses waits to apply up
// to the read index (handleReadIndex announces for it), a removal is
// acknowledged once the read lease holders have applied it, and a node is
// ready once it has applied what the new leader's barrier committed: each
// of these would wait out that timeout whenever no other write came. So
// when no entry follows within announceDelay, and no other write to
// announce is still to commit (that one announces itself), the leader
// appends a barrier, an entry the state machine never sees, whose
// AppendEntries carries the commit index. The second condition keeps a
// busy leader from appending a barrier, an fsync on every node, after
// nearly every write. A shorter CommitTimeout would serve an idle cluster
// too, but at a price paid all the time. A create's commit is announced
// only when a read needs it (announces), so creates alone append hardly
// any barriers.
func (n *Node) announceCommit() {
	last := n.raft.LastIndex()
	time.AfterFunc(announceDelay, func() {
		if n.closing.Load() || n.raft.State() != raft.Leader || n.raft.LastIndex() != last || n.unannounced.Load() > 0 {
			return
		}
		// Not waited for: it carries the index, and nobody needs its result.
		n.raft.Barrier(announceDelay)
	})
}

// leaderBarrier runs the barrier of a new term, and stops waiting for it
// when the node closes: with BatchApplyCh, a barrier still queued when Raft
// shuts down is never answered, and Close would wait for this loop forever.
// The abandoned wait ends with the process.
func (n *Node) leaderBarrier() {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- n.waitBarrier(ctx)
	}()
	select {
	case err := <-done:
		if err != nil {
			n.log.Warn("leader barrier failed", "err", err)
		} else {
			n.announceCommit() // the followers are ready once they apply it
		}
	case <-n.stop:
	}
}

func (n *Node) reap() {
	if n.raft.State() != raft.Leader || n.closing.Load() {
		return
	}
	now := time.Now().UnixNano()
	if due := n.fsm.NextDue(); due == 0 || due > now {
		return
	}
	data, err := fsm.Encode(&fsm.Command{Type: fsm.TypeExpire, Now: now})
	if err != nil {
		return
	}
	if err := n.await(n.raft.Apply(data, 5*time.Second)); err != nil && !errors.Is(err, ErrClosed) {
		n.log.Warn("expire failed", "err", err)
	}
}

// stepDownIfRemoved hands leadership to another voter once an operator has
// removed this node: a leader cannot take itself out of Raft cleanly, so the
// next leader does it. A lone voter has no one to hand over to.
func (n *Node) stepDownIfRemoved() {
	if n.raft.State() != raft.Leader || n.closing.Load() || !n.fsm.Removed(n.cfg.ID) || len(n.voters()) < 2 {
		return
	}
	if err := n.raft.LeadershipTransfer().Error(); err != nil {
		n.log.Warn("removed leader could not hand over", "err", err)
	}
}

// snapshotLoop snapshots when the bytes applied since the last snapshot pass
// Config.SnapshotBytes, because Raft's own trigger counts entries and a few
// thousand large pastes would let the log file grow to gigabytes.
func (n *Node) snapshotLoop() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
			n.purge()
			if n.fsm.AppliedBytes()-n.lastSnapAt.Load() < n.cfg.SnapshotBytes {
				continue
			}
			if _, err := n.Snapshot(); err != nil && !errors.Is(err, ErrNothingNew) {
				n.log.Warn("size-triggered snapshot failed", "err", err)
			}
		}
	}
}

// DefaultPurgeAfter is Config.PurgeAfter's default.
const DefaultPurgeAfter = 10 * time.Minute

// purging is purge's state between the ticks of snapshotLoop.
type purging struct {
	last          time.Time // when purge last looked for removed content
	snapshot      bool      // it found some, and no snapshot came after
	snapshotIndex uint64    // of the last snapshot purge took
	cut           uint64    // the log entries up to it are to be cut
}

// purge rewrites the segments that hold a paste removed more than a
// quarter of PurgeAfter ago (fsm.Purge), every quarter of PurgeAfter, then
// snapshots, so that the snapshot that linked the old segments, and with
// them the content, is replaced, and cuts the log entries that created
// those pastes out of the log's files (logStore.cut): content removed at
// T is gone from the data dir by T + PurgeAfter/2 and a snapshot. Not
// more often, since a snapshot writes the whole index, and a follower
// that lags behind a cut is sent a snapshot. A snapshot needs an entry
// applied since the last one: when there is none, the leader appends a
// barrier, which every node applies, and a follower waits for it.
func (n *Node) purge() {
	p := &n.purging
	if n.cfg.PurgeAfter < 0 {
		return
	}
	if now := time.Now(); !p.snapshot && now.Sub(p.last) >= n.cfg.PurgeAfter/4 {
		p.last = now
		before := now.Add(-n.cfg.PurgeAfter / 4).UnixNano()
		for more := true; more; {
			r := n.fsm.Purge(before)
			p.snapshot = p.snapshot || r.Found
			p.cut = max(p.cut, r.Created)
			more = r.More
		}
	}
	if p.snapshot {
		index, err := n.Snapshot()
		if errors.Is(err, ErrNothingNew) && n.raft.State() == raft.Leader {
			if err = n.raft.Barrier(n.cfg.WriteHold).Error(); err == nil {
				index, err = n.Snapshot()
			}
		}
		switch {
		case err == nil:
			p.snapshot, p.snapshotIndex = false, index
		case !errors.Is(err, ErrNothingNew):
			n.log.Warn("snapshot after a purge failed", "err", err)
			return
		default:
			return
		}
	}
	if p.cut == 0 {
		return
	}
	// The removals came after the creates and before the snapshot: it
	// holds every entry cut.
	upTo := min(p.cut, p.snapshotIndex)
	switch cut, err := n.wal.cut(upTo); {
	case err == nil:
		p.cut = 0
		if cut {
			n.log.Info("cut removed pastes out of the raft log", "up_to", upTo)
		}
	case !errors.Is(err, errLogChanged) && !errors.Is(err, ErrClosed):
		n.log.Warn("cutting removed pastes out of the raft log failed", "err", err)
	}
}

// Snapshot takes a Raft snapshot now and returns its log index.
// When nothing was applied since the last snapshot it returns ErrNothingNew
// (Raft itself says so only before the first apply of the process).
func (n *Node) Snapshot() (uint64, error) {
	if last, err := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64); err == nil &&
		last > 0 && n.raft.AppliedIndex() <= last {
		return 0, ErrNothingNew
	}
	applied := n.fsm.AppliedBytes()
	f := n.raft.Snapshot()
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNothingNewToSnapshot) {
			return 0, ErrNothingNew
		}
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	n.lastSnapAt.Store(applied)
	meta, rc, err := f.Open()
	if err != nil {
		return 0, fmt.Errorf("open snapshot: %w", err)
	}
	rc.Close()
	return meta.Index, nil
}
