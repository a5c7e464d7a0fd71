package node

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// snapshotFiles is Raft's file snapshot store with an Open that reads a
// snapshot once instead of twice.
//
// FileSnapshotStore.Open reads the whole state.bin for its CRC-64 before
// it hands the file over, and the restore then reads it again: for a large
// store that first pass is a good share of a start's CPU. The FSM's
// snapshot formats check themselves as they are read (an S2 stream has a
// CRC-32C per block, gzip a CRC-32 and the length at its end) and a
// restore reads to the end, so a damaged state.bin still fails, at its
// restore instead of its Open; Raft treats both failures alike, trying
// the next older snapshot. What Open checks here is what costs nothing:
// that state.bin has the size meta.json gives it, so a truncated file
// fails at once. Writes, and the CRC-64 they record, stay Raft's.
type snapshotFiles struct {
	*raft.FileSnapshotStore
	dir string // the store's snapshots directory
}

// openSnapshotFiles opens the snapshot store of dataDir, which keeps the
// newest retain snapshots.
func openSnapshotFiles(dataDir string, retain int, hlog hclog.Logger) (snapshotFiles, error) {
	fs, err := raft.NewFileSnapshotStoreWithLogger(dataDir, retain, hlog)
	return snapshotFiles{fs, filepath.Join(dataDir, "snapshots")}, err
}

// Open opens the snapshot id as FileSnapshotStore lays it out: the
// directory snapshots/<id> holding meta.json and state.bin.
func (s snapshotFiles) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	if id == "" || id != filepath.Base(id) {
		return nil, nil, fmt.Errorf("open snapshot %q: not a snapshot id", id)
	}
	dir := filepath.Join(s.dir, id)
	raw, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("open snapshot %s: %w", id, err)
	}
	var meta raft.SnapshotMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, nil, fmt.Errorf("open snapshot %s: meta.json: %w", id, err)
	}
	f, err := os.Open(filepath.Join(dir, "state.bin"))
	if err != nil {
		return nil, nil, fmt.Errorf("open snapshot %s: %w", id, err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() != meta.Size {
		err = fmt.Errorf("state.bin is %d bytes, meta.json says %d", fi.Size(), meta.Size)
	}
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("open snapshot %s: %w", id, err)
	}
	return &meta, f, nil
}
