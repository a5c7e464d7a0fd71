package node

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// Info describes this node's view of Raft.
type Info struct {
	ID           string
	ClusterID    string
	State        string // leader, follower, candidate, shutdown
	LeaderID     string
	LeaderAddr   string
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	// LastContact is how long ago the leader was last heard from: 0 on the
	// leader, -1 if never.
	LastContact time.Duration
}

// Info returns the node's Raft state.
func (n *Node) Info() Info {
	addr, id := n.raft.LeaderWithID()
	in := Info{
		ID:           n.cfg.ID,
		ClusterID:    n.ClusterID(),
		State:        strings.ToLower(n.raft.State().String()),
		LeaderID:     string(id),
		LeaderAddr:   string(addr),
		Term:         n.raft.CurrentTerm(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.raft.AppliedIndex(),
		LastContact:  -1,
	}
	if n.raft.State() == raft.Leader {
		in.LastContact = 0
	} else if t := n.raft.LastContact(); !t.IsZero() {
		in.LastContact = time.Since(t)
	}
	return in
}

// LeaderChanges returns how many times this node learnt of a new Raft
// leader, itself included, since it opened.
func (n *Node) LeaderChanges() uint64 { return n.leaderChanges.Load() }

// countLeaderChanges counts the leaders Raft observes from now on; Open
// calls it before Raft can elect one. The filter runs on Raft's goroutine
// for every observation and passes none on, so the channel is never
// written and needs no reader.
func (n *Node) countLeaderChanges() {
	n.raft.RegisterObserver(raft.NewObserver(make(chan raft.Observation), false, func(o *raft.Observation) bool {
		if lo, ok := o.Data.(raft.LeaderObservation); ok {
			n.forwards.leaderChanged()
			if lo.LeaderID != "" {
				n.leaderChanges.Add(1)
			}
		}
		return false
	}))
}

// Server is one entry of the Raft configuration.
type Server struct {
	ID       string
	Addr     string
	Suffrage string // voter, nonvoter
	Leader   bool   // this node knows it as the leader
	// Unreachable is set on the leader for a server that its last call
	// (entries or a heartbeat) failed to reach: Raft knows of a server
	// that went down within a heartbeat, long before gossip declares it
	// dead.
	Unreachable bool
}

// Servers returns the current Raft configuration.
func (n *Node) Servers() ([]Server, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("raft configuration: %w", err)
	}
	_, leader := n.raft.LeaderWithID()
	leads := n.raft.State() == raft.Leader
	var out []Server
	for _, s := range f.Configuration().Servers {
		suf := "voter"
		if s.Suffrage != raft.Voter {
			suf = "nonvoter"
		}
		out = append(out, Server{ID: string(s.ID), Addr: string(s.Address), Suffrage: suf, Leader: s.ID == leader,
			Unreachable: leads && n.transport.isDown(s.ID)})
	}
	return out, nil
}
