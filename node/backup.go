package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/fsm"
)

// ErrDataDirNotEmpty means a restore was asked into a data dir that holds
// something already.
var ErrDataDirNotEmpty = errors.New("data dir is not empty")

// Backup writes a consistent snapshot of the whole state to w: every paste,
// burn pastes, delete token hashes, expiry times, tombstones and removed
// nodes. It first catches up with the leader, so every write acknowledged
// before the call is in it. It returns the log index of the snapshot.
func (n *Node) Backup(ctx context.Context, w io.Writer) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, readBudget)
	defer cancel()
	if err := n.linearize(ctx); err != nil {
		return 0, fmt.Errorf("backup: catch up with the leader: %w", err)
	}
	return n.fsm.WriteSnapshot(w)
}

// RestoreConfig says what to restore where.
type RestoreConfig struct {
	From          string // the backup file
	DataDir       string // must not exist or be empty
	ID            string // the node id to start with
	AdvertiseAddr string // the Raft address peers dial, host:port
}

// Restore prepares cfg.DataDir from a backup, as etcdutl snapshot restore
// does: a Raft snapshot of the backed-up state whose configuration is this
// node alone, so that the node starts as a new single-voter cluster holding
// everything, and the others join it. The whole file is checked before
// anything is written: a newer format (pastenode.ErrBackupVersion), a
// corrupt or truncated file (pastenode.ErrBackupCorrupt), a non-empty data
// dir (ErrDataDirNotEmpty) or a node id removed in the backup are refused.
func Restore(cfg RestoreConfig) (fsm.SnapshotInfo, error) {
	// Restore opens no socket, so the key rule for addresses beyond
	// loopback is the running node's to check, not this one's.
	check := Config{ID: cfg.ID, DataDir: cfg.DataDir, RaftAddr: cfg.AdvertiseAddr, InsecureCluster: true}
	if err := check.Validate(); err != nil {
		return fsm.SnapshotInfo{}, err
	}
	if err := checkEmptyDir(cfg.DataDir); err != nil {
		return fsm.SnapshotInfo{}, err
	}
	f, err := os.Open(cfg.From)
	if err != nil {
		return fsm.SnapshotInfo{}, fmt.Errorf("open backup: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fsm.SnapshotInfo{}, fmt.Errorf("open backup: %w", err)
	}
	bi, err := pastenode.VerifyBackup(f, st.Size())
	if err != nil {
		return fsm.SnapshotInfo{}, err
	}
	body := func() io.Reader { return io.NewSectionReader(f, bi.BodyOffset, bi.BodyLen) }
	info, err := fsm.InspectSnapshot(body())
	if err != nil {
		return fsm.SnapshotInfo{}, fmt.Errorf("%w: %v", pastenode.ErrBackupCorrupt, err)
	}
	if slices.Contains(info.Removed, cfg.ID) {
		return fsm.SnapshotInfo{}, fmt.Errorf("node id %q was removed from the cluster this backup comes from: restore under another id", cfg.ID)
	}
	if err := writeRestore(cfg, info.Index, body()); err != nil {
		return fsm.SnapshotInfo{}, err
	}
	return info, nil
}

// writeRestore writes the node id and a Raft snapshot of body at index,
// whose configuration is this node alone, into an empty data dir. On
// failure it removes what it wrote.
func writeRestore(cfg RestoreConfig, index uint64, body io.Reader) (err error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	defer func() {
		if err != nil {
			emptyDir(cfg.DataDir)
		}
	}()
	if err := checkNodeID(cfg.DataDir, cfg.ID); err != nil {
		return err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, hclog.NewNullLogger())
	if err != nil {
		return fmt.Errorf("open snapshot store: %w", err)
	}
	index = max(index, 1)
	conf := raft.Configuration{Servers: []raft.Server{{
		Suffrage: raft.Voter, ID: raft.ServerID(cfg.ID), Address: raft.ServerAddress(cfg.AdvertiseAddr),
	}}}
	// The snapshot store encodes the peers of old snapshot versions
	// through a transport; an in-memory one does that without a socket.
	_, trans := raft.NewInmemTransport(raft.ServerAddress(cfg.AdvertiseAddr))
	defer trans.Close()
	sink, err := snaps.Create(raft.SnapshotVersionMax, index, 1, conf, index, trans)
	if err != nil {
		return fmt.Errorf("create snapshot: %w", err)
	}
	if _, err := io.Copy(sink, body); err != nil {
		sink.Cancel()
		return fmt.Errorf("write snapshot: %w", err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	return nil
}

// checkEmptyDir accepts a dir that does not exist or holds nothing.
func checkEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("%w: %s holds %d entries; restore into a new or empty directory", ErrDataDirNotEmpty, dir, len(entries))
	}
	return nil
}

// emptyDir removes everything inside dir, best effort.
func emptyDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.RemoveAll(dir + string(os.PathSeparator) + e.Name())
	}
}
