package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/pastenode/pastenode/fsm"
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

// TestCleanStopSnapshotsALongTail: a clean stop snapshots when the log
// after the last snapshot is long next to the store, so the restart
// replays nothing; a short tail is left to replay.
func TestCleanStopSnapshotsALongTail(t *testing.T) {
	n := openNode(t)
	for range 30 {
		createOn(t, n, "x")
	}
	cfg := n.cfg
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	// Read after the stop: a new term's barrier (leaderBarrier, then
	// announceCommit) may still land after the creates.
	applied := n.raft.AppliedIndex()
	if got := newestSnapshot(t, cfg.DataDir); got != applied {
		t.Fatalf("after a clean stop the newest snapshot is at %d, want %d", got, applied)
	}

	m := openNode(t, func(c *Config) { *c = cfg })
	createOn(t, m, "y")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := newestSnapshot(t, cfg.DataDir); got != applied {
		t.Fatalf("one paste after a snapshot of 30, a clean stop snapshotted at %d", got)
	}

	// A tail of a sixth of the store, 7 creates after a snapshot of 30 (the
	// one above and 6 more), is snapshotted.
	m = openNode(t, func(c *Config) { *c = cfg })
	for range 6 {
		createOn(t, m, "z")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	applied = m.raft.AppliedIndex()
	if got := newestSnapshot(t, cfg.DataDir); got != applied {
		t.Fatalf("7 pastes after a snapshot of 30, the newest snapshot is at %d, want %d", got, applied)
	}
}

// newestSnapshot returns the index of the newest snapshot in dir, 0 if none.
func newestSnapshot(t *testing.T, dir string) uint64 {
	t.Helper()
	snaps, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	metas, err := snaps.List()
	if err != nil || len(metas) == 0 {
		t.Fatalf("no snapshot in %s: %v", dir, err)
	}
	return metas[0].Index
}

// TestIdleNodeCompacts: segments that a large expiry left to compact, more
// than one apply compacts, are compacted while the node takes no writes
// (the apply loop's tick calls fsm.Compact), not held until writes come.
func TestIdleNodeCompacts(t *testing.T) {
	n := openNode(t)
	// 96 MiB in six segments, two thirds of it to expire: a third of each
	// segment to copy, more than one apply compacts.
	const pastes, size = 192, 512 << 10
	content := bytes.Repeat([]byte("c"), size)
	var wg sync.WaitGroup
	errs := make(chan error, pastes)
	for w := range 4 {
		wg.Go(func() {
			for i := range pastes / 4 {
				expire := time.Duration(0)
				if (w+i)%3 != 0 {
					expire = time.Hour
				}
				_, err := n.Create(context.Background(), CreateRequest{Content: content, Expire: expire, DeleteToken: "t"})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	data, err := fsm.Encode(&fsm.Command{Type: fsm.TypeExpire, Now: time.Now().Add(2 * time.Hour).UnixNano()})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.raft.Apply(data, 10*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if left := n.fsm.Compacting(); left == 0 {
		t.Fatal("the expiry left no segment to compact; the test needs more emptied")
	}
	if count, _ := n.fsm.Stats(); count == 0 || count > pastes/2 {
		t.Fatalf("%d pastes left after the expiry, want about a third of %d", count, pastes)
	}
	index := n.fsm.Index()
	waitUntil(t, 10*time.Second, "segments compacted while idle", func() error {
		if left := n.fsm.Compacting(); left > 0 {
			return fmt.Errorf("%d segments wait", left)
		}
		return nil
	})
	if n.fsm.Index() != index {
		t.Fatalf("the log moved from %d to %d: compaction came with writes", index, n.fsm.Index())
	}
}
