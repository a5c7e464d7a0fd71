package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"

	"github.com/pastenode/pastenode/node"
)

// joinLoop joins the seeds and the peers this node saw last time, retrying
// with backoff until one answers. Its own address is skipped: "joining"
// itself would count as success and leave a restarted node alone in
// gossip. Afterwards it re-joins any seed that is not a live member every
// 30 seconds, so that a partition longer than memberlist's memory of dead
// nodes still heals, and records the live peers for the next start.
//
// A node an operator removed joins nothing until an operator's explicit
// join (Join). Seeds that all refuse this node as one of another cluster
// end the node: Fatal delivers the reason.
func (c *Cluster) joinLoop() {
	backoff := 500 * time.Millisecond
	joined := false
	var lastTry time.Time
	for {
		targets := c.joinTargets()
		switch {
		case c.node.WasRemoved():
			c.joinedOnce.Store(true)
		case len(targets) == 0:
			c.joinedOnce.Store(true)
		case !joined:
			c.refused.Store(nil)
			n, err := c.ml.Join(targets)
			c.joinedOnce.Store(true)
			if n > 0 {
				c.log.Info("joined gossip", "peers", targets, "contacted", n)
				joined = true
			} else if r := c.refused.Load(); r != nil {
				c.fatal <- *r
				return
			} else {
				c.log.Warn("no seed answered, retrying", "peers", targets, "in", backoff, "err", flatten(err))
				backoff = min(2*backoff, 10*time.Second)
			}
			lastTry = time.Now()
		case time.Since(lastTry) > 30*time.Second && c.missingSeed():
			_, _ = c.ml.Join(targets)
			lastTry = time.Now()
		}
		if joined || len(targets) == 0 {
			c.savePeers()
			backoff = 5 * time.Second
		}
		select {
		case <-c.stop:
			return
		case <-c.peersWake:
		case <-time.After(backoff):
		}
	}
}

// nudge wakes the loop that waits on ch, unless a nudge is pending.
func nudge(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// leaderLoop runs autopilot and the reconciliation of gossip into Raft
// while this node leads, and stops them when it does not.
func (c *Cluster) leaderLoop() {
	ap := c.node.NewAutopilot((*apDelegate)(c),
		autopilot.WithLogger(node.HCLogger(c.cfg.Logger.With("component", "autopilot"))),
		autopilot.WithReconcileInterval(c.scaled(time.Second)),
		autopilot.WithUpdateInterval(c.scaled(time.Second)),
		autopilot.WithPromoter(&promoter{removed: c.node.Removed}))
	tick := time.NewTicker(c.scaled(500 * time.Millisecond))
	defer tick.Stop()
	var stopAP func()
	defer func() {
		if stopAP != nil {
			stopAP()
		}
	}()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		case <-c.wake:
		}
		if !c.node.IsLeader() {
			if stopAP != nil {
				stopAP()
				stopAP = nil
			}
			continue
		}
		if stopAP == nil {
			ctx, cancel := context.WithCancel(context.Background())
			ap.Start(ctx)
			c.ap.Store(ap)
			stopAP = func() { c.ap.Store(nil); cancel(); <-ap.Stop() }
			c.log.Info("autopilot started")
		}
		c.reconcile(ap)
	}
}

func (c *Cluster) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * c.cfg.TimeScale)
}

// reconcile adds live gossip members that Raft does not have, once they
// proved who they are (autopilot adds them as non-voters and promotes them
// once healthy), and removes the servers an operator removed. It never removes a server for being dead.
func (c *Cluster) reconcile(ap *autopilot.Autopilot) {
	servers, err := c.node.Servers()
	if err != nil {
		return
	}
	inRaft := map[string]string{}
	for _, s := range servers {
		inRaft[s.ID] = s.Addr
	}
	for _, s := range servers {
		if !c.node.Removed(s.ID) {
			continue
		}
		if s.ID == c.node.ID() {
			// A leader cannot remove itself cleanly: the node hands over
			// leadership, and the next leader removes it.
			return
		}
		if err := ap.RemoveServer(raft.ServerID(s.ID)); err != nil {
			c.log.Warn("remove server", "id", s.ID, "err", err)
		} else {
			c.log.Info("removed server from raft", "id", s.ID)
		}
	}
	c.mu.Lock()
	var add, readmit []*autopilot.Server
	for id, m := range c.members {
		if m.state != "alive" || m.meta.RaftAddr == "" {
			continue
		}
		s := &autopilot.Server{
			ID: raft.ServerID(id), Name: id, Address: raft.ServerAddress(m.meta.RaftAddr),
			NodeStatus: autopilot.NodeAlive, Version: m.meta.Version,
		}
		if c.node.Removed(id) {
			if m.meta.Rejoin {
				readmit = append(readmit, s)
			}
			continue
		}
		if addr, ok := inRaft[id]; ok && addr == m.meta.RaftAddr {
			continue
		}
		add = append(add, s)
	}
	c.mu.Unlock()
	for _, s := range readmit {
		c.readmit(s)
	}
	for _, s := range add {
		id, err := c.verify(s)
		if err != nil {
			continue
		}
		_, member := inRaft[string(s.ID)]
		if err := c.admissible(s, id, member); err != nil {
			c.refuse(s, err)
			continue
		}
		if err := ap.AddServer(s); err != nil {
			c.log.Warn("add server", "id", s.ID, "err", err)
		} else {
			c.log.Info("added server to raft", "id", s.ID, "addr", s.Address)
		}
	}
}

// verify checks that the member s is the node it claims to be, over the
// internal RPC, before it is added to Raft: with a cluster key that call
// runs over mutual TLS pinned to the key, so a member that cannot prove the
// key is never added, whatever its gossip says. A failure is logged once
// per member and minute.
func (c *Cluster) verify(s *autopilot.Server) (node.PeerIdentity, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.scaled(2*time.Second)+time.Second)
	defer cancel()
	id, err := c.node.VerifyPeer(ctx, string(s.ID), string(s.Address))
	if err != nil {
		c.refuse(s, fmt.Errorf("it did not prove its identity over the cluster RPC: %w", err))
	}
	return id, err
}

// stateLoop keeps this node's gossip metadata in step with its state (its
// cluster's id, a rejoin it asks for) and makes a node that an operator
// removed leave gossip, so that it stops showing up as a live member.
func (c *Cluster) stateLoop() {
	tick := time.NewTicker(c.scaled(500 * time.Millisecond))
	defer tick.Stop()
	left := false
	for {
		// Until the cluster has its id, each apply may bring it: a seed
		// must advertise it at once, or a node of another cluster that
		// joins meanwhile sees no id to refuse (mergeDelegate).
		var applied <-chan struct{}
		if c.node.ClusterID() == "" {
			applied = c.node.Applied()
		}
		select {
		case <-c.stop:
			return
		case <-tick.C:
		case <-applied:
		}
		id, rejoin := c.node.ClusterID(), c.node.Rejoining()
		c.setMeta(func(m *meta) { m.Cluster, m.Rejoin = id, rejoin })
		// A node that starts removed has joined no one: it has nothing to
		// leave, and a memberlist that left cannot join again.
		switch removed := c.node.Removed(c.node.ID()) && !rejoin; {
		case !removed:
			left = false
		case !left && !c.node.IsLeader() && c.ml.NumMembers() > 1:
			c.log.Warn("this node was removed from the cluster by an operator; leaving gossip")
			c.leave()
			left = true
		}
	}
}

// Remove takes node id out of the cluster: a replicated command records it
// as removed (so gossip cannot add it back) and the leader drops it from
// Raft. It returns once this node's view of Raft no longer has it.
func (c *Cluster) Remove(ctx context.Context, id string) error {
	if !c.known(id) {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	if err := c.node.RemoveNode(ctx, id); err != nil {
		return err
	}
	nudge(c.wake)
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for {
		if !c.inRaft(id) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s is marked removed but still in the raft configuration: %w", id, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) known(id string) bool {
	c.mu.Lock()
	_, ok := c.members[id]
	c.mu.Unlock()
	return ok || c.inRaft(id)
}

func (c *Cluster) inRaft(id string) bool {
	servers, _ := c.node.Servers()
	return slices.ContainsFunc(servers, func(s node.Server) bool { return s.ID == id })
}

// promoter is autopilot's stable promoter that never promotes a node an
// operator removed. Autopilot promotes from a state it refreshes only every
// update interval, with AddVoter at prevIndex 0: a non-voter removed since
// the last refresh would come back as a voter. The FSM marks a node removed
// before the leader takes it out of Raft, so checking here, at reconcile
// time, closes that window.
type promoter struct {
	autopilot.StablePromoter
	removed func(id string) bool
}

func (p *promoter) CalculatePromotionsAndDemotions(c *autopilot.Config, s *autopilot.State) autopilot.RaftChanges {
	changes := p.StablePromoter.CalculatePromotionsAndDemotions(c, s)
	changes.Promotions = slices.DeleteFunc(changes.Promotions, func(id raft.ServerID) bool {
		return p.removed(string(id))
	})
	return changes
}

// apDelegate is autopilot's view of the application.
type apDelegate Cluster

func (d *apDelegate) AutopilotConfig() *autopilot.Config {
	c := (*Cluster)(d)
	return &autopilot.Config{
		CleanupDeadServers:      false, // only an operator removes a node
		LastContactThreshold:    c.scaled(2 * time.Second),
		MaxTrailingLogs:         500,
		ServerStabilizationTime: c.scaled(5 * time.Second),
	}
}

func (d *apDelegate) NotifyState(*autopilot.State) {}

func (d *apDelegate) FetchServerStats(ctx context.Context, servers map[raft.ServerID]*autopilot.Server) map[raft.ServerID]*autopilot.ServerStats {
	c := (*Cluster)(d)
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := make(map[raft.ServerID]*autopilot.ServerStats, len(servers))
	for id, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := c.node.ServerStats(ctx, string(id), string(s.Address))
			if err != nil {
				return
			}
			mu.Lock()
			out[id] = &autopilot.ServerStats{LastContact: st.LastContact, LastTerm: st.LastTerm, LastIndex: st.LastIndex}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func (d *apDelegate) KnownServers() map[raft.ServerID]*autopilot.Server {
	c := (*Cluster)(d)
	var leader string
	servers, _ := c.node.Servers()
	if i := slices.IndexFunc(servers, func(s node.Server) bool { return s.Leader }); i >= 0 {
		leader = servers[i].ID
	}
	out := map[raft.ServerID]*autopilot.Server{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, m := range c.members {
		status := autopilot.NodeAlive
		switch m.state {
		case "dead":
			status = autopilot.NodeFailed
		case "left":
			status = autopilot.NodeLeft
		}
		out[raft.ServerID(id)] = &autopilot.Server{
			ID: raft.ServerID(id), Name: id, Address: raft.ServerAddress(m.meta.RaftAddr),
			NodeStatus: status, Version: m.meta.Version, RaftVersion: raft.ProtocolVersionMax,
			IsLeader: id == leader,
		}
	}
	return out
}

func (d *apDelegate) RemoveFailedServer(*autopilot.Server) {}
