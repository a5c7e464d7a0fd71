package e2e

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pastenode/pastenode/internal/freeport"
)

// clusterIDOf waits until p knows its cluster's id and returns it.
func clusterIDOf(t *testing.T, p *proc) string {
	t.Helper()
	var id string
	eventually(t, 10*time.Second, p.id+" knows its cluster id", func() error {
		b, err := os.ReadFile(filepath.Join(p.dataDir, "cluster-id"))
		id = strings.TrimSpace(string(b))
		if err == nil && id == "" {
			err = fmt.Errorf("empty cluster-id file")
		}
		return err
	})
	return id
}

// waitTokenFile waits until p holds the cluster's admin token in its data
// dir, for pastectl --data-dir.
func waitTokenFile(t *testing.T, p *proc) string {
	t.Helper()
	var token string
	eventually(t, 10*time.Second, p.id+" holds the admin token", func() error {
		b, err := os.ReadFile(filepath.Join(p.dataDir, "admin-token"))
		token = strings.TrimSpace(string(b))
		return err
	})
	return token
}

// memberIDs returns the ids p's status lists.
func memberIDs(t *testing.T, p *proc) []string {
	t.Helper()
	st, _, err := viewOf(t, p)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range st.Members {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestJoinRefusesAnotherClustersNode: asking a node that holds pastes of
// its own cluster to join another cluster is refused with one line naming
// both clusters, and neither cluster loses a paste or lists the other's
// node. (Before, the join answered 0, the node's log was cleared and its
// acknowledged paste was gone while status showed both nodes ready.)
func TestJoinRefusesAnotherClustersNode(t *testing.T) {
	t.Parallel()
	a := startProc(t)
	b := newProc(t)
	b.id += "-b"
	b.start()
	b.waitReady()
	aID, bID := clusterIDOf(t, a), clusterIDOf(t, b)
	if aID == bID {
		t.Fatalf("two clusters bootstrapped apart share the id %s", aID)
	}
	pa, _ := mustPost(t, a.URL, []byte("a's paste"))
	pb, _ := mustPost(t, b.URL, []byte("b's paste"))
	waitTokenFile(t, b)

	r := run(t, "pastectl", nil, nil, "--addr", b.URL, "--data-dir", b.dataDir, "join", a.gossip)
	if r.code == 0 {
		t.Fatalf("join of a node of another cluster: exit 0, stdout %q", r.stdout)
	}
	line := strings.TrimSpace(r.stderr)
	if strings.Contains(line, "\n") || !strings.Contains(line, aID) || !strings.Contains(line, bID) ||
		!strings.Contains(line, "empty data dir") || !strings.Contains(line, "409") {
		t.Errorf("join refusal: got %q, want one line with a 409, both cluster ids and the way out", r.stderr)
	}
	holds(t, 3*time.Second, "both clusters keep their own node and paste", func() error {
		for _, c := range []struct {
			p  *proc
			id string
		}{{a, pa}, {b, pb}} {
			if code, body, err := getRaw(c.p.URL, c.id); err != nil || code != 200 {
				return fmt.Errorf("%s: paste %s: %d %q %v", c.p.id, c.id, code, body, err)
			}
			if ids := memberIDs(t, c.p); !slices.Equal(ids, []string{c.p.id}) {
				return fmt.Errorf("%s lists members %v", c.p.id, ids)
			}
		}
		return nil
	})
}

// TestCopiedDataDirStaysOut: a copy of a node's data dir, started under
// the same id with --join into an unrelated cluster, stops with one line
// naming both clusters; that cluster keeps only its own members, and an
// empty node still joins it. (Before, the copy became ready inside the
// other cluster and brought its old peers into its configuration.)
func TestCopiedDataDirStaysOut(t *testing.T) {
	t.Parallel()
	a := startProc(t)
	aID := clusterIDOf(t, a)
	mustPost(t, a.URL, []byte("before the copy"))
	a.stop()
	c := newProc(t)
	c.id = "unrelated"
	c.start()
	c.waitReady()
	cID := clusterIDOf(t, c)

	copyDir := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", a.dataDir, copyDir).CombinedOutput(); err != nil {
		t.Fatalf("copy the data dir: %v: %s", err, out)
	}
	clone := newProc(t, "--bootstrap-expect", "0", "--join", c.gossip)
	clone.id, clone.dataDir = a.id, copyDir
	clone.start()
	select {
	case <-clone.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the copy of another cluster's data dir still runs after 30s")
	}
	if code := clone.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("the copy exited 0")
	}
	logged, _ := os.ReadFile(clone.logPath)
	last := lastLine(string(logged))
	if !strings.Contains(last, aID) || !strings.Contains(last, cID) || !strings.Contains(last, "empty data dir") {
		t.Errorf("the copy's last line: %q, want both cluster ids and the way out", last)
	}
	if ids := memberIDs(t, c); !slices.Equal(ids, []string{c.id}) {
		t.Errorf("cluster c lists %v after the copy tried to join, want only %s", ids, c.id)
	}

	empty := newProc(t, "--bootstrap-expect", "0")
	empty.id = "empty"
	empty.start()
	empty.waitOK("/healthz")
	r := run(t, "pastectl", nil, nil, "--addr", empty.URL, "--data-dir", empty.dataDir, "--timeout", "60s", "join", c.gossip)
	if r.code != 0 || !strings.Contains(r.stdout, "voter of cluster "+cID) {
		t.Fatalf("an empty node joins c: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestBadPortsLeaveTheDataDirUntouched: a busy or invalid address, or a
// --join seed without a port, is one line and a non-zero exit before
// anything is written to the data dir. (Before, a busy --http-addr was
// found after Raft had bootstrapped the data dir as a cluster of its own.)
func TestBadPortsLeaveTheDataDirUntouched(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyUDP, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busyUDP.Close()
	tests := []struct {
		name     string
		flag     string
		addr     string
		wantCode int
	}{
		{"busy http", "--http-addr", busy.Addr().String(), 1},
		{"busy raft", "--raft-addr", busy.Addr().String(), 1},
		{"busy gossip tcp", "--gossip-addr", busy.Addr().String(), 1},
		{"busy gossip udp", "--gossip-addr", busyUDP.LocalAddr().String(), 1},
		{"port out of range", "--http-addr", "127.0.0.1:99999", 2},
		{"seed without a port", "--join", "notahost", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			flags := map[string]string{
				"--http-addr": freeport.Addr(t), "--raft-addr": freeport.Addr(t), "--gossip-addr": freeport.Addr(t),
			}
			flags[tt.flag] = tt.addr
			args := []string{"--data-dir", dir}
			for k, v := range flags {
				args = append(args, k, v)
			}
			start := time.Now()
			r := run(t, "pastenode", nil, nil, args...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, tt.wantCode, r.stderr)
			}
			if time.Since(start) > 10*time.Second {
				t.Errorf("took %s to refuse", time.Since(start))
			}
			if line := lastLine(r.stderr); !strings.HasPrefix(line, "pastenode: ") || !strings.Contains(line, tt.addr) {
				t.Errorf("last line %q: want pastenode's one-line reason naming %s", line, tt.addr)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				entries, _ := os.ReadDir(dir)
				t.Errorf("data dir touched: %v, holds %d entries", err, len(entries))
			}
		})
	}
}

// TestOneAdminTokenAndRemoval: an empty node joined by pastectl is a voter
// when join returns, holds the cluster's admin token, so that one node's
// data dir authorises admin calls on every node; removed, it stops with
// exit status 3, a restart keeps it out (not ready, not listed), and an
// explicit join brings it back.
func TestOneAdminTokenAndRemoval(t *testing.T) {
	t.Parallel()
	a := startProc(t)
	aID := clusterIDOf(t, a)
	id, _ := mustPost(t, a.URL, []byte("kept through it all"))
	token := waitTokenFile(t, a)

	e := newProc(t, "--bootstrap-expect", "0")
	e.id += "-e"
	e.start()
	e.waitOK("/healthz")
	// A node that is in no cluster yet takes its own token, from its data
	// dir.
	r := run(t, "pastectl", nil, nil, "--addr", e.URL, "--data-dir", e.dataDir, "--timeout", "60s", "join", a.gossip)
	if r.code != 0 || !strings.Contains(r.stdout, e.id+" is a voter of cluster "+aID) {
		t.Fatalf("join: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	e.waitReady()
	if got := waitTokenFile(t, e); got != token {
		t.Errorf("the joined node holds token %q, the cluster's is %q", got, token)
	}
	// a's data dir authorises admin calls on e, which was started without
	// a token of its own.
	if r := run(t, "pastectl", nil, nil, "--addr", e.URL, "--data-dir", a.dataDir, "snapshot"); r.code != 0 {
		t.Errorf("snapshot on the joined node with the first node's data dir: exit %d %q", r.code, r.stderr)
	}
	if code, body, err := getRaw(e.URL, id); err != nil || code != 200 || string(body) != "kept through it all" {
		t.Fatalf("the joined node: paste %s: %d %q %v", id, code, body, err)
	}

	// A rotation through one node retires the old token everywhere and
	// reaches every data dir.
	r = run(t, "pastectl", nil, nil, "--addr", e.URL, "--admin-token", token, "rotate-admin-token")
	fresh := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(fresh) < 32 || fresh == token {
		t.Fatalf("rotate-admin-token: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, p := range []*proc{a, e} {
		eventually(t, 10*time.Second, p.id+" holds the new token", func() error {
			if got := waitTokenFile(t, p); got != fresh {
				return fmt.Errorf("still %q", got)
			}
			return nil
		})
		if r := run(t, "pastectl", nil, nil, "--addr", p.URL, "--admin-token", token, "snapshot"); r.code == 0 || !strings.Contains(r.stderr, "401") {
			t.Errorf("%s: the old token after the rotation: exit %d %q, want a 401", p.id, r.code, r.stderr)
		}
	}

	if r := run(t, "pastectl", nil, nil, "--addr", a.URL, "--data-dir", a.dataDir, "remove", e.id); r.code != 0 {
		t.Fatalf("remove: exit %d %q", r.code, r.stderr)
	}
	select {
	case <-e.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the removed node still runs after 20s")
	}
	if code := e.cmd.ProcessState.ExitCode(); code != 3 {
		t.Errorf("the removed node exited %d, want 3", code)
	}
	logged, _ := os.ReadFile(e.logPath)
	if last := lastLine(string(logged)); !strings.Contains(last, "removed") || !strings.Contains(last, "pastectl join") {
		t.Errorf("the removed node's last line: %q, want what happened and the way back", last)
	}
	eventually(t, 10*time.Second, "status drops the removed node", func() error {
		if ids := memberIDs(t, a); !slices.Equal(ids, []string{a.id}) {
			return fmt.Errorf("a lists %v", ids)
		}
		return nil
	})

	e.start()
	e.waitOK("/healthz")
	holds(t, 3*time.Second, "a restarted removed node stays out", func() error {
		code, body, err := fetchStatus(e.URL + "/readyz")
		if err != nil || code != 503 || !strings.Contains(body, "removed") {
			return fmt.Errorf("readyz: %d %q %v", code, body, err)
		}
		if ids := memberIDs(t, a); !slices.Equal(ids, []string{a.id}) {
			return fmt.Errorf("a lists %v", ids)
		}
		return nil
	})
	r = run(t, "pastectl", nil, nil, "--addr", e.URL, "--data-dir", a.dataDir, "--timeout", "60s", "join", a.gossip)
	if r.code != 0 || !strings.Contains(r.stdout, "is a voter") {
		t.Fatalf("join after the removal: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	e.waitReady()
	if code, _, err := getRaw(e.URL, id); err != nil || code != 200 {
		t.Errorf("the readmitted node: paste %s: %d %v", id, code, err)
	}
	if code := e.signal(syscall.SIGTERM); code != 0 {
		t.Errorf("the readmitted node's clean stop: exit %d", code)
	}
}

// fetchStatus GETs url and returns the code and body.
func fetchStatus(url string) (int, string, error) {
	resp, err := backupClient.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
