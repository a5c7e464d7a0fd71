package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/node"
)

// TestBootstrapExpectAnyOrder starts three nodes with BootstrapExpect 3 one
// after another, in several orders, and checks that they form one cluster
// of three voters only once all three are up.
func TestBootstrapExpectAnyOrder(t *testing.T) {
	tests := []struct {
		name  string
		order []int
	}{
		{"in id order", []int{0, 1, 2}},
		{"last id first", []int{2, 0, 1}},
		{"middle id first", []int{1, 2, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := newTestCluster(t, 3, clusterOptions{})
			first, second, third := tt.order[0], tt.order[1], tt.order[2]

			tc.start(first)
			waitFor(t, 5*time.Second, func() bool { return tc.seesAlive(first, first) },
				"the first node to see itself in gossip")
			time.Sleep(100 * time.Millisecond) // only staggers the starts
			tc.start(second)
			waitFor(t, 10*time.Second, func() bool {
				return tc.seesAlive(first, second) && tc.seesAlive(second, first)
			}, "the first two nodes to see each other in gossip")

			// Two of three must not bootstrap, however long they wait. The
			// settle time is 2s × timeScale; watch for well past it.
			holdsFor(t, time.Second, func() bool {
				return !tc.nodes[first].node.HasState() && !tc.nodes[second].node.HasState()
			}, "no bootstrap with two of three nodes")

			tc.start(third)
			tc.leader()
			for i, tn := range tc.nodes {
				waitFor(t, 10*time.Second, func() bool {
					return allAliveVoters(tn.cl.Members(), 3)
				}, fmt.Sprintf("%s to list 3 alive voters, one of them leader", tn.id))
				servers, err := tn.node.Servers()
				if err != nil {
					t.Fatalf("servers of node %d: %v", i, err)
				}
				if got := countVoters(servers); got != 3 {
					t.Errorf("%s: got %d voters in raft, want 3: %+v", tn.id, got, servers)
				}
			}
		})
	}
}

// TestReadYourWrites checks H3: a write acknowledged by any node is read at
// once, with no polling, on every node.
func TestReadYourWrites(t *testing.T) {
	tc := startCluster(t, 3, clusterOptions{})
	ctx := context.Background()

	tests := []struct {
		name   string
		create func(t *testing.T, via int, content string) string
	}{
		{"node apply", func(t *testing.T, via int, content string) string {
			return createPaste(t, tc.nodes[via].node, content, false)
		}},
		{"http post", func(t *testing.T, via int, content string) string {
			return postPaste(t, tc.nodes[via].URL, content, false)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for round := range 20 {
				via := round % len(tc.nodes)
				want := fmt.Sprintf("%s round %d via %s", tt.name, round, tc.nodes[via].id)
				id := tt.create(t, via, want)
				for _, tn := range tc.nodes {
					p, err := tn.node.Read(ctx, id, false)
					if err != nil {
						t.Fatalf("round %d: %s: Read(%s) right after a create via %s: %v",
							round, tn.id, id, tc.nodes[via].id, err)
					}
					if got := string(p.Content); got != want {
						t.Fatalf("round %d: %s: Get(%s) = %q, want %q", round, tn.id, id, got, want)
					}
					status, got, err := getRaw(tn.URL, id)
					if err != nil || status != http.StatusOK || got != want {
						t.Fatalf("round %d: %s: GET /raw/%s = %d %q (%v), want 200 %q",
							round, tn.id, id, status, got, err, want)
					}
				}
			}
		})
	}
}

// TestBurnOnce checks H1: a burn paste read on all three nodes at the same
// moment is handed out exactly once.
func TestBurnOnce(t *testing.T) {
	tc := startCluster(t, 3, clusterOptions{})

	// read reports whether one read on node i handed out the content. Any
	// answer other than the content or "not found" is an error.
	tests := []struct {
		name string
		read func(i int, id, want string) (bool, error)
	}{
		{"node consume", func(i int, id, want string) (bool, error) {
			p, err := tc.nodes[i].node.Consume(context.Background(), id)
			switch {
			case errors.Is(err, fsm.ErrNotFound):
				return false, nil
			case err != nil:
				return false, err
			case string(p.Content) != want:
				return false, fmt.Errorf("got content %q, want %q", p.Content, want)
			}
			return true, nil
		}},
		{"http raw", func(i int, id, want string) (bool, error) {
			status, body, err := getRaw(tc.nodes[i].URL, id)
			switch {
			case err != nil:
				return false, err
			case status == http.StatusNotFound:
				return false, nil
			case status != http.StatusOK:
				return false, fmt.Errorf("got status %d %q, want 200 or 404", status, body)
			case body != want:
				return false, fmt.Errorf("got body %q, want %q", body, want)
			}
			return true, nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for round := range 15 {
				want := fmt.Sprintf("burn %s round %d", tt.name, round)
				id := createPaste(t, tc.nodes[round%len(tc.nodes)].node, want, true)

				start := make(chan struct{})
				var wg sync.WaitGroup
				var delivered atomic.Int32
				errs := make([]error, len(tc.nodes))
				for i := range tc.nodes {
					wg.Go(func() {
						<-start
						ok, err := tt.read(i, id, want)
						if ok {
							delivered.Add(1)
						}
						errs[i] = err
					})
				}
				close(start)
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if got := delivered.Load(); got != 1 {
					t.Fatalf("round %d: burn paste delivered %d times, want 1", round, got)
				}
				if ok, err := tt.read(round%len(tc.nodes), id, want); ok || err != nil {
					t.Fatalf("round %d: a read after the race: got delivered=%v err=%v, want not found", round, ok, err)
				}
			}
		})
	}
}

// TestLeaderFailover stops the leader, writes through the survivors, and
// restarts the old leader from its data dir.
func TestLeaderFailover(t *testing.T) {
	tests := []struct {
		name string
		down func(tc *testCluster, i int)
		// gossip is how the survivors must come to see the node; "" skips
		// the check (the harness's crash still leaves gossip cleanly).
		gossip string
	}{
		{"crash", (*testCluster).kill, ""},
		{"clean stop", (*testCluster).stop, "left"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := startCluster(t, 3, clusterOptions{})
			ctx := context.Background()
			old := tc.leader()
			oldID := tc.nodes[old].id
			want := map[string]string{}
			for i := range 3 {
				c := fmt.Sprintf("before %d", i)
				want[createPaste(t, tc.nodes[i].node, c, false)] = c
			}
			want[createPaste(t, tc.nodes[old].node, "last before down", false)] = "last before down"

			tt.down(tc, old)
			if tt.gossip != "" {
				// A node that stopped stays a voter: only an operator
				// removes one, so a rolling restart never shrinks the
				// cluster.
				waitFor(t, 10*time.Second, func() bool {
					for _, i := range tc.running() {
						m, ok := memberOf(tc.nodes[i].cl.Members(), oldID)
						if !ok || m.Gossip != tt.gossip || m.Suffrage != "voter" {
							return false
						}
					}
					return true
				}, "survivors to see "+oldID+" as a "+tt.gossip+" voter")
			}
			// Read-your-writes holds across the failover: a survivor that
			// has not applied the last write yet waits out the election.
			for _, i := range tc.running() {
				tc.checkAll(ctx, i, want)
			}
			l := tc.leader()
			if tc.nodes[l].id == oldID {
				t.Fatalf("got leader %s after it went down", oldID)
			}
			survivors := tc.running()
			for i := range 10 {
				via := survivors[i%len(survivors)]
				c := fmt.Sprintf("during %d via %s", i, tc.nodes[via].id)
				want[createPaste(t, tc.nodes[via].node, c, false)] = c
			}
			for _, i := range survivors {
				tc.checkAll(ctx, i, want)
			}

			tc.restart(old)
			// Its own log must catch up, not only the read index answer.
			waitFor(t, 10*time.Second, func() bool {
				applied := map[string]bool{}
				tc.nodes[old].node.View().Walk(func(p *fsm.Paste) bool {
					applied[p.ID] = true
					return true
				})
				for id := range want {
					if !applied[id] {
						return false
					}
				}
				return true
			}, oldID+" to apply every paste written while it was down")
			tc.checkAll(ctx, old, want)

			c := "after restart via " + oldID
			id := createPaste(t, tc.nodes[old].node, c, false)
			want[id] = c
			for _, i := range tc.running() {
				tc.checkAll(ctx, i, want)
			}
			servers, err := tc.nodes[tc.leader()].node.Servers()
			if err != nil {
				t.Fatal(err)
			}
			if got := countVoters(servers); got != 3 {
				t.Errorf("got %d voters after the restart, want 3: %+v", got, servers)
			}
		})
	}
}

// TestJoinAndRemove adds a fourth node through gossip, then removes it
// through a follower, and checks that gossip does not bring it back.
func TestJoinAndRemove(t *testing.T) {
	tc := startCluster(t, 3, clusterOptions{})
	ctx := context.Background()
	before := createPaste(t, tc.nodes[0].node, "before the join", false)

	j := tc.add("n3", tc.key, tc.nodes[0].gossipAddr)
	joiner := tc.nodes[j]
	tc.start(j)
	// Every node learns the promotion through Raft. Only the seed is sure
	// to see the joiner in gossip at once: with four nodes, memberlist's
	// local config sends a broadcast to two of the three peers, and the
	// third may wait for a push/pull, up to 30s away.
	for _, i := range []int{0, 1, 2, j} {
		tn := tc.nodes[i]
		waitFor(t, 20*time.Second, func() bool {
			m, ok := memberOf(tn.cl.Members(), joiner.id)
			return ok && m.Suffrage == "voter"
		}, fmt.Sprintf("%s to list %s as a voter", tn.id, joiner.id))
	}
	if m, _ := memberOf(tc.nodes[0].cl.Members(), joiner.id); m.Gossip != "alive" && m.Gossip != "suspect" {
		t.Errorf("the seed sees %s in gossip as %q, want alive", joiner.id, m.Gossip)
	}
	if p, err := joiner.node.Read(ctx, before, false); err != nil || string(p.Content) != "before the join" {
		t.Fatalf("joiner: Read(%s) = %v, %v; want the paste written before it joined", before, p, err)
	}

	var via int
	for _, i := range tc.followers() {
		if i != j {
			via = i
			break
		}
	}
	if err := tc.nodes[via].cl.Remove(ctx, joiner.id); err != nil {
		t.Fatalf("remove %s through %s: %v", joiner.id, tc.nodes[via].id, err)
	}
	if inRaft(tc.nodes[via].node, joiner.id) {
		t.Fatalf("%s still in the raft configuration of %s after Remove returned", joiner.id, tc.nodes[via].id)
	}
	out := func(i int) bool {
		tn := tc.nodes[i]
		m, listed := memberOf(tn.cl.Members(), joiner.id)
		return !inRaft(tn.node, joiner.id) && (!listed || m.Suffrage == "none")
	}
	for i := range 3 {
		waitFor(t, 10*time.Second, func() bool { return out(i) },
			fmt.Sprintf("%s to drop %s", tc.nodes[i].id, joiner.id))
	}
	// The removed node leaves gossip by itself.
	waitFor(t, 10*time.Second, func() bool {
		m, _ := memberOf(joiner.cl.Members(), joiner.id)
		return m.Gossip != "alive"
	}, joiner.id+" to leave gossip")
	// Reconcile runs every 100ms at this time scale: 3s is thirty rounds.
	holdsFor(t, 3*time.Second, func() bool { return out(0) && out(1) && out(2) },
		joiner.id+" staying out of the cluster")
	// The rest still works.
	id := createPaste(t, tc.nodes[via].node, "after the remove", false)
	for i := range 3 {
		tc.checkAll(ctx, i, map[string]string{id: "after the remove"})
	}
}

// TestRemoveLeader removes the leader itself: it hands leadership over, the
// next leader takes it out of Raft, and the other two go on without it.
func TestRemoveLeader(t *testing.T) {
	tc := startCluster(t, 3, clusterOptions{})
	ctx := context.Background()
	old := tc.leader()
	oldID := tc.nodes[old].id
	rest := tc.followers()
	if err := tc.nodes[rest[0]].cl.Remove(ctx, oldID); err != nil {
		t.Fatalf("remove the leader %s through %s: %v", oldID, tc.nodes[rest[0]].id, err)
	}
	for _, i := range rest {
		waitFor(t, 10*time.Second, func() bool { return !inRaft(tc.nodes[i].node, oldID) },
			fmt.Sprintf("%s to drop the old leader %s", tc.nodes[i].id, oldID))
	}
	if l := tc.leaderOf(rest...); l == old {
		t.Fatalf("the removed node %s still leads", oldID)
	}
	id := createPaste(t, tc.nodes[rest[1]].node, "after removing the leader", false)
	for _, i := range rest {
		tc.checkAll(ctx, i, map[string]string{id: "after removing the leader"})
	}
}

// TestWrongClusterKey checks that a node without the cluster's key gets
// into neither gossip nor Raft.
func TestWrongClusterKey(t *testing.T) {
	tc := startCluster(t, 3, clusterOptions{})
	seeds := []string{tc.nodes[0].gossipAddr, tc.nodes[1].gossipAddr}
	tests := []struct {
		name string
		id   string
		key  []byte
	}{
		{"different key", "intruder-key", randomKey(t)},
		{"no key", "intruder-nokey", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := tc.add(tt.id, tt.key, seeds...)
			tc.start(x)
			defer tc.stop(x)
			if err := tc.nodes[x].cl.Join(context.Background(), seeds); err == nil {
				t.Errorf("join with the wrong key: got no error, want one")
			}
			holdsFor(t, 3*time.Second, func() bool {
				for i := range 3 {
					tn := tc.nodes[i]
					if _, listed := memberOf(tn.cl.Members(), tt.id); listed {
						return false
					}
					if inRaft(tn.node, tt.id) {
						return false
					}
				}
				return !tc.nodes[x].node.HasState() && !tc.seesAlive(x, 0)
			}, tt.id+" staying out of gossip and raft")
		})
	}
}

// TestNoQuorum checks that a lone node of three refuses writes with
// ErrNoLeader within its write hold, answers reads of what it has only until
// its read lease runs out (then 503), and stale reads from its copy always.
func TestNoQuorum(t *testing.T) {
	tests := []struct {
		name   string
		remain func(tc *testCluster) int
	}{
		{"leader remains", (*testCluster).leader},
		{"follower remains", func(tc *testCluster) int { return tc.followers()[0] }},
	}
	const hold = time.Second
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := startCluster(t, 3, clusterOptions{WriteHold: hold})
			ctx := context.Background()
			id := createPaste(t, tc.nodes[tc.leader()].node, "written with quorum", false)
			want := map[string]string{id: "written with quorum"}
			for i := range 3 {
				tc.checkAll(ctx, i, want) // every node now holds it locally
			}

			r := tt.remain(tc)
			for i := range 3 {
				if i != r {
					tc.stop(i)
				}
			}
			lone := tc.nodes[r]

			start := time.Now()
			_, err := lone.node.Create(ctx, node.CreateRequest{Content: []byte("no quorum"), DeleteToken: "t"})
			elapsed := time.Since(start)
			if !errors.Is(err, node.ErrNoLeader) {
				t.Fatalf("apply without quorum: got error %v, want %v", err, node.ErrNoLeader)
			}
			if elapsed > hold+2*time.Second {
				t.Errorf("apply without quorum took %s, want about the write hold %s", elapsed, hold)
			}
			// A node cut off from the quorum serves its copy only while its
			// read lease lasts, then answers 503, except to stale reads.
			if p, err := lone.node.Read(ctx, id, true); err != nil || string(p.Content) != want[id] {
				t.Fatalf("stale read without quorum: %v, %v; want the local copy", p, err)
			}
			waitFor(t, node.DefaultReadLease+2*time.Second, func() bool {
				_, err := lone.node.Read(ctx, id, false)
				return errors.Is(err, node.ErrUnavailable)
			}, "reads without quorum answer unavailable once the lease ran out")
			if status, _, err := getRaw(lone.URL, id); err != nil || status != http.StatusServiceUnavailable {
				t.Errorf("GET /raw without quorum: %d, %v; want 503", status, err)
			}
			if status, body, err := getRaw(lone.URL, id+"?stale=true"); err != nil || status != http.StatusOK || body != want[id] {
				t.Errorf("GET /raw?stale=true without quorum: %d %q, %v; want 200 with the content", status, body, err)
			}

			resp, err := httpClient.Post(lone.URL+"/", "text/plain", strings.NewReader("no quorum"))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("POST / without quorum: got %s, want 503", resp.Status)
			}
		})
	}
}

// BenchmarkClusterCreate measures creates through the followers of a
// three-node cluster, many at a time, so that Raft commits them in groups.
func BenchmarkClusterCreate(b *testing.B) {
	tc := startCluster(b, 3, clusterOptions{})
	followers := tc.followers()
	content := make([]byte, 1024)
	var next atomic.Uint64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			n := tc.nodes[followers[i%uint64(len(followers))]].node
			_, err := n.Create(context.Background(), node.CreateRequest{Content: content, DeleteToken: "t"})
			if err != nil {
				b.Errorf("create %d: %v", i, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}

// checkAll fails the test unless node i answers every paste in want at once,
// through node.Read and GET /raw.
func (tc *testCluster) checkAll(ctx context.Context, i int, want map[string]string) {
	tc.tb.Helper()
	tn := tc.nodes[i]
	for id, c := range want {
		p, err := tn.node.Read(ctx, id, false)
		if err != nil {
			tc.tb.Fatalf("%s: Read(%s): %v, want %q", tn.id, id, err, c)
		}
		if string(p.Content) != c {
			tc.tb.Fatalf("%s: Get(%s) = %q, want %q", tn.id, id, p.Content, c)
		}
		status, body, err := getRaw(tn.URL, id)
		if err != nil || status != http.StatusOK || body != c {
			tc.tb.Fatalf("%s: GET /raw/%s = %d %q (%v), want 200 %q", tn.id, id, status, body, err, c)
		}
	}
}

// seesAlive reports whether node i's gossip lists node j as alive.
func (tc *testCluster) seesAlive(i, j int) bool {
	m, ok := memberOf(tc.nodes[i].cl.Members(), tc.nodes[j].id)
	return ok && m.Gossip == "alive"
}

// allAliveVoters reports whether members are exactly n alive voters, one of
// them marked leader.
func allAliveVoters(members []pastenode.Member, n int) bool {
	if len(members) != n {
		return false
	}
	leaders := 0
	for _, m := range members {
		if m.Gossip != "alive" || m.Suffrage != "voter" {
			return false
		}
		if m.Leader {
			leaders++
		}
	}
	return leaders == 1
}

func countVoters(servers []node.Server) int {
	n := 0
	for _, s := range servers {
		if s.Suffrage == "voter" {
			n++
		}
	}
	return n
}
