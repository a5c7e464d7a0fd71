package node

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/klauspost/compress/s2"
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

// TestSnapshotFileHoldsNoConsumedContent consumes a burn paste and takes a
// snapshot at once, well within the consume grace, and checks that the
// snapshot file on disk does not hold the content.
func TestSnapshotFileHoldsNoConsumedContent(t *testing.T) {
	n := openNode(t)
	ctx := context.Background()
	secret := "burn-this-3e1f0a7c9d"
	p, err := n.Create(ctx, CreateRequest{Content: []byte(secret), Burn: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := n.Consume(ctx, p.ID)
	if err != nil || string(got.Content) != secret {
		t.Fatalf("consume = %v, %v", got, err)
	}
	if _, err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	states, _ := filepath.Glob(filepath.Join(n.cfg.DataDir, "snapshots", "*", "state.bin"))
	if len(states) == 0 {
		t.Fatal("no snapshot file")
	}
	for _, path := range states {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// The format is a 7-byte header, then an S2 stream.
		plain, err := io.ReadAll(s2.NewReader(bytes.NewReader(raw[7:])))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if bytes.Contains(plain, []byte(secret)) || bytes.Contains(raw, []byte(secret)) {
			t.Fatalf("%s holds the consumed burn paste's content", path)
		}
	}
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
