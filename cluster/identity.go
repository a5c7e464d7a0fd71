package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/memberlist"
	autopilot "github.com/hashicorp/raft-autopilot"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/pastenode/pastenode/node"
)

// A cluster never merges with another (node/identity.go has the ids).
// Gossip refuses to merge with a member whose cluster id differs from this
// node's, both at a join (NotifyMerge, which makes the join fail with the
// reason) and for every later message about it (NotifyAlive, as a merge
// can also happen passively). The leader checks again, over the
// authenticated internal RPC, before it adds a member to Raft.

// mergeDelegate keeps members of other clusters out of this node's gossip.
type mergeDelegate Cluster

func (d *mergeDelegate) NotifyMerge(peers []*memberlist.Node) error {
	c := (*Cluster)(d)
	for _, p := range peers {
		if err := c.checkPeer(p, true); err != nil {
			c.refused.Store(&err)
			c.log.Warn("refused to merge gossip with another cluster", "err", err)
			return err
		}
	}
	return nil
}

// NotifyAlive refuses news of a member of another cluster, and forgets a
// member that gossip took in before its cluster's id was known.
func (d *mergeDelegate) NotifyAlive(p *memberlist.Node) error {
	c := (*Cluster)(d)
	err := c.checkPeer(p, false)
	if err != nil {
		c.mu.Lock()
		delete(c.members, p.Name)
		c.mu.Unlock()
	}
	return err
}

// checkPeer refuses a gossip member whose cluster id differs from this
// node's. A node without an id yet (a new node, or a cluster of an older
// version) has nothing to defend, except at an operator's join (merge) of
// a node that holds state: that state must be of the seeds' cluster.
func (c *Cluster) checkPeer(p *memberlist.Node, merge bool) error {
	if p.Name == c.node.ID() && p.Addr.Equal(c.advertiseIP) && int(p.Port) == c.gossipPort {
		return nil // this node itself
	}
	var m meta
	if msgpack.Unmarshal(p.Meta, &m) != nil || m.Cluster == "" {
		return nil
	}
	ours := c.node.ClusterID()
	switch {
	case ours == m.Cluster:
		return nil
	case ours != "":
		return node.ForeignClusterError("this node", ours, m.Cluster)
	case merge && c.node.HasState() && !c.starting():
		return node.ForeignClusterError("this node", "", m.Cluster)
	}
	return nil
}

// starting reports whether this node still runs its first join after a
// start: a node of an older data dir that never learnt its cluster's id
// may rejoin its own cluster then, and learns the id from the log.
func (c *Cluster) starting() bool { return !c.joinedOnce.Load() }

// admissible reports whether the leader may add member s, which proved
// over the internal RPC to be who it is, with what it said of its state:
// not a node of another cluster, nor one that holds Raft state of a cluster
// it cannot name while it is not a member here.
func (c *Cluster) admissible(s *autopilot.Server, id node.PeerIdentity, member bool) error {
	ours := c.node.ClusterID()
	who := "node " + string(s.ID)
	switch {
	case id.Cluster != "" && id.Cluster != ours:
		if ours == "" {
			return fmt.Errorf("%s %w: it holds state of cluster %s and this cluster has no id yet", who, node.ErrForeignCluster, id.Cluster)
		}
		return node.ForeignClusterError(who, id.Cluster, ours)
	case id.HasState && id.Cluster == "" && !member:
		return node.ForeignClusterError(who, "", ours)
	}
	return nil
}

// refuse logs that member s is not added, once per member and minute.
func (c *Cluster) refuse(s *autopilot.Server, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unverified == nil {
		c.unverified = map[string]time.Time{}
	}
	if time.Since(c.unverified[string(s.ID)]) > time.Minute {
		c.unverified[string(s.ID)] = time.Now()
		c.log.Warn("not adding a gossip member to raft", "id", s.ID, "addr", s.Address, "err", err)
	}
}

// readmit takes back a member that an operator removed and then asked to
// rejoin (pastectl join on it): it replicates the readmission, after which
// the next reconcile adds it.
func (c *Cluster) readmit(s *autopilot.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), c.scaled(2*time.Second)+time.Second)
	defer cancel()
	id, err := c.node.VerifyPeer(ctx, string(s.ID), string(s.Address))
	if err == nil && !id.Rejoin {
		return // the gossip flag is stale: the node does not ask to come back
	}
	if err == nil {
		err = c.admissible(s, id, true)
	}
	if err != nil {
		c.refuse(s, err)
		return
	}
	if err := c.node.Readmit(ctx, string(s.ID)); err != nil {
		c.log.Warn("readmit removed node", "id", s.ID, "err", err)
		return
	}
	c.log.Info("readmitted a removed node at an operator's join", "id", s.ID)
	nudge(c.wake)
}
