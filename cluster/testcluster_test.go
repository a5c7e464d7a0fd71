package cluster_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/api"
	"github.com/pastenode/pastenode/cluster"
	"github.com/pastenode/pastenode/internal/freeport"
	"github.com/pastenode/pastenode/node"
	"github.com/pastenode/pastenode/ui"
)

// timeScale shortens every Raft, gossip and autopilot timer. At 0.2 an
// election takes a few hundred milliseconds, which still leaves room for
// the race detector on a two-core machine.
const timeScale = 0.2

// testCluster is a set of pastenode nodes in this process, each a
// node.Node, a cluster.Cluster and an api.Server on httptest, talking over
// real TCP and UDP on 127.0.0.1.
type testCluster struct {
	tb    testing.TB
	key   []byte
	hold  time.Duration
	purge time.Duration
	logs  *logBuffer
	nodes []*testNode
}

// testNode is one member. Its id, data dir and Raft and gossip addresses
// stay fixed across restarts: Raft stores the address in its
// configuration. The HTTP URL changes on every start.
type testNode struct {
	id         string
	dir        string
	raftAddr   string
	gossipAddr string
	expect     int
	join       []string
	key        []byte
	// raftKey, when set, is the node's Raft key in place of key: a member
	// that gossips with the cluster key but cannot prove it on the Raft port.
	raftKey []byte

	node *node.Node
	cl   *cluster.Cluster
	srv  *httptest.Server
	URL  string
}

// clusterOptions configure newTestCluster. Zero values take defaults.
type clusterOptions struct {
	// WriteHold is node.Config.WriteHold.
	WriteHold time.Duration
	// PurgeAfter is node.Config.PurgeAfter.
	PurgeAfter time.Duration
}

// newTestCluster prepares n nodes that bootstrap together with
// BootstrapExpect n, each joining all the others' gossip addresses, under
// one random cluster key. It starts none of them.
func newTestCluster(tb testing.TB, n int, opts clusterOptions) *testCluster {
	tb.Helper()
	tc := &testCluster{tb: tb, key: randomKey(tb), hold: opts.WriteHold, purge: opts.PurgeAfter, logs: &logBuffer{}}
	for i := range n {
		tc.nodes = append(tc.nodes, &testNode{
			id:         fmt.Sprintf("n%d", i),
			dir:        tb.TempDir(),
			raftAddr:   freeport.Addr(tb),
			gossipAddr: freeport.Addr(tb),
			expect:     n,
			key:        tc.key,
		})
	}
	for _, tn := range tc.nodes {
		for _, other := range tc.nodes {
			if other != tn {
				tn.join = append(tn.join, other.gossipAddr)
			}
		}
	}
	// Registered after TempDir, so it runs before the dirs are removed.
	tb.Cleanup(func() {
		tc.stopAll()
		if tb.Failed() {
			tb.Logf("cluster log (last lines):\n%s", tc.logs.tail(400))
		}
	})
	return tc
}

// startCluster starts n nodes together and waits for a leader that every
// node knows.
func startCluster(tb testing.TB, n int, opts clusterOptions) *testCluster {
	tb.Helper()
	tc := newTestCluster(tb, n, opts)
	for i := range tc.nodes {
		tc.start(i)
	}
	tc.leader()
	return tc
}

// add prepares one more node that joins through seeds with BootstrapExpect
// 0, under key, and returns its index. It does not start it.
func (tc *testCluster) add(id string, key []byte, seeds ...string) int {
	tc.tb.Helper()
	tc.nodes = append(tc.nodes, &testNode{
		id:         id,
		dir:        tc.tb.TempDir(),
		raftAddr:   freeport.Addr(tc.tb),
		gossipAddr: freeport.Addr(tc.tb),
		join:       seeds,
		key:        key,
	})
	return len(tc.nodes) - 1
}

// start opens node i: Raft first, then gossip, then the HTTP API.
func (tc *testCluster) start(i int) {
	tc.tb.Helper()
	tn := tc.nodes[i]
	if tn.node != nil {
		tc.tb.Fatalf("start %s: already running", tn.id)
	}
	logger := slog.New(slog.NewTextHandler(tc.logs, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", tn.id)
	raftKey := tn.key
	if tn.raftKey != nil {
		raftKey = tn.raftKey
	}
	n, err := node.New(node.Config{
		ID:              tn.id,
		DataDir:         tn.dir,
		RaftAddr:        tn.raftAddr,
		BootstrapExpect: tn.expect,
		ClusterKey:      raftKey,
		Logger:          logger,
		TimeScale:       timeScale,
		WriteHold:       tc.hold,
		PurgeAfter:      tc.purge,
	})
	if err != nil {
		tc.tb.Fatalf("new node %s: %v", tn.id, err)
	}
	if err := n.Open(context.Background()); err != nil {
		tc.tb.Fatalf("open node %s: %v", tn.id, err)
	}
	// The listener exists before the cluster is created, so the API
	// address can go into the gossip metadata.
	srv := httptest.NewUnstartedServer(nil)
	cl, err := cluster.New(cluster.Config{
		Node:            n,
		GossipAddr:      tn.gossipAddr,
		AdvertiseHost:   "127.0.0.1",
		Join:            tn.join,
		ClusterKey:      tn.key,
		BootstrapExpect: tn.expect,
		RaftAddr:        tn.raftAddr,
		APIAddr:         srv.Listener.Addr().String(),
		DataDir:         tn.dir,
		Version:         "test",
		Logger:          logger,
		TimeScale:       timeScale,
	})
	if err != nil {
		srv.Close()
		n.Close()
		tc.tb.Fatalf("new cluster %s: %v", tn.id, err)
	}
	n.SetPeerProtocol(cl.MinProtocol)
	if err := cl.Start(context.Background()); err != nil {
		srv.Close()
		n.Close()
		tc.tb.Fatalf("start cluster %s: %v", tn.id, err)
	}
	pages, err := ui.New(ui.Options{})
	if err != nil {
		tc.tb.Fatal(err)
	}
	as, err := api.NewServer(api.Config{
		Store:        n,
		Cluster:      cl,
		UI:           pages,
		Logger:       logger,
		Version:      "test",
		MaxPasteSize: 1 << 20,
	})
	if err != nil {
		tc.tb.Fatal(err)
	}
	srv.Config.Handler = as.Handler()
	srv.Start()
	tn.node, tn.cl, tn.srv, tn.URL = n, cl, srv, srv.URL
}

// stop stops node i cleanly, as a SIGTERM would: HTTP, then gossip (with a
// leave), then Raft (with a leadership transfer on a leader).
func (tc *testCluster) stop(i int) {
	tc.tb.Helper()
	tn := tc.nodes[i]
	if tn.node == nil {
		tc.tb.Fatalf("stop %s: not running", tn.id)
	}
	tn.srv.Close()
	if err := tn.cl.Close(); err != nil {
		tc.tb.Logf("close cluster %s: %v", tn.id, err)
	}
	if err := tn.node.Close(); err != nil {
		tc.tb.Errorf("close node %s: %v", tn.id, err)
	}
	tn.node, tn.cl, tn.srv = nil, nil, nil
}

// kill simulates a crash as far as the public API allows: Raft shuts down
// at once, with no leadership transfer, which also closes its transport
// and so the Raft port. Gossip cannot be stopped without a leave through
// cluster.Cluster, so peers see this node "left" rather than "dead"; that
// changes nothing for Raft, which never removes a node for leaving.
func (tc *testCluster) kill(i int) {
	tc.tb.Helper()
	tn := tc.nodes[i]
	if tn.node == nil {
		tc.tb.Fatalf("kill %s: not running", tn.id)
	}
	if err := tn.node.Raft().Shutdown().Error(); err != nil {
		tc.tb.Errorf("shut down raft of %s: %v", tn.id, err)
	}
	tn.srv.Close()
	_ = tn.cl.Close()
	_ = tn.node.Close() // only releases the files now
	tn.node, tn.cl, tn.srv = nil, nil, nil
}

// restart starts a stopped or killed node again on the same data dir and
// addresses.
func (tc *testCluster) restart(i int) {
	tc.tb.Helper()
	tc.start(i)
}

// stopAll stops every running node. Gossip is left one node at a time: a
// leave is only done once gossiped to a live peer, so leaving all at once
// waits out memberlist's leave timeout. Raft stops in parallel: one by one,
// each leader would try to hand over to a peer that is about to stop.
func (tc *testCluster) stopAll() {
	var wg sync.WaitGroup
	for _, tn := range tc.nodes {
		if tn.node == nil {
			continue
		}
		tn.srv.Close()
		_ = tn.cl.Close()
		wg.Go(func() { _ = tn.node.Close() })
	}
	wg.Wait()
	for _, tn := range tc.nodes {
		tn.node, tn.cl, tn.srv = nil, nil, nil
	}
}

// running returns the indexes of the running nodes.
func (tc *testCluster) running() []int {
	var out []int
	for i, tn := range tc.nodes {
		if tn.node != nil {
			out = append(out, i)
		}
	}
	return out
}

// leader waits until one running node leads and every running node names
// it as leader, and returns its index.
func (tc *testCluster) leader() int {
	tc.tb.Helper()
	return tc.leaderOf(tc.running()...)
}

// leaderOf is leader among the nodes given.
func (tc *testCluster) leaderOf(nodes ...int) int {
	tc.tb.Helper()
	found := -1
	waitFor(tc.tb, 15*time.Second, func() bool {
		found = -1
		for _, i := range nodes {
			if tc.nodes[i].node.IsLeader() {
				found = i
			}
		}
		if found < 0 {
			return false
		}
		for _, i := range nodes {
			if tc.nodes[i].node.Info().LeaderID != tc.nodes[found].id {
				return false
			}
		}
		return true
	}, "a leader known to every running node")
	return found
}

// followers returns the running nodes other than the leader.
func (tc *testCluster) followers() []int {
	tc.tb.Helper()
	l := tc.leader()
	var out []int
	for _, i := range tc.running() {
		if i != l {
			out = append(out, i)
		}
	}
	return out
}

// waitFor polls cond every 20ms until it holds, and fails the test with
// msg if it does not within timeout.
func waitFor(tb testing.TB, timeout time.Duration, cond func() bool, msg string) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", timeout, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// holdsFor polls cond every 20ms for d and fails the test with msg the
// first time it does not hold: a bounded check of a negative.
func holdsFor(tb testing.TB, d time.Duration, cond func() bool, msg string) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !cond() {
			tb.Fatalf("%s stopped holding", msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createPaste replicates a new paste through n and returns its id.
func createPaste(tb testing.TB, n *node.Node, content string, burn bool) string {
	tb.Helper()
	p, err := n.Create(context.Background(), node.CreateRequest{
		Content: []byte(content), Burn: burn, DeleteToken: "token",
	})
	if err != nil {
		tb.Fatalf("create through %s: %v", n.ID(), err)
	}
	return p.ID
}

var httpClient = &http.Client{Timeout: 15 * time.Second}

// postPaste creates a paste with POST / on the node at url and returns its
// id.
func postPaste(tb testing.TB, url, content string, burn bool) string {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(content))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("X-Paste-Burn", strconv.FormatBool(burn))
	resp, err := httpClient.Do(req)
	if err != nil {
		tb.Fatalf("POST %s/: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		tb.Fatalf("POST %s/: got %s %q, want 201", url, resp.Status, body)
	}
	id := resp.Header.Get("X-Paste-Id")
	if id == "" {
		tb.Fatalf("POST %s/: no X-Paste-Id", url)
	}
	return id
}

// getRaw does GET /raw/{id} on the node at url. It does not fail the test,
// so that it can run off the test goroutine.
func getRaw(url, id string) (status int, body string, err error) {
	resp, err := httpClient.Get(url + "/raw/" + id)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func randomKey(tb testing.TB) []byte {
	tb.Helper()
	key := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		tb.Fatal(err)
	}
	return key
}

func randomID(tb testing.TB) string {
	tb.Helper()
	return hex.EncodeToString(randomKey(tb)[:8])
}

// logBuffer collects every node's log lines, to show when a test fails.
// Writes after the test ended are harmless.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimRight(b.buf.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// memberOf returns id's entry in members, if any.
func memberOf(members []pastenode.Member, id string) (pastenode.Member, bool) {
	i := slices.IndexFunc(members, func(m pastenode.Member) bool { return m.ID == id })
	if i < 0 {
		return pastenode.Member{}, false
	}
	return members[i], true
}

// inRaft reports whether id is in n's Raft configuration.
func inRaft(n *node.Node, id string) bool {
	servers, err := n.Servers()
	if err != nil {
		return false
	}
	return slices.ContainsFunc(servers, func(s node.Server) bool { return s.ID == id })
}
