package node

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pastenode/pastenode/fsm"
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
	// The pages in use end at the size the last transaction saw; the file
	// may be longer. Page-aligned cuts below it are the ones bbolt would
	// die on with SIGBUS.
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var used int64
	err = db.View(func(tx *bbolt.Tx) error { used = tx.Size(); return nil })
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int64{used - 4096, 3 * 4096, 4096, 100} {
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

// TestUnreadableSnapshotNamesTheDir: with every state.bin gone, or with a
// byte of each flipped (which snapshotFiles.Open does not look for: the
// restore's own checksums must catch it, as Raft's CRC-64 did), the node
// refuses the data dir, naming the snapshots.
func TestUnreadableSnapshotNamesTheDir(t *testing.T) {
	for name, spoil := range map[string]func(path string) error{
		"state.bin gone": os.Remove,
		"a byte of state.bin flipped": func(path string) error {
			raw, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			raw[len(raw)-1] ^= 0x55
			return os.WriteFile(path, raw, 0o600)
		},
	} {
		cfg := closedNodeWithData(t)
		states, _ := filepath.Glob(filepath.Join(cfg.DataDir, "snapshots", "*", "state.bin"))
		if len(states) == 0 {
			t.Fatal("no snapshot written")
		}
		for _, s := range states {
			if err := spoil(s); err != nil {
				t.Fatal(err)
			}
		}
		err := reopen(t, cfg)
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "snapshots") {
			t.Errorf("open with %s in every snapshot: %v; want ErrDamaged naming the snapshots", name, err)
		}
	}
}

func TestIntactDataDirReopens(t *testing.T) {
	cfg := closedNodeWithData(t)
	if err := reopen(t, cfg); err != nil {
		t.Fatalf("reopen of an intact data dir: %v", err)
	}
}

// TestRemovedContentIsPurged consumes a burn paste and deletes another,
// with snapshots taken at once, while both are still in their segments;
// within PurgeAfter no file of the store or the snapshots holds either
// content, and a paste kept survives the purge and a restart.
func TestRemovedContentIsPurged(t *testing.T) {
	n := openNode(t, func(c *Config) { c.PurgeAfter = 2 * time.Second })
	ctx := context.Background()
	burnt, deleted := "burn-this-3e1f0a7c9d", "delete-this-8b2d4f6a1c"
	p, err := n.Create(ctx, CreateRequest{Content: []byte(burnt), Burn: true})
	if err != nil {
		t.Fatal(err)
	}
	d, err := n.Create(ctx, CreateRequest{Content: []byte(deleted), DeleteToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	// Enough kept beside them that compaction alone would leave their
	// segment be.
	var kept *fsm.Paste
	for range 20 {
		if kept, err = n.Create(ctx, CreateRequest{Content: []byte("kept")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if got, err := n.Consume(ctx, p.ID); err != nil || string(got.Content) != burnt {
		t.Fatalf("consume = %v, %v", got, err)
	}
	if err := n.Delete(ctx, d.ID, "tok", false); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	// Every file: the segments, the snapshots, the Raft log.
	holding := func() []string {
		var paths []string
		filepath.Walk(n.cfg.DataDir, func(path string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return nil
			}
			raw, _ := os.ReadFile(path)
			if bytes.Contains(raw, []byte(burnt)) || bytes.Contains(raw, []byte(deleted)) {
				paths = append(paths, path)
			}
			return nil
		})
		return paths
	}
	if len(holding()) == 0 {
		t.Fatal("no file held the content before the purge: the test tests nothing")
	}
	deadline := time.Now().Add(n.cfg.PurgeAfter + 10*time.Second)
	for paths := holding(); len(paths) > 0; paths = holding() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v, %v still hold removed content", n.cfg.PurgeAfter, paths)
		}
		runtime.GC() // closes the descriptors of the files removed
		time.Sleep(100 * time.Millisecond)
	}
	cfg := n.cfg
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = openNode(t, func(c *Config) { *c = cfg })
	waitFor(t, 10*time.Second, "the paste kept after a restart", func() bool {
		_, ok := n.fsm.Get(kept.ID, time.Now())
		return ok
	})
}

func TestSecondNodeOnADataDirSaysItIsLocked(t *testing.T) {
	n := openNode(t)
	cfg := n.cfg
	cfg.RaftAddr, cfg.AdvertiseAddr = "127.0.0.1:1", "127.0.0.1:1"
	err := reopen(t, cfg)
	if err == nil || !strings.Contains(err.Error(), "another pastenode runs on data dir "+cfg.DataDir) {
		t.Fatalf("open of a data dir in use: %v; want an error saying it is locked", err)
	}
}
