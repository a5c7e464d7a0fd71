package node

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// TestMovedLogLeavesRaftDBSmall moves a log of 16 MiB out of raft.db and
// checks that raft.db gives the space back and keeps the term, and that
// a raft.db whose log is still in it is left alone.
func TestMovedLogLeavesRaftDBSmall(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "raft.db")
	b, err := raftboltdb.NewBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	const entries = 16_000
	data := storeEntries(t, b, entries, 500)
	if err := b.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	b.Close()
	before := fileSize(t, path)
	if err := compactStable(path, slog.New(slog.DiscardHandler)); err != nil || fileSize(t, path) != before {
		t.Fatalf("compacting a raft.db that holds its log: %v, %d bytes, want it left at %d", err, fileSize(t, path), before)
	}

	n, err := New(Config{ID: "n1", DataDir: dir, RaftAddr: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	logs, _, err := n.openStores(hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer n.closeResources()
	after := fileSize(t, path)
	t.Logf("raft.db: %d KiB with the log, %d KiB after it moved", before>>10, after>>10)
	if before < 16<<20 || after > stableCompactAt {
		t.Fatalf("raft.db is %d bytes after the move (%d before), want at most %d", after, before, stableCompactAt)
	}
	if term, err := n.bolt.GetUint64([]byte("CurrentTerm")); err != nil || term != 7 {
		t.Fatalf("term after the compaction: %d, %v; want 7", term, err)
	}
	var l raft.Log
	if err := logs.GetLog(entries, &l); err != nil || len(l.Data) != len(data) {
		t.Fatalf("the last entry after the move: %v, %d bytes", err, len(l.Data))
	}
	if _, err := os.Stat(path + ".compact"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the compaction's copy is still there: %v", err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// storeEntries stores entries of 1 KiB from index 1 to n in b, per to a
// call, and returns their data.
func storeEntries(t *testing.T, b raft.LogStore, n, per int) []byte {
	t.Helper()
	data := make([]byte, 1024)
	for first := 1; first <= n; first += per {
		logs := make([]*raft.Log, per)
		for i := range logs {
			logs[i] = &raft.Log{Index: uint64(first + i), Term: 1, Type: raft.LogCommand, Data: data}
		}
		if err := b.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	return data
}
