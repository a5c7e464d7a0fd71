package cluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestFollowerBehindACutLogCatchesUp: a purge cuts the leader's log past
// where a stopped follower's ends, so the follower must be sent a
// snapshot when it comes back, and take entries after it although its own
// log still holds older ones. The removed paste's content is then in no
// file of the leader's data dir, and the follower holds the state it
// installed once, its snapshot and its store linked to the same files.
func TestFollowerBehindACutLogCatchesUp(t *testing.T) {
	tc := startCluster(t, 3, clusterOptions{PurgeAfter: 2 * time.Second})
	ctx := context.Background()
	l := tc.leader()
	f := (l + 1) % 3
	want := map[string]string{}
	for i := range 5 {
		c := fmt.Sprintf("before %d", i)
		want[createPaste(t, tc.nodes[l].node, c, false)] = c
	}
	tc.checkAll(ctx, f, want)
	tc.stop(f)
	l = tc.leaderOf(tc.running()...)

	secret := "burned-while-a-follower-was-down-5d1c"
	id := createPaste(t, tc.nodes[l].node, secret, true)
	if p, err := tc.nodes[l].node.Consume(ctx, id); err != nil || string(p.Content) != secret {
		t.Fatalf("consume = %v, %v", p, err)
	}
	for i := range 5 {
		c := fmt.Sprintf("while down %d", i)
		want[createPaste(t, tc.nodes[l].node, c, false)] = c
	}
	waitFor(t, 20*time.Second, func() bool {
		runtime.GC() // closes the descriptors of the files removed
		return len(filesHolding(tc.nodes[l].dir, secret)) == 0
	}, "the leader's purge to cut the burned paste out of its data dir")

	tc.restart(f)
	waitFor(t, 20*time.Second, func() bool {
		for id := range want {
			if _, err := tc.nodes[f].node.Read(ctx, id, true); err != nil {
				return false
			}
		}
		return true
	}, "the follower to apply every paste after the cut")
	// The snapshot it installed and its store are one copy: the segments
	// Raft received are linked into the store, not written again.
	if files := distinct(filesHolding(tc.nodes[f].dir, "before 0")); len(files) != 1 {
		t.Errorf("the follower holds a paste it installed in %d files: %v", len(files), files)
	}
	c := "after the catch-up via " + tc.nodes[f].id
	want[createPaste(t, tc.nodes[f].node, c, false)] = c
	for _, i := range tc.running() {
		tc.checkAll(ctx, i, want)
	}
}

// distinct returns paths without the hard links of files it holds already.
func distinct(paths []string) []string {
	var out []string
	var seen []os.FileInfo
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || slices.ContainsFunc(seen, func(o os.FileInfo) bool { return os.SameFile(o, fi) }) {
			continue
		}
		seen = append(seen, fi)
		out = append(out, p)
	}
	return out
}

// filesHolding returns the files below dir that hold s.
func filesHolding(dir, s string) []string {
	var paths []string
	filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if raw, _ := os.ReadFile(path); bytes.Contains(raw, []byte(s)) {
				paths = append(paths, path)
			}
		}
		return nil
	})
	return paths
}
