package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/pastenode/pastenode/node"
)

// bootstrapLoop forms a new cluster once BootstrapExpect nodes see each
// other, with no special first node. Consul bootstraps as soon as a node
// counts N peers, which lets two nodes that saw different sets bootstrap
// different configurations. Here every node first advertises the set it
// would bootstrap (as a hash), and bootstraps only when all N advertise
// the same set, none has Raft state, and that has held for a settle time.
// Identical configurations bootstrapped on every node are safe.
//
// A node that has bootstrapped keeps advertising its proposal until its
// cluster has a leader: a member that saw it bootstrap first then still
// bootstraps the same configuration, rather than waiting to be added by a
// leader it would have to help elect. It must bootstrap: a node without
// state abstains from votes (node/rafttransport.go), as it may be a
// voter that lost its disk. Once a leader exists, entries may be
// committed, and a node without state may no longer bootstrap.
func (c *Cluster) bootstrapLoop() {
	expect := c.cfg.BootstrapExpect
	if expect < 2 {
		return
	}
	settle := c.scaled(2 * time.Second)
	tick := time.NewTicker(c.scaled(200 * time.Millisecond))
	defer tick.Stop()
	var agreedSince time.Time
	var agreed string
	bootstrapped := false
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		if c.node.HasState() {
			if bootstrapped && !c.leaderKnown() {
				continue
			}
			c.setMeta(func(m *meta) { m.HasState, m.Proposal = true, "" })
			return
		}
		servers, proposals, existing := c.bootstrapView(expect)
		if existing {
			agreedSince = time.Time{}
			continue // a cluster exists: wait for its leader to add us
		}
		if servers == nil {
			c.setMeta(func(m *meta) { m.Proposal = "" })
			agreedSince = time.Time{}
			continue
		}
		hash := proposalHash(servers)
		c.setMeta(func(m *meta) { m.Proposal = hash })
		if slices.ContainsFunc(proposals, func(p string) bool { return p != hash }) {
			agreedSince = time.Time{}
			continue
		}
		if agreedSince.IsZero() || agreed != hash {
			agreedSince, agreed = time.Now(), hash
			continue
		}
		if time.Since(agreedSince) < settle {
			continue
		}
		c.log.Info("bootstrapping cluster", "expect", expect, "servers", serverIDs(servers))
		if err := c.node.Bootstrap(servers); err != nil {
			c.log.Error("bootstrap failed", "err", err)
			continue
		}
		bootstrapped = true
		c.setMeta(func(m *meta) { m.HasState = true })
	}
}

// leaderKnown reports whether this node's Raft knows a leader.
func (c *Cluster) leaderKnown() bool {
	servers, _ := c.node.Servers()
	return slices.ContainsFunc(servers, func(s node.Server) bool { return s.Leader })
}

// bootstrapView returns, from the live gossip members: the servers to
// bootstrap when exactly expect members want to bootstrap with the same
// expect (else nil), those that bootstrapped and still propose included;
// what each of them proposes; and whether any member has Raft state and
// proposes nothing, a cluster that exists.
//
// It reads the members the event delegate recorded, not ml.Members(): the
// nodes that returns are memberlist's own, which it goes on updating
// without a lock the caller could take (a data race on Meta).
func (c *Cluster) bootstrapView(expect int) (servers []raft.Server, proposals []string, existing bool) {
	c.mu.Lock()
	view := map[string]meta{c.node.ID(): c.self}
	for id, g := range c.members {
		if g.state == "alive" && id != c.node.ID() {
			view[id] = g.meta
		}
	}
	c.mu.Unlock()
	for id, m := range view {
		if m.HasState && m.Proposal == "" {
			return nil, nil, true
		}
		if m.Expect != expect {
			continue
		}
		servers = append(servers, raft.Server{
			Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(m.RaftAddr),
		})
		proposals = append(proposals, m.Proposal)
	}
	if len(servers) != expect {
		if len(servers) > expect {
			c.log.Warn("more nodes than --bootstrap-expect want to bootstrap; waiting", "expect", expect, "seen", len(servers))
		}
		return nil, nil, false
	}
	slices.SortFunc(servers, func(a, b raft.Server) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return servers, proposals, false
}

func proposalHash(servers []raft.Server) string {
	h := sha256.New()
	for _, s := range servers {
		h.Write([]byte(string(s.ID) + "\x00" + string(s.Address) + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

func serverIDs(servers []raft.Server) string {
	ids := make([]string, len(servers))
	for i, s := range servers {
		ids[i] = string(s.ID)
	}
	return strings.Join(ids, ",")
}
