package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/pastenode/pastenode/fsm"
)

// snapshotFiles is Raft's file snapshot store, fitted to the FSM's
// segments, with an Open that reads a snapshot once instead of twice.
//
// The FSM persists a snapshot as a manifest in state.bin with its
// segments hard-linked beside it (fsm.ExpandSnapshot), so a sink names
// its directory (Dir), and Open hands out such a snapshot as the one
// stream a follower installs, of the size Raft must send ahead of it.
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
	s := snapshotFiles{fs, filepath.Join(dataDir, "snapshots")}
	if err == nil {
		s.removeUnfinished()
	}
	return s, err
}

// removeUnfinished removes the directories of snapshots a crash left
// unfinished, which Raft only warns of: their links would keep segments,
// and the content of pastes removed since, on disk.
func (s snapshotFiles) removeUnfinished() {
	entries, _ := os.ReadDir(s.dir)
	for _, e := range entries {
		if e.IsDir() && strings.HasSuffix(e.Name(), ".tmp") {
			os.RemoveAll(filepath.Join(s.dir, e.Name()))
		}
	}
}

// Create starts a snapshot whose sink names its directory.
func (s snapshotFiles) Create(version raft.SnapshotVersion, index, term uint64,
	conf raft.Configuration, confIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.FileSnapshotStore.Create(version, index, term, conf, confIndex, trans)
	if err != nil {
		return nil, err
	}
	// FileSnapshotStore writes a snapshot into <id>.tmp and renames it
	// at Close; the links made meanwhile move with it.
	dir := filepath.Join(s.dir, sink.ID()+".tmp")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		sink.Cancel()
		return nil, fmt.Errorf("create snapshot: the snapshot store did not make %s", dir)
	}
	return newSplitSink(dirSink{sink, dir}), nil
}

// dirSink is a sink of the file snapshot store that names its directory.
type dirSink struct {
	raft.SnapshotSink
	dir string
}

func (s dirSink) Dir() string { return s.dir }

// Load makes f's state the newest snapshot, as Raft would restore it
// were NoSnapshotRestoreOnStart not set: Raft then takes the newest
// snapshot's index as applied, so it is the newest or none.
func (s snapshotFiles) Load(f *fsm.FSM) error {
	metas, err := s.List()
	if err != nil || len(metas) == 0 {
		return err
	}
	dir := filepath.Join(s.dir, metas[0].ID)
	if err := f.LoadSnapshot(dir); err != nil {
		return damaged(dir, fmt.Sprintf("the newest snapshot cannot be read (%v)", err))
	}
	return nil
}

// Open opens the snapshot id as FileSnapshotStore lays it out: the
// directory snapshots/<id> holding meta.json and state.bin.
func (s snapshotFiles) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	if id == "" || id != filepath.Base(id) {
		return nil, nil, fmt.Errorf("open snapshot %q: not a snapshot id", id)
	}
	dir := filepath.Join(s.dir, id)
	meta, err := s.meta(id)
	if err != nil {
		return nil, nil, err
	}
	if size, rc, ok, err := fsm.ExpandSnapshot(dir); err != nil || ok {
		if err != nil {
			return nil, nil, fmt.Errorf("open snapshot %s: %w", id, err)
		}
		meta.Size = size
		return meta, rc, nil
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
	return meta, f, nil
}

// meta reads the meta.json of snapshot id.
func (s snapshotFiles) meta(id string) (*raft.SnapshotMeta, error) {
	raw, err := os.ReadFile(filepath.Join(s.dir, id, "meta.json"))
	if err != nil {
		return nil, fmt.Errorf("open snapshot %s: %w", id, err)
	}
	var meta raft.SnapshotMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, fmt.Errorf("open snapshot %s: meta.json: %w", id, err)
	}
	return &meta, nil
}

// installFSM is the node's FSM as Raft sees it but for Restore, which
// Raft calls only to install a snapshot a leader sent, as it does not
// restore at a start (NoSnapshotRestoreOnStart).
type installFSM struct {
	*fsm.FSM
	n *Node
}

func (f installFSM) Restore(rc io.ReadCloser) error { return f.n.install(rc) }

// install makes the FSM's state the snapshot Raft just stored, the
// newest, which rc streams. splitSink kept its segments as files, so the
// FSM links them in rather than read rc and write them anew.
func (n *Node) install(rc io.ReadCloser) error {
	rc.Close()
	metas, err := n.snaps.List()
	if err == nil && len(metas) == 0 {
		err = errors.New("no snapshot stored")
	}
	if err != nil {
		return fmt.Errorf("install snapshot: %w", err)
	}
	return n.fsm.InstallSnapshot(filepath.Join(n.snaps.dir, metas[0].ID))
}

// splitSink is a sink of the snapshot store that keeps the whole state a
// leader sends as the FSM keeps its own snapshots (fsm.SplitStream): the
// segments as files beside the manifest.
type splitSink struct {
	dirSink
	pw   *io.PipeWriter
	done chan error
	// end ends the sink once: Raft closes a sink that the FSM's Persist
	// closed already.
	end sync.Once
	err error
}

func newSplitSink(d dirSink) *splitSink {
	pr, pw := io.Pipe()
	s := &splitSink{dirSink: d, pw: pw, done: make(chan error, 1)}
	go func() {
		err := fsm.SplitStream(pr, d.dir, d.SnapshotSink)
		pr.CloseWithError(err) // a Write after a failure fails too
		s.done <- err
	}()
	return s
}

func (s *splitSink) Write(p []byte) (int, error) { return s.pw.Write(p) }

func (s *splitSink) Close() error { return s.finish(false) }

func (s *splitSink) Cancel() error { return s.finish(true) }

// finish ends the stream, then closes or cancels the file snapshot
// store's sink: cancels it too when the split failed.
func (s *splitSink) finish(cancel bool) error {
	s.end.Do(func() {
		if cancel {
			s.pw.CloseWithError(errors.New("snapshot canceled"))
		} else {
			s.pw.Close()
		}
		switch err := <-s.done; {
		case cancel:
			s.err = s.dirSink.Cancel()
		case err != nil:
			s.dirSink.Cancel()
			s.err = err
		default:
			s.err = s.dirSink.Close()
		}
	})
	return s.err
}
