package node

import (
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// raftTransport is the transport Raft runs on: the network transport of
// the Raft port, patient with followers that are down, and abstaining
// from votes while this node has lost its state.
//
// Patience: it keeps hashicorp/raft's leader from backing off from a
// follower that is down. Raft counts every failed AppendEntries to a peer
// and sleeps up to ten seconds between tries once a few have failed
// (replication.go's backoff), so a follower back from a short outage could
// wait that long for its first entry and stay unready meanwhile. Its
// heartbeats back off too, and log an error twice a second for as long as
// the peer is down.
//
// Here a call to a peer that does not answer is retried at retryGap
// inside the transport for as long as this node leads and the peer is in
// the configuration, so Raft sees neither the failures nor a reason to
// back off, and the peer hears from the leader within retryGap of coming
// back. A peer going down and coming back is logged once each way. What
// the transport cannot decide (the node closing, stepping down, the peer
// being removed) hands the last error back to Raft as before.
//
// Abstention: a node that started with no Raft state, and did not
// bootstrap a new cluster, may be a voter whose data dir was wiped. Raft
// grants any vote while it has no configuration, and a voter that forgot
// the entries it acknowledged could help elect a leader that lacks them:
// acknowledged pastes would be lost. So until such a node has caught up
// with a leader (catchUpAtStart), its vote requests are answered with an
// error, which counts as no vote.
type raftTransport struct {
	raft.Transport
	n *Node

	mu   sync.Mutex
	down map[raft.ServerID]bool

	consumer chan raft.RPC
}

// errAbstain answers a vote request of a node that abstains.
var errAbstain = errors.New("this node lost its raft state and votes only once it has caught up with a leader")

// retryGap is how often a call to a peer that does not answer is tried
// again: also how soon after a follower's restart the leader reaches it.
const retryGap = 100 * time.Millisecond

func newRaftTransport(inner raft.Transport, n *Node) *raftTransport {
	t := &raftTransport{Transport: inner, n: n, down: map[raft.ServerID]bool{}, consumer: make(chan raft.RPC)}
	n.wg.Add(1)
	go func() { defer n.wg.Done(); t.filterVotes() }()
	return t
}

// Consumer is the RPCs Raft is to handle: all those of the network, but
// the vote requests an abstaining node answers itself.
func (t *raftTransport) Consumer() <-chan raft.RPC { return t.consumer }

func (t *raftTransport) filterVotes() {
	in := t.Transport.Consumer()
	for {
		var rpc raft.RPC
		select {
		case rpc = <-in:
		case <-t.n.stop:
			return
		}
		switch rpc.Command.(type) {
		case *raft.RequestVoteRequest, *raft.RequestPreVoteRequest:
			if t.n.abstain.Load() {
				rpc.Respond(nil, errAbstain)
				continue
			}
		}
		select {
		case t.consumer <- rpc:
		case <-t.n.stop:
			rpc.Respond(nil, ErrClosed)
			return
		}
	}
}

// AppendEntries sends entries or a heartbeat to id, retrying while the
// peer does not answer and this node still leads with the peer as a
// member.
func (t *raftTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	for {
		err := t.Transport.AppendEntries(id, target, args, resp)
		if err == nil {
			t.mark(id, target, false, nil)
			return nil
		}
		if !t.keepTrying(id, args.Term) {
			return err
		}
		t.mark(id, target, true, err)
		select {
		case <-t.n.stop:
			return err
		case <-time.After(retryGap):
		}
	}
}

// keepTrying reports whether a call of term to id is still worth making:
// this node leads in that term, is not closing, and id is a member.
func (t *raftTransport) keepTrying(id raft.ServerID, term uint64) bool {
	r := t.n.raft
	if r == nil || t.n.closing.Load() || r.State() != raft.Leader || r.CurrentTerm() != term {
		return false
	}
	f := r.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == id {
			return true
		}
	}
	return false
}

// mark records whether id answers, logging a change.
func (t *raftTransport) mark(id raft.ServerID, target raft.ServerAddress, down bool, err error) {
	t.mu.Lock()
	was := t.down[id]
	t.down[id] = down
	t.mu.Unlock()
	switch {
	case down && !was:
		t.n.log.Warn("peer does not answer; retrying until it does", "peer", id, "addr", target, "err", err)
	case !down && was:
		t.n.log.Info("peer answers again", "peer", id, "addr", target)
	}
}

// isDown reports whether the last call to id failed, while this node led.
func (t *raftTransport) isDown(id raft.ServerID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.down[id]
}

// Close closes the wrapped transport, which Raft's shutdown expects of a
// transport that can close.
func (t *raftTransport) Close() error {
	if c, ok := t.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

// The wrapped transport's optional interfaces, passed through: NewRaft
// looks for them on the transport it is given.
var (
	_ raft.WithClose   = (*raftTransport)(nil)
	_ raft.WithPreVote = (*raftTransport)(nil)
)

// RequestPreVote passes pre-vote through (raft.WithPreVote).
func (t *raftTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.Transport.(raft.WithPreVote).RequestPreVote(id, target, args, resp)
}
