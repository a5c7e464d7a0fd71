// Package e2e runs the real pastenode and pastectl binaries, built once per
// test run, on free loopback ports with their own data directories.
package e2e

import (
	"bytes"
	"context"
	"errors"
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

// binDir holds the binaries TestMain built; empty in -short mode.
var binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if testing.Short() {
		return m.Run() // every test skips: no binaries
	}
	dir, err := os.MkdirTemp("", "pastenode-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"github.com/pastenode/pastenode/cmd/pastenode",
		"github.com/pastenode/pastenode/cmd/pastectl")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build binaries:", err)
		return 1
	}
	binDir = dir
	return m.Run()
}

// binary returns the path of a built binary, or skips the test.
func binary(t *testing.T, name string) string {
	t.Helper()
	if binDir == "" {
		t.Skip("e2e tests need the binaries; not built in -short mode")
	}
	return filepath.Join(binDir, name)
}

// cleanEnv is the test's environment without PASTE_* variables, so that the
// developer's settings do not leak into the binaries.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PASTE_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// eventually polls cond until it returns nil, and fails the test with cond's
// last error if that takes longer than within.
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

// holds polls cond for the whole of d and fails the test the first time it
// returns an error: a bounded check that something does not happen.
func holds(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := cond(); err != nil {
			t.Fatalf("%s: broken: %v", what, err)
		}
	}
}

// proc is one pastenode process. Its data dir and ports stay the same
// across restarts; its stderr goes to one log file, shown if the test
// fails.
type proc struct {
	t        *testing.T
	id       string
	dataDir  string
	httpAddr string
	raftAddr string
	gossip   string
	args     []string // more flags
	env      []string // more environment, KEY=value
	// httpByEnv passes the HTTP address as PASTE_HTTP_ADDR, not as a flag.
	httpByEnv bool
	// bin is the pastenode binary to run; "": the one this test run built.
	bin     string
	URL     string
	logPath string

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
}

// newProc prepares a node with flags args; it does not start it.
func newProc(t *testing.T, args ...string) *proc {
	t.Helper()
	dir := t.TempDir()
	p := &proc{
		t:        t,
		id:       "e2e-" + strings.ToLower(strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())),
		dataDir:  filepath.Join(dir, "data"),
		httpAddr: freeport.Addr(t),
		raftAddr: freeport.Addr(t),
		gossip:   freeport.Addr(t),
		args:     args,
		logPath:  filepath.Join(dir, "pastenode.log"),
	}
	p.URL = "http://" + p.httpAddr
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(p.logPath)
			t.Logf("pastenode %s log:\n%s", p.id, b)
		}
	})
	t.Cleanup(p.cleanup)
	return p
}

// startProc starts a node with flags args and waits until it is ready.
func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	p := newProc(t, args...)
	p.start()
	p.waitReady()
	return p
}

// start starts the process; it does not wait for it to be ready.
func (p *proc) start() {
	p.t.Helper()
	args := []string{
		"--node-id", p.id,
		"--data-dir", p.dataDir,
		"--raft-addr", p.raftAddr,
		"--gossip-addr", p.gossip,
	}
	// Fast elections for a lone node; the environment twin, so that a
	// binary without this tuning knob still starts, only slower. The
	// tests write far more than the default rate limit allows from one
	// address, so it is off unless a test's own flags set it.
	env := cleanEnv("PASTE_RAFT_TIME_SCALE=0.1", "PASTE_RATE_LIMIT=0")
	if p.httpByEnv {
		env = append(env, "PASTE_HTTP_ADDR="+p.httpAddr)
	} else {
		args = append(args, "--http-addr", p.httpAddr)
	}
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		p.t.Fatal(err)
	}
	defer log.Close()
	fmt.Fprintf(log, "=== start %s\n", time.Now().Format(time.RFC3339Nano))
	bin := p.bin
	if bin == "" {
		bin = binary(p.t, "pastenode")
	}
	p.cmd = exec.Command(bin, append(args, p.args...)...)
	p.cmd.Env = append(env, p.env...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("start pastenode: %v", err)
	}
	exited := make(chan struct{})
	p.exited = exited
	go func(cmd *exec.Cmd) {
		cmd.Wait()
		close(exited)
	}(p.cmd)
}

// waitReady polls /readyz until it answers 200.
func (p *proc) waitReady() {
	p.t.Helper()
	p.waitOK("/readyz")
}

// waitOK polls path until it answers 200.
func (p *proc) waitOK(path string) {
	p.t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			p.t.Fatalf("pastenode exited before %s answered 200: %v", path, p.cmd.ProcessState)
		default:
		}
		resp, err := client.Get(p.URL + path)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(b))
		} else {
			last = err.Error()
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.t.Fatalf("pastenode %s: no 200 from %s%s after 20s: %s", p.id, p.URL, path, last)
}

// signal sends sig and waits for the process to exit; it returns the exit
// code.
func (p *proc) signal(sig syscall.Signal) int {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
		p.t.Fatalf("pastenode did not exit within 20s of %v", sig)
	}
	return p.cmd.ProcessState.ExitCode()
}

// stop stops the node with SIGTERM and fails unless it exits cleanly.
func (p *proc) stop() {
	p.t.Helper()
	if code := p.signal(syscall.SIGTERM); code != 0 {
		p.t.Fatalf("pastenode after SIGTERM: got exit code %d, want 0", code)
	}
}

// kill stops the node with SIGKILL, as a crash would.
func (p *proc) kill() {
	p.t.Helper()
	p.signal(syscall.SIGKILL)
}

// restart starts the node again on the same data dir and ports.
func (p *proc) restart() {
	p.t.Helper()
	p.start()
	p.waitReady()
}

func (p *proc) cleanup() {
	if p.cmd == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// result is what a command printed and how it exited.
type result struct {
	stdout, stderr string
	code           int
}

// run runs a built binary with stdin and args and waits for it.
func run(t *testing.T, name string, stdin []byte, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t, name), args...)
	cmd.Env = cleanEnv(env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %s: still running after 30s", name, strings.Join(args, " "))
	}
	return result{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
}

// pastectl runs pastectl against the node at addr.
func pastectl(t *testing.T, addr string, stdin []byte, args ...string) result {
	t.Helper()
	return run(t, "pastectl", stdin, nil, append([]string{"--addr", addr}, args...)...)
}
