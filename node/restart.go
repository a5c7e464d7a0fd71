package node

import (
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
