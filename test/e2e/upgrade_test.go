package e2e

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// upgradeFrom is the last commit whose nodes kept every paste in memory
// and wrote snapshots of version 3: the rolling upgrade starts from a
// cluster of its build.
const upgradeFrom = "8fb1ff5da781a857fc0564987ff8f89a07e9d000"

var (
	oldBuild    sync.Once
	oldBin      string
	oldBuildErr error
)

// oldBinary builds pastenode at upgradeFrom from this repository's history,
// once per test run. Without the history (a shallow clone) it skips, and
// under CI=true it fails: CI must run the upgrade.
func oldBinary(t *testing.T) string {
	t.Helper()
	binary(t, "pastenode") // skips in -short mode
	oldBuild.Do(func() {
		src, err := os.MkdirTemp("", "pastenode-old-")
		if err != nil {
			oldBuildErr = err
			return
		}
		archive := exec.Command("sh", "-c", "git -C \"$(git rev-parse --show-toplevel)\" archive "+upgradeFrom+" | tar -x -C "+src)
		if out, err := archive.CombinedOutput(); err != nil {
			oldBuildErr = fmt.Errorf("git archive %s: %v: %s", upgradeFrom[:7], err, out)
			return
		}
		oldBin = filepath.Join(binDir, "pastenode-"+upgradeFrom[:7])
		build := exec.Command("go", "build", "-o", oldBin, "./cmd/pastenode")
		build.Dir = src
		if out, err := build.CombinedOutput(); err != nil {
			oldBuildErr = fmt.Errorf("build pastenode %s: %v: %s", upgradeFrom[:7], err, out)
		}
		os.RemoveAll(src)
	})
	if oldBuildErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the old version for the upgrade test: %v", oldBuildErr)
		}
		t.Skipf("the old version for the upgrade test: %v", oldBuildErr)
	}
	return oldBin
}

// TestRollingUpgrade starts three nodes of the version that kept pastes in
// memory, writes, snapshots and removes, then replaces one node at a time
// with this version, writing through the mixed cluster after each step.
// Every paste acknowledged reads back byte-exact from every node at every
// step, what was removed stays removed, and once all three run this
// version a fresh snapshot and restart keep it all.
func TestRollingUpgrade(t *testing.T) {
	old := oldBinary(t)
	nodes := make([]*proc, 3)
	for i := range nodes {
		nodes[i] = newNode(t, fmt.Sprintf("up%d", i+1))
		nodes[i].bin = old
	}
	for _, p := range nodes {
		p.args = []string{"--join", nodes[0].gossip, "--bootstrap-expect", "3"}
	}
	for _, p := range slices.Backward(nodes) {
		p.start()
	}
	for _, p := range nodes {
		p.waitReady()
	}

	want := map[string][32]byte{} // id -> sha256 of the content
	var gone []string
	write := func(step string, n int) {
		t.Helper()
		for i := range n {
			p := nodes[i%len(nodes)]
			content := []byte(fmt.Sprintf("%s paste %d %s", step, i, strings.Repeat("z", i*37%2000)))
			id, _ := mustPost(t, p.URL, content)
			want[id] = sha256.Sum256(content)
		}
		id, token := mustPost(t, nodes[0].URL, []byte(step+" deleted"))
		do(t, http.MethodDelete, nodes[1].URL+"/"+id, nil, "X-Delete-Token", token).expect(t, step+": delete", http.StatusNoContent)
		gone = append(gone, id)
	}
	check := func(step string) {
		t.Helper()
		for _, p := range nodes {
			for id, sum := range want {
				eventually(t, 10*time.Second, step+": "+id+" on "+p.id, func() error {
					code, body, err := getRaw(p.URL, id)
					switch {
					case err != nil:
						return err
					case code != http.StatusOK:
						return fmt.Errorf("status %d", code)
					case sha256.Sum256(body) != sum:
						return fmt.Errorf("%d bytes, not what was written", len(body))
					}
					return nil
				})
			}
			for _, id := range gone {
				if code, _, err := getRaw(p.URL, id); err != nil || code != http.StatusNotFound {
					t.Fatalf("%s: removed %s on %s: status %d, %v", step, id, p.id, code, err)
				}
			}
		}
	}
	snapshot := func(p *proc) {
		t.Helper()
		if r := run(t, "pastectl", nil, nil, "--addr", p.URL, "--data-dir", p.dataDir, "snapshot"); r.code != 0 &&
			!strings.Contains(r.stdout+r.stderr, "nothing") {
			t.Fatalf("snapshot on %s: exit %d %q", p.id, r.code, r.stderr)
		}
	}

	write("old", 60)
	for _, p := range nodes {
		snapshot(p)
	}
	write("old after snapshot", 20)
	check("old cluster")
	// A backup of the old version, restored by this one at the end.
	backup := filepath.Join(t.TempDir(), "old.backup")
	if r := pastectl(t, nodes[2].URL, nil, "--data-dir", nodes[2].dataDir, "backup", "--out", backup); r.code != 0 {
		t.Fatalf("pastectl backup of the old cluster: exit %d %q", r.code, r.stderr)
	}
	backedUp := maps.Clone(want)

	for i, p := range nodes {
		step := "node " + strconv.Itoa(i+1) + " upgraded"
		p.stop()
		p.bin = ""
		p.start()
		p.waitReady()
		write(step, 20)
		check(step)
		snapshot(p)
	}

	for _, p := range nodes {
		snapshot(p)
		state, err := filepath.Glob(filepath.Join(p.dataDir, "snapshots", "*", "state.bin"))
		if err != nil || len(state) != 1 {
			t.Fatalf("%s: snapshots %v, %v; want one", p.id, state, err)
		}
		raw, _ := os.ReadFile(state[0])
		if !bytes.HasPrefix(raw, []byte("PNSNAP\x05")) {
			t.Errorf("%s: the snapshot after the upgrade is not of linked segments: % x", p.id, raw[:min(7, len(raw))])
		}
	}
	for _, p := range nodes {
		p.stop()
		p.start()
	}
	for _, p := range nodes {
		p.waitReady()
	}
	write("after restart", 10)
	check("upgraded cluster restarted")

	// The old version's backup restores into one node of this version.
	lone := newNode(t, "up-restored")
	if r := run(t, "pastenode", nil, nil, "restore", "--from", backup, "--data-dir", lone.dataDir,
		"--node-id", lone.id, "--raft-addr", lone.raftAddr); r.code != 0 {
		t.Fatalf("pastenode restore of the old version's backup: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	lone.args = []string{"--bootstrap-expect", "1"}
	lone.start()
	lone.waitReady()
	nodes, want = []*proc{lone}, backedUp
	check("the old backup restored")
}
