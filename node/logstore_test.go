package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/pastenode/pastenode/fsm"
)

// boltFixture is testdata/boltlog: a data dir written by a version that
// kept the Raft log in raft.db (testdata/mkboltfixture), and its pastes.
type boltFixture struct {
	dir     string            // a copy of the data dir, the test's to change
	Pastes  map[string]string `json:"pastes"`
	Deleted []string          `json:"deleted"`
	// The log in raft.db as the fixture holds it.
	first, last uint64
	entries     map[uint64]raft.Log
	term        uint64
}

// copyBoltFixture copies the fixture's data dir into a new temporary dir
// and reads what it holds.
func copyBoltFixture(t *testing.T) *boltFixture {
	t.Helper()
	src := filepath.Join("testdata", "boltlog")
	raw, err := os.ReadFile(filepath.Join(src, "pastes.json"))
	if err != nil {
		t.Fatal(err)
	}
	fx := &boltFixture{dir: t.TempDir(), entries: map[uint64]raft.Log{}}
	if err := json.Unmarshal(raw, fx); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(fx.dir, os.DirFS(filepath.Join(src, "data"))); err != nil {
		t.Fatal(err)
	}
	// Git keeps no modes but the executable bit; the node refuses an
	// admin token that others can read.
	if err := os.Chmod(filepath.Join(fx.dir, "admin-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := openBolt(t, fx.dir)
	defer b.Close()
	if fx.first, fx.last, err = logRange(b); err != nil {
		t.Fatal(err)
	}
	// The fixture's snapshot compacted the log, and more came after it.
	if fx.first <= 1 || fx.last < fx.first+4 {
		t.Fatalf("the fixture's raft.db holds entries %d to %d, want a compacted log", fx.first, fx.last)
	}
	for i := fx.first; i <= fx.last; i++ {
		var l raft.Log
		if err := b.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		fx.entries[i] = l
	}
	if fx.term, err = b.GetUint64([]byte("CurrentTerm")); err != nil || fx.term == 0 {
		t.Fatalf("the fixture's term: %d, %v", fx.term, err)
	}
	return fx
}

func openBolt(t *testing.T, dataDir string) *raftboltdb.BoltStore {
	t.Helper()
	b, err := raftboltdb.NewBoltStore(filepath.Join(dataDir, "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// open starts a node on the fixture's data dir and returns it with what
// it logged.
func (fx *boltFixture) open(t *testing.T) (*Node, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	n := openNode(t, func(c *Config) {
		c.DataDir = fx.dir
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	return n, logs
}

// checkPastes reads every paste of the fixture from n, and the deleted
// ones as not found.
func (fx *boltFixture) checkPastes(t *testing.T, n *Node) {
	t.Helper()
	ctx := context.Background()
	for id, want := range fx.Pastes {
		p, err := n.Read(ctx, id, false)
		if err != nil || string(p.Content) != want {
			t.Fatalf("paste %s: %v; want %q", id, err, want)
		}
	}
	for _, id := range fx.Deleted {
		if _, err := n.Read(ctx, id, false); !errors.Is(err, fsm.ErrNotFound) {
			t.Fatalf("deleted paste %s: %v; want not found", id, err)
		}
	}
}

// checkMoved checks that the log of n holds the fixture's entries and that
// raft.db holds none but still the term, once n is closed.
func (fx *boltFixture) checkMoved(t *testing.T, n *Node) {
	t.Helper()
	if first, _ := n.wal.FirstIndex(); first != fx.first {
		t.Fatalf("the log starts at %d, want %d as in raft.db", first, fx.first)
	}
	for i := fx.first; i <= fx.last; i++ {
		var got raft.Log
		if err := n.wal.GetLog(i, &got); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		want := fx.entries[i]
		if got.Term != want.Term || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("entry %d: term %d type %s, %d bytes; want term %d type %s, %d bytes as in raft.db",
				i, got.Term, got.Type, len(got.Data), want.Term, want.Type, len(want.Data))
		}
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	b := openBolt(t, fx.dir)
	defer b.Close()
	if first, last, err := logRange(b); err != nil || first != 0 || last != 0 {
		t.Fatalf("raft.db still holds entries %d to %d (%v)", first, last, err)
	}
	if term, err := b.GetUint64([]byte("CurrentTerm")); err != nil || term < fx.term {
		t.Fatalf("raft.db's term is %d (%v), want at least the fixture's %d", term, err, fx.term)
	}
	if _, err := os.Stat(filepath.Join(fx.dir, walStaging)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s is still there: %v", walStaging, err)
	}
}

const movedLine = "moved the raft log from raft.db to wal"

func TestMigrateBoltFixture(t *testing.T) {
	fx := copyBoltFixture(t)
	n, logs := fx.open(t)
	fx.checkPastes(t, n)
	if got := strings.Count(logs.String(), movedLine); got != 1 {
		t.Fatalf("%d lines say the log moved, want 1:\n%s", got, logs)
	}
	fx.checkMoved(t, n)

	// The next start finds nothing to move and everything in place.
	n, logs = fx.open(t)
	fx.checkPastes(t, n)
	if strings.Contains(logs.String(), movedLine) {
		t.Fatalf("the second start moved the log again:\n%s", logs)
	}
}

// TestInterruptedMigrationIsRedone starts on the fixture as a start that
// died in the middle of the move left it.
func TestInterruptedMigrationIsRedone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		crash func(t *testing.T, dir string, b *raftboltdb.BoltStore)
	}{
		{"a half-written staging dir", func(t *testing.T, dir string, b *raftboltdb.BoltStore) {
			w, err := openWAL(filepath.Join(dir, walStaging), 1<<20, hclog.NewNullLogger())
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			first, _, _ := logRange(b)
			var l raft.Log
			if err := b.GetLog(first, &l); err != nil {
				t.Fatal(err)
			}
			if err := w.StoreLog(&l); err != nil {
				t.Fatal(err)
			}
		}},
		{"the log in place but still in raft.db", func(t *testing.T, dir string, b *raftboltdb.BoltStore) {
			if err := stageLog(dir, b, 1<<20, hclog.NewNullLogger()); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := copyBoltFixture(t)
			b := openBolt(t, fx.dir)
			tc.crash(t, fx.dir, b)
			b.Close()
			n, logs := fx.open(t)
			fx.checkPastes(t, n)
			if got := strings.Count(logs.String(), movedLine); got != 1 {
				t.Fatalf("%d lines say the log moved, want 1:\n%s", got, logs)
			}
			fx.checkMoved(t, n)
		})
	}
}

// TestNewerLogInRaftDBIsRefused: entries in raft.db past the end of wal/
// were written by an older version after the upgrade, and are not in the
// log the node would run on.
func TestNewerLogInRaftDBIsRefused(t *testing.T) {
	fx := copyBoltFixture(t)
	b := openBolt(t, fx.dir)
	if err := stageLog(fx.dir, b, 1<<20, hclog.NewNullLogger()); err != nil {
		t.Fatal(err)
	}
	next := fx.entries[fx.last]
	next.Index++
	if err := b.StoreLog(&next); err != nil {
		t.Fatal(err)
	}
	b.Close()
	cfg := Config{ID: "n1", DataDir: fx.dir, RaftAddr: "127.0.0.1:1", BootstrapExpect: 1, TimeScale: 0.1}
	err := reopen(t, cfg)
	path := filepath.Join(fx.dir, "raft.db")
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "older") {
		t.Fatalf("open with raft.db ahead of wal/: %v; want ErrDamaged naming %s and an older version", err, path)
	}
}

// logBuffer collects a node's log lines from its goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLogReopensAfterCuttingItsTail: a follower cuts the tail of its log
// when a new leader's entries conflict with it. raft-wal v0.4.0 marked the
// cut segment sealed without writing its index, and the next start failed
// on it ("sealed segment has no index block", hashicorp/raft-wal#31).
func TestLogReopensAfterCuttingItsTail(t *testing.T) {
	dir := t.TempDir()
	w, err := openWAL(dir, 1<<20, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	data := storeEntries(t, w, 100, 10)
	if err := w.DeleteRange(91, 100); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w, err = openWAL(dir, 1<<20, hclog.NewNullLogger()); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, i := range []uint64{1, 90} {
		var l raft.Log
		if err := w.GetLog(i, &l); err != nil || !bytes.Equal(l.Data, data) {
			t.Fatalf("entry %d after the cut and a restart: %v", i, err)
		}
	}
	if last, _ := w.LastIndex(); last != 90 {
		t.Fatalf("the log ends at %d, want 90", last)
	}
}
