// Package compose tests docker-compose.cluster.yml: three pastenode
// containers built from the repository, driven through their published
// ports and through docker, against real faults.
//
// The tests need Docker and docker-compose. Without them they skip, except
// under CI=true, where a missing tool is a failure.
package compose

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

const project = "pastenodee2e"

var ports = map[string]int{"node1": 8081, "node2": 8082, "node3": 8083}

var nodes = []string{"node1", "node2", "node3"}

// stack drives one docker-compose project.
type stack struct {
	t    *testing.T
	repo string
	file string
	// secrets are the PASTE_CLUSTER_KEY and PASTE_ADMIN_TOKEN of this run,
	// fresh random values: the compose file ships none.
	secrets []string
}

// freshSecrets returns a random cluster key and admin token as environment
// entries.
func freshSecrets(t *testing.T) []string {
	t.Helper()
	key, token := make([]byte, 32), make([]byte, 24)
	if _, err := crand.Read(key); err != nil {
		t.Fatal(err)
	}
	if _, err := crand.Read(token); err != nil {
		t.Fatal(err)
	}
	return []string{"PASTE_CLUSTER_KEY=" + base64.StdEncoding.EncodeToString(key), "PASTE_ADMIN_TOKEN=" + hex.EncodeToString(token)}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func requireDocker(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("compose tests are slow; skipped with -short")
	}
	var missing []string
	for _, tool := range []string{"docker", "docker-compose"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
			missing = append(missing, "a running docker engine ("+strings.TrimSpace(lastLine(out))+")")
		}
	}
	if len(missing) > 0 {
		msg := "compose tests need " + strings.Join(missing, " and ")
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: this must not be skipped)")
		}
		t.Skip(msg)
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// cmd runs a command in the repository and fails the test on error.
func (s *stack) cmd(name string, args ...string) string {
	s.t.Helper()
	out, err := s.try(name, args...)
	if err != nil {
		s.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func (s *stack) try(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, name, args...)
	c.Dir = s.repo
	// The writers here send far more than the default rate limit allows
	// from one address.
	c.Env = append(append(os.Environ(), "CGO_ENABLED=0", "PASTE_RATE_LIMIT=0"), s.secrets...)
	out, err := c.CombinedOutput()
	return string(out), err
}

func (s *stack) compose(args ...string) string {
	s.t.Helper()
	return s.cmd("docker-compose", append([]string{"-f", s.file, "-p", project}, args...)...)
}

// on returns the stack with failures reported to t, for use in a subtest.
func (s *stack) on(t *testing.T) *stack {
	c := *s
	c.t = t
	return &c
}

func (s *stack) container(node string) string {
	s.t.Helper()
	return strings.TrimSpace(s.compose("ps", "-q", node))
}

func (s *stack) network() string { return project + "_pastenet" }

// exec runs pastectl inside a node's container.
func (s *stack) pastectl(node string, stdin string, args ...string) (string, error) {
	full := append([]string{"-f", s.file, "-p", project, "exec", "-T", node, "/pastectl"}, args...)
	c := exec.Command("docker-compose", full...)
	c.Dir = s.repo
	c.Env = append(os.Environ(), s.secrets...)
	c.Stdin = strings.NewReader(stdin)
	out, err := c.CombinedOutput()
	return string(out), err
}

func up(t *testing.T) *stack {
	t.Helper()
	requireDocker(t)
	repo := repoRoot(t)
	s := &stack{t: t, repo: repo, file: filepath.Join(repo, "docker-compose.cluster.yml"), secrets: freshSecrets(t)}
	s.cmd("go", "build", "-trimpath", "-o", "bin/static/", "./cmd/pastenode", "./cmd/pastectl")
	// Clear leftovers of an earlier run that was killed before its cleanup.
	_, _ = s.try("docker-compose", "-f", s.file, "-p", project, "down", "-v", "--remove-orphans")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := s.try("docker-compose", "-f", s.file, "-p", project, "logs", "--tail", "60")
			t.Logf("container logs:\n%s", out)
		}
		if out, err := s.try("docker-compose", "-f", s.file, "-p", project, "down", "-v", "--remove-orphans", "-t", "5"); err != nil {
			t.Errorf("compose down: %v\n%s", err, out)
		}
	})
	s.compose("up", "-d", "--build")
	s.waitHealthy(nodes...)
	return s
}

// waitHealthy waits until docker's health check (pastectl health) passes
// on every node and each published port answers /readyz.
func (s *stack) waitHealthy(names ...string) {
	s.t.Helper()
	waitFor(s.t, 2*time.Minute, "nodes healthy: "+strings.Join(names, ","), func() bool {
		for _, n := range names {
			out, err := s.try("docker", "inspect", "-f", "{{.State.Health.Status}}", s.container(n))
			if err != nil || strings.TrimSpace(out) != "healthy" {
				return false
			}
			if code, _ := get(ports[n], "/readyz"); code != http.StatusOK {
				return false
			}
		}
		return true
	})
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

var client = &http.Client{Timeout: 15 * time.Second}

func post(port int, body string) (id string, code int, err error) {
	resp, err := client.Post(fmt.Sprintf("http://127.0.0.1:%d/", port), "application/x-www-form-urlencoded", strings.NewReader(body))
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.Header.Get("X-Paste-Id"), resp.StatusCode, nil
}

func get(port int, path string) (int, []byte) {
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// mustPost creates a paste, retrying for a while: during an election or
// right after a fault the answer may be a 503.
func mustPost(t *testing.T, port int, body string) string {
	t.Helper()
	var id string
	waitFor(t, 30*time.Second, fmt.Sprintf("a create on :%d", port), func() bool {
		got, code, err := post(port, body)
		id = got
		return err == nil && code == http.StatusCreated
	})
	return id
}

// checkAll asserts that every paste is readable byte-exact on the ports.
func checkAll(t *testing.T, pastes map[string]string, onPorts ...int) {
	t.Helper()
	for _, port := range onPorts {
		for id, want := range pastes {
			code, got := get(port, "/raw/"+id)
			if code != http.StatusOK || !bytes.Equal(got, []byte(want)) {
				t.Errorf("GET :%d/raw/%s = %d %q, want 200 %q", port, id, code, got, want)
			}
		}
	}
}

func TestComposeCluster(t *testing.T) {
	s := up(t)
	pastes := map[string]string{}
	add := func(port int, body string) {
		pastes[mustPost(t, port, body)] = body
	}

	t.Run("post to each node, read from every port", func(t *testing.T) {
		for _, n := range nodes {
			body := "hello from " + n + "\n"
			id, code, err := post(ports[n], body)
			if err != nil || code != http.StatusCreated {
				t.Fatalf("POST to %s: code %d, err %v", n, code, err)
			}
			pastes[id] = body
		}
		// Read-your-writes: found at once on every node, no polling.
		checkAll(t, pastes, 8081, 8082, 8083)
	})

	t.Run("kill one node", func(t *testing.T) {
		s := s.on(t)
		s.compose("kill", "node2")
		for i := range 5 {
			add(ports[nodes[2*(i%2)]], fmt.Sprintf("written while node2 was down %d", i))
		}
		checkAll(t, pastes, 8081, 8083)
		s.compose("start", "node2")
		s.waitHealthy("node2")
		checkAll(t, pastes, 8082)
	})

	t.Run("partition one node", func(t *testing.T) {
		s := s.on(t)
		c3 := s.container("node3")
		s.cmd("docker", "network", "disconnect", s.network(), c3)
		reconnected := false
		reconnect := func() {
			if !reconnected {
				s.cmd("docker", "network", "connect", "--ip", "172.29.147.13", "--alias", "node3", s.network(), c3)
				reconnected = true
			}
		}
		t.Cleanup(reconnect)
		var old string
		for id := range pastes {
			old = id
			break
		}
		during := map[string]string{}
		for i := range 5 {
			body := fmt.Sprintf("written during the partition %d", i)
			id := mustPost(t, ports[nodes[i%2]], body)
			during[id] = body
		}
		checkAll(t, during, 8081, 8082)
		// The cut-off node refuses writes with 503. Its read lease has run
		// out by then, so a plain read is a 503 too (it cannot know the
		// paste was not deleted meanwhile), and a --stale read answers from
		// its own copy. Its published port went with the network, so ask
		// inside.
		out, err := s.pastectl("node3", "refused\n", "--timeout", "30s", "put")
		if err == nil || !strings.Contains(out, "503") {
			t.Errorf("put on the cut-off node: err %v, output %q, want a 503 failure", err, out)
		}
		if out, err := s.pastectl("node3", "", "get", old); err == nil || !strings.Contains(out, "503") {
			t.Errorf("get %s on the cut-off node: err %v, output %q, want a 503 failure", old, err, out)
		}
		if out, err := s.pastectl("node3", "", "get", "--stale", old); err != nil || out != pastes[old] {
			t.Errorf("get --stale %s on the cut-off node = %q, %v; want %q", old, out, err, pastes[old])
		}
		reconnect()
		for id, body := range during {
			pastes[id] = body
			waitFor(t, time.Minute, "node3 to catch up with "+id, func() bool {
				out, err := s.pastectl("node3", "", "get", id)
				return err == nil && out == body
			})
		}
		s.waitHealthy("node3")
		checkAll(t, pastes, 8083)
	})

	t.Run("rolling restart under writes", func(t *testing.T) {
		s := s.on(t)
		w := startWriter()
		for _, n := range nodes {
			s.compose("restart", "-t", "20", n)
			s.waitHealthy(n)
		}
		acked, outage := w.stop()
		t.Logf("rolling restart: %d creates acknowledged, longest write outage %s", len(acked), outage.Round(time.Millisecond))
		if len(acked) == 0 {
			t.Fatal("no create was acknowledged during the rolling restart")
		}
		checkAll(t, acked, 8081, 8082, 8083)
		for id, body := range acked {
			pastes[id] = body
		}
	})

	t.Run("full stop and start", func(t *testing.T) {
		s := s.on(t)
		s.compose("stop", "-t", "20")
		s.compose("start")
		s.waitHealthy(nodes...)
		checkAll(t, pastes, 8081, 8082, 8083)
	})
}

// writer posts continuously to random nodes, moving on to another node
// when one fails, and records what was acknowledged.
type writer struct {
	mu      sync.Mutex
	acked   map[string]string
	last    time.Time
	longest time.Duration
	done    chan struct{}
	wg      sync.WaitGroup
}

func startWriter() *writer {
	w := &writer{acked: map[string]string{}, last: time.Now(), done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for i := 0; ; i++ {
			select {
			case <-w.done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			body := fmt.Sprintf("rolling write %d %d", i, rand.Int64())
			port := ports[nodes[rand.IntN(len(nodes))]]
			id, code, err := post(port, body)
			if err != nil || code != http.StatusCreated {
				continue
			}
			w.mu.Lock()
			w.acked[id] = body
			if gap := time.Since(w.last); gap > w.longest {
				w.longest = gap
			}
			w.last = time.Now()
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *writer) stop() (map[string]string, time.Duration) {
	close(w.done)
	w.wg.Wait()
	return w.acked, w.longest
}
