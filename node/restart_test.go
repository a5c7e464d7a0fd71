package node

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestSoleVoterCampaignsAtOnce: a node alone in its configuration does not
// wait out its heartbeat timeout at start, neither when it bootstraps nor
// when it restarts, and it leads with its configured timeouts.
func TestSoleVoterCampaignsAtOnce(t *testing.T) {
	// Heartbeat timeouts of 60 to 120 s: only a campaign at once makes
	// the node ready within openNode's 10 s.
	n := openNode(t, func(c *Config) { c.TimeScale = 60 })
	checkConfiguredTimeouts(t, n)
	cfg := n.cfg
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	waitUntil(t, 10*time.Second, "ready after a restart", m.Ready)
	checkConfiguredTimeouts(t, m)
}

// TestClusterKeepsItsTimeouts: nodes with peers never shorten their
// election.
func TestClusterKeepsItsTimeouts(t *testing.T) {
	for _, n := range openCluster(t, 3) {
		checkConfiguredTimeouts(t, n)
	}
}

// checkConfiguredTimeouts waits until n runs on the timeouts it was
// configured with: the leader loop restores them soon after the election.
func checkConfiguredTimeouts(t *testing.T, n *Node) {
	t.Helper()
	want := n.raftConfig(nil)
	waitUntil(t, 5*time.Second, n.ID()+" on its configured timeouts", func() error {
		got := n.raft.ReloadableConfig()
		if got.HeartbeatTimeout != want.HeartbeatTimeout || got.ElectionTimeout != want.ElectionTimeout {
			return fmt.Errorf("timeouts %s/%s, want %s/%s", got.HeartbeatTimeout, got.ElectionTimeout,
				want.HeartbeatTimeout, want.ElectionTimeout)
		}
		return nil
	})
}
