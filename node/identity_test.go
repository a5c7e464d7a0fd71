package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func readTrimmed(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestLoneNodeGetsAnIdentity: a node that bootstraps alone gives its
// cluster an id and an admin token, keeps both in its data dir (the token
// 0600), and knows the id at its next start before Raft has run.
func TestLoneNodeGetsAnIdentity(t *testing.T) {
	dir := t.TempDir()
	n := openNode(t, func(c *Config) { c.DataDir = dir })
	waitFor(t, 5*time.Second, "a cluster id", func() bool { return n.ClusterID() != "" })
	id := n.ClusterID()
	waitFor(t, 5*time.Second, "the cluster id file", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, clusterIDFile))
		return strings.TrimSpace(string(b)) == id
	})
	token := readTrimmed(t, n.AdminTokenFile())
	if st, err := os.Stat(n.AdminTokenFile()); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file: %v, %v; want mode 0600", st, err)
	}
	if !n.IsAdminToken(token) {
		t.Error("the token in the data dir is not the cluster's")
	}
	if n.IsAdminToken(token+"x") || n.IsAdminToken("") {
		t.Error("a wrong token passes")
	}
	cfg := n.cfg
	n.Close()

	again, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := again.ClusterID(); got != id {
		t.Errorf("cluster id right after a restart: %q, want %q", got, id)
	}
}

// TestExplicitAdminTokenBecomesTheClusters: --admin-token on the node that
// gives the cluster its identity is the cluster's token.
func TestExplicitAdminTokenBecomesTheClusters(t *testing.T) {
	n := openNode(t, func(c *Config) { c.AdminToken = "given-token" })
	waitFor(t, 5*time.Second, "a cluster id", func() bool { return n.ClusterID() != "" })
	if !n.IsAdminToken("given-token") {
		t.Error("the cluster's token is not the one given")
	}
}

// TestMembersShareOneAdminToken: every member of a cluster ends up with
// the one admin token in its data dir, and a rotation on a follower
// reaches them all and retires the old token.
func TestMembersShareOneAdminToken(t *testing.T) {
	nodes := openCluster(t, 3)
	leader, followers := leaderOf(t, nodes)
	waitUntil(t, 10*time.Second, "every member holds the token", func() error {
		for _, n := range nodes {
			if n.needsAdminToken() || n.ClusterID() != leader.ClusterID() || n.ClusterID() == "" {
				return errors.New(n.ID() + " lacks the token or the id")
			}
		}
		return nil
	})
	old := readTrimmed(t, leader.AdminTokenFile())
	for _, n := range followers {
		if got := readTrimmed(t, n.AdminTokenFile()); got != old {
			t.Errorf("%s holds token %q, the leader %q", n.ID(), got, old)
		}
	}

	fresh, err := followers[0].RotateAdminToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "every member holds the new token", func() error {
		for _, n := range nodes {
			b, _ := os.ReadFile(n.AdminTokenFile())
			if strings.TrimSpace(string(b)) != fresh {
				return errors.New(n.ID() + " still holds the old token")
			}
		}
		return nil
	})
	for _, n := range nodes {
		if n.IsAdminToken(old) || !n.IsAdminToken(fresh) {
			t.Errorf("%s after the rotation: old accepted %v, new accepted %v", n.ID(), n.IsAdminToken(old), n.IsAdminToken(fresh))
		}
	}
}

// TestLeaderDoesNotBackOffFromADownFollower: while a follower is down the
// leader's Raft sees no failed heartbeat (which would make it back off up
// to ten seconds and log twice a second), and a restarted follower catches
// up at once.
func TestLeaderDoesNotBackOffFromADownFollower(t *testing.T) {
	nodes := openCluster(t, 3)
	leader, followers := leaderOf(t, nodes)
	obs := make(chan raft.Observation, 64)
	observer := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, failed := o.Data.(raft.FailedHeartbeatObservation)
		return failed
	})
	leader.raft.RegisterObserver(observer)
	defer leader.raft.DeregisterObserver(observer)

	down := followers[0]
	cfg := down.cfg
	down.Close()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		createOn(t, leader, "while a follower is down")
	}
	if len(obs) > 0 {
		t.Errorf("Raft saw %d failed heartbeats to the stopped follower; it backs off from it", len(obs))
	}

	start := time.Now()
	back, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	want := leader.raft.LastIndex()
	waitUntil(t, 5*time.Second, "the restarted follower catches up", func() error {
		if back.fsm.Index() < want-1 {
			return errors.New("behind")
		}
		return nil
	})
	t.Logf("restarted follower caught up %s after its start", time.Since(start).Round(time.Millisecond))
}

// TestAdminTokenFileChecks: a token file that others may read, or an empty
// one, stops the start with a message that says what to do.
func TestAdminTokenFileChecks(t *testing.T) {
	for _, tc := range []struct {
		content string
		mode    os.FileMode
		want    string
	}{
		{"tok\n", 0o644, "chmod 600"},
		{"\n", 0o600, "delete it"},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, adminTokenFile)
		os.WriteFile(path, []byte(tc.content), tc.mode)
		os.Chmod(path, tc.mode)
		n, err := New(Config{ID: "n1", DataDir: dir, RaftAddr: "127.0.0.1:0", AdvertiseAddr: "127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		err = n.Open(context.Background())
		n.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("token file %q mode %v: Open = %v, want an error saying %q", tc.content, tc.mode, err, tc.want)
		}
	}
}

// TestWipedVoterAbstains: a voter restarted on an empty data dir refuses
// votes until it has caught up with a leader (it could otherwise help
// elect a leader that lacks what it acknowledged before), then catches up
// and votes again.
func TestWipedVoterAbstains(t *testing.T) {
	nodes := openCluster(t, 3)
	leader, followers := leaderOf(t, nodes)
	for range 20 {
		createOn(t, leader, "before the wipe")
	}
	wiped := followers[0]
	cfg := wiped.cfg
	wiped.Close()
	cfg.DataDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "node-id"), []byte(cfg.ID+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	closeGate(withHooks(back)) // hold its applies back, so it cannot catch up yet
	t.Cleanup(func() { openGate(back); back.Close() })
	if err := back.Open(context.Background()); err != nil {
		t.Fatal(err)
	}

	req := &raft.RequestVoteRequest{
		RPCHeader:    raft.RPCHeader{ID: []byte("n9"), Addr: []byte(followers[1].cfg.RaftAddr)},
		Term:         leader.raft.CurrentTerm() + 10,
		LastLogIndex: 1, LastLogTerm: 1,
	}
	// The first call may meet a pooled connection to the process that was
	// closed: poll until the new one answers.
	waitUntil(t, 5*time.Second, "the wiped voter answers a vote request", func() error {
		var resp raft.RequestVoteResponse
		err := followers[1].trans.RequestVote(raft.ServerID(cfg.ID), raft.ServerAddress(cfg.RaftAddr), req, &resp)
		if resp.Granted {
			t.Fatal("a voter that lost its state granted a vote")
		}
		if err == nil || !strings.Contains(err.Error(), "caught up") {
			return fmt.Errorf("vote request: %v, want it refused as abstaining", err)
		}
		return nil
	})

	openGate(back)
	waitUntil(t, 10*time.Second, "the wiped voter catches up", func() error {
		if back.abstain.Load() {
			return errors.New("still abstains")
		}
		if got, _ := back.Stats(); got < 20 {
			return errors.New("pastes missing")
		}
		return nil
	})
}
