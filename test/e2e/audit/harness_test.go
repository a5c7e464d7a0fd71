// Package audit replays the hostile requests of the security audit
// (issue 10) against the real pastenode binary: forged internal calls, a
// poison log entry, a keyless node, admin calls through a reverse proxy on
// the same host, a highlighting bomb and a write flood on unknown ids, and
// checks that the node keeps serving with nothing acknowledged lost.
// `make audit` runs it alone; `make test` runs it with everything else.
package audit

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pastenode/pastenode/internal/freeport"
)

// binDir holds the pastenode binary TestMain built; empty in -short mode.
var binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if testing.Short() {
		return m.Run() // every test skips
	}
	dir, err := os.MkdirTemp("", "pastenode-audit-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "audit:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "github.com/pastenode/pastenode/cmd/pastenode")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "audit: build:", err)
		return 1
	}
	binDir = dir
	return m.Run()
}

// node is one pastenode process; its data dir and addresses stay the same
// across restarts.
type node struct {
	t                        *testing.T
	id, dataDir, logPath     string
	httpAddr, raftAddr, goss string
	args                     []string
	URL                      string
	cmd                      *exec.Cmd
	exited                   chan struct{}
}

func newNode(t *testing.T, id string, args ...string) *node {
	t.Helper()
	if binDir == "" {
		t.Skip("audit tests need the binaries; not built in -short mode")
	}
	dir := t.TempDir()
	n := &node{t: t, id: id, dataDir: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "log"),
		httpAddr: freeport.Addr(t), raftAddr: freeport.Addr(t), goss: freeport.Addr(t), args: args}
	n.URL = "http://" + n.httpAddr
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(n.logPath)
			t.Logf("pastenode %s log:\n%s", n.id, b)
		}
		n.kill()
	})
	return n
}

// startNode starts a lone node with more flags and waits until it is ready.
func startNode(t *testing.T, id string, args ...string) *node {
	t.Helper()
	n := newNode(t, id, args...)
	n.start()
	n.waitReady()
	return n
}

func (n *node) start() {
	n.t.Helper()
	args := append([]string{"--node-id", n.id, "--data-dir", n.dataDir, "--http-addr", n.httpAddr,
		"--raft-addr", n.raftAddr, "--gossip-addr", n.goss}, n.args...)
	log, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		n.t.Fatal(err)
	}
	defer log.Close()
	n.cmd = exec.Command(filepath.Join(binDir, "pastenode"), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PASTE_") {
			n.cmd.Env = append(n.cmd.Env, kv)
		}
	}
	n.cmd.Env = append(n.cmd.Env, "PASTE_RAFT_TIME_SCALE=0.2")
	n.cmd.Stdout, n.cmd.Stderr = log, log
	if err := n.cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	exited := make(chan struct{})
	n.exited = exited
	go func(c *exec.Cmd) { c.Wait(); close(exited) }(n.cmd)
}

// waitReady polls /readyz until it answers 200.
func (n *node) waitReady() {
	n.t.Helper()
	eventually(n.t, 30*time.Second, n.id+" ready", func() error {
		select {
		case <-n.exited:
			n.t.Fatalf("pastenode %s exited: %v", n.id, n.cmd.ProcessState)
		default:
		}
		code, body, err := get(n.URL+"/readyz", nil)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("%d %s", code, body)
		}
		return err
	})
}

// alive reports whether the process is still running.
func (n *node) alive() bool {
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and returns the exit code.
func (n *node) stop() int {
	n.t.Helper()
	if n.cmd == nil || !n.alive() {
		return n.cmd.ProcessState.ExitCode()
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(20 * time.Second):
		n.cmd.Process.Kill()
		<-n.exited
		n.t.Errorf("pastenode %s did not stop within 20s of SIGTERM", n.id)
	}
	return n.cmd.ProcessState.ExitCode()
}

func (n *node) kill() {
	if n.cmd != nil && n.alive() {
		n.cmd.Process.Kill()
		<-n.exited
	}
}

// adminToken is the token the node generated into its data dir.
func (n *node) adminToken() string {
	n.t.Helper()
	b, err := os.ReadFile(filepath.Join(n.dataDir, "admin-token"))
	if err != nil {
		n.t.Fatalf("admin token: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// status is the part of GET /api/v1/status the audit reads.
type status struct {
	Node struct {
		State        string `json:"state"`
		ClusterID    string `json:"cluster_id"`
		CommitIndex  uint64 `json:"commit_index"`
		AppliedIndex uint64 `json:"applied_index"`
	} `json:"node"`
	Members []struct {
		ID       string `json:"id"`
		Suffrage string `json:"suffrage"`
	} `json:"members"`
}

func (n *node) status() status {
	n.t.Helper()
	code, body, err := get(n.URL+"/api/v1/status", nil)
	var st status
	if err == nil && code == http.StatusOK {
		err = json.Unmarshal(body, &st)
	}
	if err != nil || code != http.StatusOK {
		n.t.Fatalf("status of %s: %d %v", n.id, code, err)
	}
	return st
}

var client = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// send makes a request with headers ("Key", "value" pairs) and returns the
// status, body and headers.
func send(method, url string, body []byte, headers ...string) (int, []byte, http.Header, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header, err
}

func get(url string, headers []string) (int, []byte, error) {
	code, body, _, err := send(http.MethodGet, url, nil, headers...)
	return code, body, err
}

// create posts content to the node and returns the new paste's id.
func create(t *testing.T, base string, content []byte, query string) string {
	t.Helper()
	code, body, h, err := send(http.MethodPost, base+"/?"+query, content)
	if err != nil || code != http.StatusCreated {
		t.Fatalf("create: %d %s %v", code, body, err)
	}
	return h.Get("X-Paste-Id")
}

// eventually polls cond until it returns nil or within passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %s: %v", what, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
