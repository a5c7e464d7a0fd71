package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/migrate"
)

// The Raft log lives in walDir of the data dir, in hashicorp/raft-wal's
// segment files: one append and one fsync per batch, where bolt rewrote
// the log's last leaf and synced twice. raft.db stays, as the stable
// store (term and vote) and as where older versions kept the log; openLog
// moves such a log into walDir, building it in walStaging first.
const (
	walDir     = "wal"
	walStaging = "wal.migrating"
)

// openStores opens the stable store (raft.db), the Raft log (wal/, moved
// there from raft.db by the first start of this version: openLog), the
// snapshot store and the FSM's segments, and refuses a data dir that Raft
// could not start from, naming the damaged file. The FSM's state is on
// disk: it loads the newest snapshot itself, linking its segments back
// rather than reading every paste, and Raft, told not to restore it
// (NoSnapshotRestoreOnStart), replays the log after it.
func (n *Node) openStores(hlog hclog.Logger) (raft.LogStore, snapshotFiles, error) {
	if err := n.fsm.OpenDir(filepath.Join(n.cfg.DataDir, "store")); err != nil {
		return nil, snapshotFiles{}, err
	}
	var err error
	if n.bolt, err = openStable(n.cfg.DataDir, n.log); err != nil {
		return nil, snapshotFiles{}, err
	}
	segSize := walSegmentSize(n.cfg.StorageReserve)
	w, moved, err := openLog(n.cfg.DataDir, n.bolt, segSize, hlog, n.log)
	if err != nil {
		return nil, snapshotFiles{}, err
	}
	n.wal = &logStore{w: w, dataDir: n.cfg.DataDir, segSize: segSize, hlog: hlog}
	if moved {
		// Open raft.db again, to give back the space of the log moved
		// out of it (openStable).
		n.bolt.Close()
		if n.bolt, err = openStable(n.cfg.DataDir, n.log); err != nil {
			return nil, snapshotFiles{}, err
		}
	}
	// One snapshot is kept: a snapshot costs its index, and the segments
	// an older one links would keep removed pastes on disk.
	snaps, err := openSnapshotFiles(n.cfg.DataDir, 1, hlog)
	if err != nil {
		return nil, snapshotFiles{}, fmt.Errorf("open snapshot store: %w", err)
	}
	if err := checkSnapshots(n.cfg.DataDir, n.wal, snaps); err != nil {
		return nil, snapshotFiles{}, err
	}
	if err := snaps.Load(n.fsm); err != nil {
		return nil, snapshotFiles{}, err
	}
	// No raft.LogCache in front: it held the newest 512 entries in memory,
	// up to 512 MiB of large pastes on every node, and replication reads
	// them from the segment's page cache as fast.
	return n.wal, snaps, nil
}

// openWAL opens, or creates, the log in dir.
func openWAL(dir string, segmentSize int, hlog hclog.Logger) (*wal.WAL, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return wal.Open(dir, wal.WithSegmentSize(segmentSize), wal.WithLogger(hlog.Named("wal")))
}

// logStore is the Raft log: raft-wal's, behind a lock under which cut
// swaps in a copy of it.
type logStore struct {
	mu      sync.RWMutex
	w       *wal.WAL
	dataDir string
	segSize int
	hlog    hclog.Logger
	// deletes counts DeleteRange calls: a copy cut started before one
	// may hold entries the log no longer has.
	deletes atomic.Uint64
	closed  bool // by Close, which a cut under way must not undo
}

func (l *logStore) FirstIndex() (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.FirstIndex()
}

func (l *logStore) LastIndex() (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.LastIndex()
}

func (l *logStore) GetLog(index uint64, log *raft.Log) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.GetLog(index, log)
}

func (l *logStore) StoreLog(log *raft.Log) error {
	return l.StoreLogs([]*raft.Log{log})
}

func (l *logStore) StoreLogs(logs []*raft.Log) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.StoreLogs(logs)
}

func (l *logStore) DeleteRange(min, max uint64) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	l.deletes.Add(1)
	return l.w.DeleteRange(min, max)
}

// IsMonotonic tells Raft that the log takes no gap between entries (raft-wal
// refuses one), so that installing a snapshot empties it rather than
// leaving entries the next append could not follow.
func (l *logStore) IsMonotonic() bool { return true }

func (l *logStore) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.w.Close()
}

// walSegmentSize is the size of the log's segment files for a storage
// reserve. raft-wal allocates a segment's whole size when it starts one,
// and when that fails for want of space it refuses every append after,
// until a restart. Segments of a quarter of the reserve or less always
// find room while the storage guard keeps the reserve free; small ones
// also give deleted entries back to the disk sooner, as only whole
// segments are removed. A segment holds an entry larger than its size.
func walSegmentSize(reserve int64) int {
	const most, least = 8 << 20, 1 << 20
	if reserve <= 0 {
		return most
	}
	return int(min(max(reserve/4, least), most))
}

// openLog opens the Raft log in the data dir's walDir, first moving into
// it the entries an older version kept in raft.db.
//
// The move is crash-safe: the entries are copied into walStaging, synced,
// and the directory renamed to walDir; only then are they deleted from
// raft.db. A start that finds walStaging and no walDir copies again from
// the start; one that finds walDir and entries still in raft.db deletes
// them. Should raft.db hold entries past the end of walDir, a version
// without walDir ran on the data dir after it was moved: its entries are
// not in the log, and the start is refused.
func openLog(dataDir string, bolt *raftboltdb.BoltStore, segmentSize int, hlog hclog.Logger, log *slog.Logger) (w *wal.WAL, moved bool, err error) {
	dir := filepath.Join(dataDir, walDir)
	if err := recoverCut(dataDir); err != nil {
		return nil, false, fmt.Errorf("finish cutting the raft log: %w", err)
	}
	first, last, err := logRange(bolt)
	if err != nil {
		return nil, false, fmt.Errorf("read the log in raft.db: %w", err)
	}
	if last > 0 {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			if err := stageLog(dataDir, bolt, segmentSize, hlog); err != nil {
				return nil, false, fmt.Errorf("move the raft log from raft.db to %s: %w", dir, err)
			}
		}
	}
	w, err = openWAL(dir, segmentSize, hlog)
	if err != nil {
		return nil, false, fmt.Errorf("open raft log %s: %w", dir, err)
	}
	if last == 0 {
		return w, false, nil
	}
	if walLast, err := w.LastIndex(); err != nil || walLast < last {
		w.Close()
		if err != nil {
			return nil, false, fmt.Errorf("open raft log %s: %w", dir, err)
		}
		return nil, false, damaged(filepath.Join(dataDir, "raft.db"), fmt.Sprintf(
			"it holds log entries up to %d, past the end of %s at %d: a version of pastenode older than %s ran on this data dir after it was upgraded",
			last, dir, walLast, walDir))
	}
	if err := bolt.DeleteRange(first, last); err != nil {
		w.Close()
		return nil, false, fmt.Errorf("delete the moved log from raft.db: %w", err)
	}
	log.Info("moved the raft log from raft.db to "+walDir, "first", first, "last", last)
	return w, true, nil
}

// logRange returns the first and last index of the log in s; 0, 0 when it
// holds none.
func logRange(s raft.LogStore) (first, last uint64, err error) {
	if first, err = s.FirstIndex(); err != nil {
		return 0, 0, err
	}
	if last, err = s.LastIndex(); err != nil {
		return 0, 0, err
	}
	return first, last, nil
}

// stageLog copies the log of bolt into a new log in walStaging and renames
// that to walDir, synced at each step.
func stageLog(dataDir string, bolt raft.LogStore, segmentSize int, hlog hclog.Logger) error {
	staging := filepath.Join(dataDir, walStaging)
	// What an interrupted start left there is incomplete.
	if err := os.RemoveAll(staging); err != nil {
		return err
	}
	w, err := openWAL(staging, segmentSize, hlog)
	if err != nil {
		return err
	}
	// raft-wal syncs each append: nothing acknowledged by CopyLogs is
	// only in the page cache.
	err = migrate.CopyLogs(context.Background(), w, bolt, 4<<20, nil)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := syncDir(staging); err != nil {
		return err
	}
	if err := os.Rename(staging, filepath.Join(dataDir, walDir)); err != nil {
		return err
	}
	return syncDir(dataDir)
}

// syncDir makes the entries of dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}
