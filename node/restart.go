package node

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// campaignAlone saves a node that is the only voter of its configuration
// the heartbeat timeout (1 to 2 s, scaled) Raft waits at start for a leader
// that cannot exist. It lowers the heartbeat and election timeouts to the
// leader lease, the floor Raft accepts; lowering them wakes the follower
// loop, which campaigns at once since it never heard from a leader, and a
// sole voter wins its own vote. restoreTimeouts puts the configured
// timeouts back once the node leads, before it can add another voter, so a
// cluster never runs on the short ones. A node with peers keeps its
// timeouts: it must give a live leader time to reach it.
func (n *Node) campaignAlone() {
	if !n.soleVoter() {
		return
	}
	configured := n.raft.ReloadableConfig()
	n.timeouts.Store(&configured)
	short := configured
	short.HeartbeatTimeout, short.ElectionTimeout = n.scale(leaderLease), n.scale(leaderLease)
	if err := n.raft.ReloadConfig(short); err != nil {
		n.timeouts.Store(nil)
		n.log.Warn("could not shorten the election of a sole voter", "err", err)
	}
}

// restoreTimeouts undoes campaignAlone, if it lowered the timeouts.
func (n *Node) restoreTimeouts() {
	rc := n.timeouts.Swap(nil)
	if rc == nil {
		return
	}
	if err := n.raft.ReloadConfig(*rc); err != nil {
		n.log.Error("could not restore the raft timeouts", "err", err)
	}
}

// soleVoter reports whether this node is the only voter of its latest
// Raft configuration.
func (n *Node) soleVoter() bool {
	v := n.voters()
	return len(v) == 1 && v[0] == raft.ServerID(n.cfg.ID)
}

// snapshotAtClose snapshots at shutdown when that makes the stop and the
// next start quicker together. A start restores the newest snapshot, then
// reads and applies the commands logged after it. A snapshot at the stop
// costs writing every paste once more; without one, the start replays
// each command of the tail where it would have restored its paste, and a
// replay costs several times a restore. So a tail of at least
// 1/snapshotAtCloseShare of the pastes is snapshotted and a shorter one
// replayed, near where the two cost the same, which keeps a stop and
// start short either way. The tail counts commands, not entries: a batch
// entry carries many.
func (n *Node) snapshotAtClose() {
	tail := n.fsm.CommandsSinceSnapshot()
	if pastes, _ := n.fsm.Stats(); tail == 0 || tail < pastes/snapshotAtCloseShare {
		return
	}
	start := time.Now()
	index, err := n.Snapshot()
	switch {
	case errors.Is(err, ErrNothingNew):
	case err != nil:
		n.log.Warn("snapshot at shutdown failed; the next start replays the log", "err", err)
	default:
		n.log.Info("took a snapshot at shutdown", "index", index, "entries", tail, "took", time.Since(start).Round(time.Millisecond))
	}
}

// snapshotAtCloseShare: a clean stop snapshots when the log's tail holds at
// least this share of the store's pastes in commands (snapshotAtClose).
const snapshotAtCloseShare = 6
