package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// closedNodeWithData runs a node with TrailingLogs 1, writes and snapshots,
// writes again, closes it, and returns its config for a reopen.
func closedNodeWithData(t *testing.T) Config {
	t.Helper()
	n := openNode(t, func(c *Config) { c.TrailingLogs = 1 })
	ctx := context.Background()
	for range 5 {
		if _, err := n.Create(ctx, CreateRequest{Content: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Create(ctx, CreateRequest{Content: []byte("after")}); err != nil {
		t.Fatal(err)
	}
	cfg := n.cfg
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// reopen opens a node for cfg and returns the error of Open.
func reopen(t *testing.T, cfg Config) error {
	t.Helper()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = n.Open(context.Background())
	if err == nil {
		n.Close()
	}
	return err
}

func TestTruncatedRaftDBNamesTheFile(t *testing.T) {
	cfg := closedNodeWithData(t)
	path := filepath.Join(cfg.DataDir, "raft.db")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// Page-aligned cuts are the ones bbolt would die on with SIGBUS.
	for _, size := range []int64{st.Size() - 4096, 3 * 4096, 4096, 100} {
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
		err := reopen(t, cfg)
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "Way out") {
			t.Fatalf("open with raft.db cut to %d bytes: %v; want ErrDamaged naming %s and the way out", size, err, path)
		}
	}
}

func TestMissingSnapshotNamesTheDir(t *testing.T) {
	cfg := closedNodeWithData(t)
	snaps := filepath.Join(cfg.DataDir, "snapshots")
	if err := os.RemoveAll(snaps); err != nil {
		t.Fatal(err)
	}
	err := reopen(t, cfg)
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), snaps) {
		t.Fatalf("open without the snapshot: %v; want ErrDamaged naming %s", err, snaps)
	}
}

func TestUnreadableSnapshotNamesTheDir(t *testing.T) {
	cfg := closedNodeWithData(t)
	states, _ := filepath.Glob(filepath.Join(cfg.DataDir, "snapshots", "*", "state.bin"))
	if len(states) == 0 {
		t.Fatal("no snapshot written")
	}
	for _, s := range states {
		if err := os.Remove(s); err != nil {
			t.Fatal(err)
		}
	}
	err := reopen(t, cfg)
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "snapshots") {
		t.Fatalf("open with the snapshot's state.bin gone: %v; want ErrDamaged naming the snapshots", err)
	}
}

func TestIntactDataDirReopens(t *testing.T) {
	cfg := closedNodeWithData(t)
	if err := reopen(t, cfg); err != nil {
		t.Fatalf("reopen of an intact data dir: %v", err)
	}
}
