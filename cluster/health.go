package cluster

import (
	"slices"
	"strings"
	"time"

	autopilot "github.com/hashicorp/raft-autopilot"
)

// PeerHealth is the leader's autopilot view of one Raft server.
type PeerHealth struct {
	ID      string
	Voter   bool // a voter or the leader, not a non-voter being caught up
	Healthy bool // autopilot's verdict: in contact and not too far behind
	// Lag is how many log entries the server is behind the leader's last index.
	Lag uint64
	// LastContact is how long ago the leader last heard from it; 0 for the leader.
	LastContact time.Duration
}

// Health is autopilot's view of the cluster. It is known only on the
// leader: elsewhere, and before autopilot's first pass, ok is false.
// Tolerance is how many voters could fail without losing the quorum.
func (c *Cluster) Health() (peers []PeerHealth, tolerance int, ok bool) {
	ap := c.ap.Load()
	if ap == nil {
		return nil, 0, false
	}
	st := ap.GetState()
	if st == nil || st.Servers[st.Leader] == nil {
		return nil, 0, false
	}
	last := st.Servers[st.Leader].Stats.LastIndex
	for id, s := range st.Servers {
		p := PeerHealth{
			ID:          string(id),
			Voter:       s.HasVotingRights(),
			Healthy:     s.Health.Healthy,
			LastContact: max(s.Stats.LastContact, 0),
		}
		if s.State == autopilot.RaftLeader {
			p.LastContact = 0
		}
		if last > s.Stats.LastIndex {
			p.Lag = last - s.Stats.LastIndex
		}
		peers = append(peers, p)
	}
	slices.SortFunc(peers, func(a, b PeerHealth) int { return strings.Compare(a.ID, b.ID) })
	return peers, st.FailureTolerance, true
}
