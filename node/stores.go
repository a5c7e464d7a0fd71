package node

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// openStores opens the Raft log (bolt), the snapshot store and the FSM's
// segments, and refuses a data dir that Raft could not start from, naming
// the damaged file. The FSM's state is on disk: it loads the newest
// snapshot itself, linking its segments back rather than reading every
// paste, and Raft, told not to restore it (NoSnapshotRestoreOnStart),
// replays the log after it.
func (n *Node) openStores(hlog hclog.Logger) (raft.LogStore, snapshotFiles, error) {
	if err := n.fsm.OpenDir(filepath.Join(n.cfg.DataDir, "store")); err != nil {
		return nil, snapshotFiles{}, err
	}
	boltPath := filepath.Join(n.cfg.DataDir, "raft.db")
	if err := checkBoltFile(boltPath); err != nil {
		return nil, snapshotFiles{}, err
	}
	var err error
	store, err := raftboltdb.New(raftboltdb.Options{
		Path:        boltPath,
		BoltOptions: &bbolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
	})
	if errors.Is(err, bbolt.ErrTimeout) {
		return nil, snapshotFiles{}, fmt.Errorf("open raft log %s: locked: another pastenode runs on data dir %s", boltPath, n.cfg.DataDir)
	}
	if err != nil {
		return nil, snapshotFiles{}, fmt.Errorf("open raft log %s: %w", boltPath, err)
	}
	n.bolt = &boltLog{BoltStore: store, path: boltPath}
	logs, err := raft.NewLogCache(512, n.bolt)
	if err != nil {
		return nil, snapshotFiles{}, fmt.Errorf("log cache: %w", err)
	}
	// One snapshot is kept: a snapshot costs its index, and the segments
	// an older one links would keep removed pastes on disk.
	snaps, err := openSnapshotFiles(n.cfg.DataDir, 1, hlog)
	if err != nil {
		return nil, snapshotFiles{}, fmt.Errorf("open snapshot store: %w", err)
	}
	if err := checkSnapshots(n.cfg.DataDir, n.bolt, snaps); err != nil {
		return nil, snapshotFiles{}, err
	}
	if err := snaps.Load(n.fsm); err != nil {
		return nil, snapshotFiles{}, err
	}
	return logs, snaps, nil
}
