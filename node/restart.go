package node

import (
	"errors"
	"math"
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
// reads and applies the commands logged after it. Measured in the process
// (a node of about 100k pastes of 1 KiB, wall time): a command of that
// tail costs about 12 µs to replay (14 µs when each create was an entry of
// its own), a paste about 1.2 µs to write into the snapshot at the stop
// and 3 µs to restore. A snapshot now pays once the tail is over about a
// seventh of the pastes, and a tail of a sixth or more is snapshotted; a
// shorter one is replayed. Either way a stop and start of 100k pastes
// then take about half a second at the worst; at a third, the rule
// before, a tail that just missed it made that about 0.7 s. The tail
// counts commands, not entries: a batch entry carries many. (On a later
// machine, snapshots of records, version 3, restore at about 1.7 µs a
// paste in a starting node: that only moves the point where a snapshot
// pays towards a shorter tail; the rule was left as it is.)
func (n *Node) snapshotAtClose() {
	tail := n.fsm.CommandsSinceSnapshot()
	if pastes, _ := n.fsm.Stats(); tail == 0 || tail < pastes/snapshotAtCloseShare {
		return
	}
	// Raft deletes the entries a snapshot covers from the log; here that
	// is left to the running node's next snapshot, which deletes them
	// anyway, so that the stop does not wait for bolt to free their pages.
	keep := n.raft.ReloadableConfig()
	keep.TrailingLogs = math.MaxUint64
	if err := n.raft.ReloadConfig(keep); err != nil {
		n.log.Warn("could not keep the log at shutdown", "err", err)
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
