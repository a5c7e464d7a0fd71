package cluster_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pastenode/pastenode/cluster"
	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/node"
)

// TestMemberThatCannotProveTheKeyIsNeverAdded starts a member that gossips
// with the cluster key but whose Raft port holds another key, as a node
// that learnt only the gossip traffic would. Gossip lists it; the leader
// never makes it a voter or a non-voter.
func TestMemberThatCannotProveTheKeyIsNeverAdded(t *testing.T) {
	tc := startCluster(t, 3, clusterOptions{})
	x := tc.add("impostor", tc.key, tc.nodes[0].gossipAddr)
	tc.nodes[x].raftKey = randomKey(t)
	tc.start(x)
	waitFor(t, 10*time.Second, func() bool { return tc.seesAlive(tc.leaderOf(0, 1, 2), x) }, "the leader to see the impostor in gossip")
	holdsFor(t, 4*time.Second, func() bool {
		for i := range 3 {
			if inRaft(tc.nodes[i].node, "impostor") {
				return false
			}
		}
		return true
	}, "the impostor staying out of raft")
	if !strings.Contains(tc.logs.tail(400), "did not prove its identity") {
		t.Error("the leader did not log why it left the impostor out")
	}
	// A member with the right key on both ports is still added.
	y := tc.add("honest", tc.key, tc.nodes[0].gossipAddr)
	tc.start(y)
	waitFor(t, 15*time.Second, func() bool { return inRaft(tc.nodes[tc.leaderOf(0, 1, 2)].node, "honest") }, "the honest member in raft")
}

func TestGossipBeyondLoopbackNeedsAKey(t *testing.T) {
	var n *node.Node // Validate only checks that there is one
	for _, tt := range []struct {
		addr     string
		key      []byte
		insecure bool
		ok       bool
	}{
		{"127.0.0.1:7946", nil, false, true},
		{"0.0.0.0:7946", nil, false, false},
		{"10.1.2.3:7946", nil, false, false},
		{"10.1.2.3:7946", nil, true, true},
		{"10.1.2.3:7946", make([]byte, 32), false, true},
	} {
		c := cluster.Config{Node: n, GossipAddr: tt.addr, ClusterKey: tt.key, InsecureCluster: tt.insecure}
		err := c.Validate()
		if tt.ok != (err == nil) {
			t.Errorf("%s key=%d insecure=%v: Validate() = %v", tt.addr, len(tt.key), tt.insecure, err)
		}
		if err != nil && (!errors.Is(err, node.ErrNeedKey) || !strings.Contains(err.Error(), "pastenode keygen")) {
			t.Errorf("%s: error %q does not say how to make a key", tt.addr, err)
		}
	}
}

// TestPoisonEntryLeavesTheClusterServing commits garbage straight through
// the leader's Raft, as a forged internal call could before the leader
// checked commands, and checks that every node skips it alike, keeps
// serving and restarts over it.
func TestPoisonEntryLeavesTheClusterServing(t *testing.T) {
	tc := startCluster(t, 3, clusterOptions{})
	l := tc.leader()
	before := createPaste(t, tc.nodes[l].node, "before the poison", false)
	f := tc.nodes[l].node.Raft().Apply([]byte{0xc1}, 5*time.Second)
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	res, ok := f.Response().(*fsm.Result)
	if !ok || !errors.Is(res.Err, fsm.ErrBadCommand) {
		t.Fatalf("leader's result for the poison entry = %#v, want ErrBadCommand", f.Response())
	}
	poison := f.Index()
	for i := range 3 {
		n := tc.nodes[i].node
		waitFor(t, 10*time.Second, func() bool { return n.Raft().AppliedIndex() >= poison }, n.ID()+" to apply past the poison entry")
	}
	after := postPaste(t, tc.nodes[tc.followers()[0]].URL, "after the poison", false)
	f1 := tc.followers()[1]
	tc.stop(f1)
	tc.restart(f1)
	for _, i := range []int{0, 1, 2} {
		for id, want := range map[string]string{before: "before the poison", after: "after the poison"} {
			waitFor(t, 10*time.Second, func() bool {
				status, body, err := getRaw(tc.nodes[i].URL, id)
				return err == nil && status == 200 && body == want
			}, fmt.Sprintf("%s on %s after the poison and a restart", id, tc.nodes[i].id))
		}
	}
}
