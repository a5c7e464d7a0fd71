package jepsen

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	httpPort   = "8080"
	raftPort   = "7000"
	gossipPort = "7946"
)

// node is one pastenode process in its own namespace. Its data directory
// and log file outlive restarts.
type node struct {
	i       int
	id      string
	dataDir string
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current process has exited
}

func (n *node) url() string { return "http://" + nodeIP(n.i) + ":" + httpPort }

// cluster is the set of nodes of one test run.
type cluster struct {
	bin   string
	key   string
	nodes []*node
}

// buildBinary builds cmd/pastenode once into a temporary directory.
func buildBinary(t *testing.T) string {
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "github.com/pastenode/pastenode/cmd/pastenode")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build pastenode: %v\n%s", err, out)
	}
	return filepath.Join(dir, "pastenode")
}

// startCluster starts n nodes that bootstrap together, and stops them all in
// t.Cleanup (the network's cleanup, registered earlier, runs after it).
func startCluster(t *testing.T, bin string, n int) *cluster {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	c := &cluster{bin: bin, key: base64.StdEncoding.EncodeToString(key)}
	dir := t.TempDir()
	for i := 1; i <= n; i++ {
		c.nodes = append(c.nodes, &node{i: i, id: fmt.Sprintf("n%d", i),
			dataDir: filepath.Join(dir, fmt.Sprintf("n%d", i)), logPath: filepath.Join(dir, fmt.Sprintf("n%d.log", i))})
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			nd.signal(syscall.SIGKILL)
			nd.wait(5 * time.Second)
		}
		if t.Failed() {
			c.keepLogs(t)
		}
	})
	for _, nd := range c.nodes {
		if err := c.start(nd); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// start runs node nd's process inside its namespace, with the flags of the
// README's three-node example, and a short --purge-after.
func (c *cluster) start(nd *node) error {
	var seeds []string
	for _, o := range c.nodes {
		seeds = append(seeds, nodeIP(o.i)+":"+gossipPort)
	}
	ip := nodeIP(nd.i)
	args := []string{"netns", "exec", nsName(nd.i), c.bin,
		"--node-id", nd.id, "--data-dir", nd.dataDir,
		"--http-addr", ip + ":" + httpPort, "--raft-addr", ip + ":" + raftPort,
		"--gossip-addr", ip + ":" + gossipPort, "--advertise-host", ip,
		"--join", strings.Join(seeds, ","), "--bootstrap-expect", fmt.Sprint(len(c.nodes)),
		"--cluster-key", c.key,
		"--rate-limit", "0", // eight clients write from the host's one address
		// Purges every second: the deletes and burns keep cutting the
		// Raft log under the faults, and a node cut off behind a cut
		// comes back through a snapshot.
		"--purge-after", "4s"}
	logf, err := os.OpenFile(nd.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "==== start %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command("ip", args...) // ip netns exec execs the binary: the pid is pastenode's
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = cleanEnv()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", nd.id, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	nd.mu.Lock()
	nd.cmd, nd.done = cmd, done
	nd.mu.Unlock()
	return nil
}

// cleanEnv is the environment without PASTE_* variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PASTE_") {
			env = append(env, kv)
		}
	}
	return env
}

func (nd *node) signal(sig syscall.Signal) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd != nil && nd.cmd.Process != nil {
		nd.cmd.Process.Signal(sig)
	}
}

// wait waits for the current process to exit, and reports whether it did.
func (nd *node) wait(d time.Duration) bool {
	nd.mu.Lock()
	done := nd.done
	nd.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// keepLogs copies the node logs into the artifacts directory.
func (c *cluster) keepLogs(t *testing.T) {
	dir := artifactsDir(t)
	for _, nd := range c.nodes {
		if b, err := os.ReadFile(nd.logPath); err == nil {
			p := filepath.Join(dir, nd.id+".log")
			if os.WriteFile(p, b, 0o644) == nil {
				t.Logf("log of %s: %s", nd.id, p)
			}
		}
	}
}

// status is the part of GET /api/v1/status the test uses.
type status struct {
	Node struct {
		ID       string `json:"id"`
		State    string `json:"state"`
		LeaderID string `json:"leader_id"`
	} `json:"node"`
}

var probe = &http.Client{Timeout: time.Second}

// leader returns the node that the nodes name as leader, or nil.
func (c *cluster) leader() *node {
	for _, nd := range c.nodes {
		resp, err := probe.Get(nd.url() + "/api/v1/status")
		if err != nil {
			continue
		}
		var st status
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil || st.Node.LeaderID == "" {
			continue
		}
		for _, o := range c.nodes {
			if o.id == st.Node.LeaderID {
				return o
			}
		}
	}
	return nil
}

// waitReady polls /readyz on every node until all answer 200.
func (c *cluster) waitReady(ctx context.Context) error {
	for _, nd := range c.nodes {
		for {
			resp, err := probe.Get(nd.url() + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s not ready: %w", nd.id, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}
