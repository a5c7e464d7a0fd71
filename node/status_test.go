package node

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestLeaderSeesADownFollowerAtOnce: the leader marks a follower whose
// heartbeats fail within a few heartbeats, not after gossip's seconds,
// and clears the mark when it answers again.
func TestLeaderSeesADownFollowerAtOnce(t *testing.T) {
	nodes := openCluster(t, 3)
	leader, followers := leaderOf(t, nodes)
	down := followers[0]
	unreachable := func() (map[string]bool, error) {
		servers, err := leader.Servers()
		marks := map[string]bool{}
		for _, s := range servers {
			marks[s.ID] = s.Unreachable
		}
		return marks, err
	}
	if marks, err := unreachable(); err != nil || marks[down.ID()] || marks[followers[1].ID()] {
		t.Fatalf("before: %v %v, want no server marked", marks, err)
	}
	cfg := down.cfg
	down.Close()
	start := time.Now()
	waitUntil(t, 5*time.Second, "the stopped follower marked", func() error {
		marks, err := unreachable()
		if err != nil || !marks[down.ID()] || marks[followers[1].ID()] {
			return fmt.Errorf("%v %v", marks, err)
		}
		return nil
	})
	t.Logf("marked after %s", time.Since(start))

	back, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { back.Close() })
	waitUntil(t, 10*time.Second, "the returned follower unmarked", func() error {
		if marks, err := unreachable(); err != nil || marks[down.ID()] {
			return fmt.Errorf("%v %v", marks, err)
		}
		return nil
	})
}
