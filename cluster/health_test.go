package cluster_test

import (
	"testing"
	"time"

	"github.com/pastenode/pastenode/cluster"
)

// TestHealth checks the leader's autopilot view that the per-peer metrics
// report: every voter healthy and in step at first, then a crashed voter
// unhealthy and the failure tolerance gone; followers know nothing.
func TestHealth(t *testing.T) {
	tc := startCluster(t, 3, clusterOptions{})
	l := tc.leader()
	var peers []cluster.PeerHealth
	var tol int
	waitFor(t, 15*time.Second, func() bool {
		var ok bool
		peers, tol, ok = tc.nodes[l].cl.Health()
		if !ok || len(peers) != 3 || tol != 1 {
			return false
		}
		for _, p := range peers {
			if !p.Healthy || !p.Voter {
				return false
			}
		}
		return true
	}, "three healthy voters and a tolerance of 1 on the leader")
	for i, p := range peers {
		if p.ID != tc.nodes[i].id {
			t.Errorf("peer %d is %q, want %q (sorted by id)", i, p.ID, tc.nodes[i].id)
		}
	}
	for _, f := range tc.followers() {
		if _, _, ok := tc.nodes[f].cl.Health(); ok {
			t.Errorf("follower %s reports autopilot health", tc.nodes[f].id)
		}
	}

	down := tc.followers()[0]
	term := tc.nodes[l].node.Info().Term
	tc.kill(down)
	// On a loaded machine the leader may miss its other follower's contact
	// as this one dies and step down; then whoever leads next answers, and
	// only a leader of the same term has heard from the dead voter.
	waitFor(t, 15*time.Second, func() bool {
		l = tc.leader()
		peers, tol, _ = tc.nodes[l].cl.Health()
		sameTerm := tc.nodes[l].node.Info().Term == term
		for _, p := range peers {
			if p.ID == tc.nodes[down].id {
				return !p.Healthy && (p.LastContact > 0 || !sameTerm) && tol == 0
			}
		}
		return false
	}, "the crashed voter unhealthy with a tolerance of 0")
	// A write the dead node cannot see puts it behind.
	createPaste(t, tc.nodes[l].node, "after the crash", false)
	waitFor(t, 10*time.Second, func() bool {
		peers, _, _ = tc.nodes[l].cl.Health()
		for _, p := range peers {
			if p.ID == tc.nodes[down].id {
				return p.Lag > 0
			}
		}
		return false
	}, "the crashed voter to lag")
}
