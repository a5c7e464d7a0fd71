package node

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/hashicorp/raft"
)

// ErrDamaged means a file of the data dir is damaged or missing, so the
// node cannot start from it. The error names the file and the way out.
var ErrDamaged = errors.New("data dir damaged")

// damaged returns an ErrDamaged error about file, with what is wrong and
// what the operator can do.
func damaged(file, problem string) error {
	dir := filepath.Dir(file)
	if filepath.Base(dir) == "snapshots" {
		dir = filepath.Dir(dir)
	}
	return fmt.Errorf("%w: %s: %s. Way out: stop here, move %s aside and restore it from a backup; "+
		"in a cluster you may instead run `pastectl remove <this node id>` on a live node and start this one "+
		"with a new --node-id and an empty --data-dir, and it copies everything from the others",
		ErrDamaged, file, problem, dir)
}

// The bolt file's first two pages are meta pages: a 16-byte page header,
// then the meta fields, little-endian on every platform pastenode builds
// for. See go.etcd.io/bbolt, db.go (type meta).
const (
	boltMagic      = 0xED0CDAED
	boltPageHeader = 16
	boltMetaSum    = 56 // the meta bytes the checksum covers
)

// checkBoltFile refuses a raft.db shorter than its own meta page says it
// is. bbolt maps the file and would die of SIGBUS, with no word about the
// file, on the first read past its end. A missing file is fine: bbolt
// creates it.
func checkBoltFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open raft log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("open raft log: %w", err)
	}
	if st.Size() == 0 {
		return nil // bbolt initialises an empty file
	}
	var best struct {
		txid, pages uint64
		pageSize    uint32
		ok          bool
	}
	buf := make([]byte, boltPageHeader+boltMetaSum+8)
	offset := int64(0)
	for range 2 {
		if _, err := f.ReadAt(buf, offset); err != nil {
			break
		}
		m := buf[boltPageHeader:]
		pageSize := binary.LittleEndian.Uint32(m[8:])
		h := fnv.New64a()
		h.Write(m[:boltMetaSum])
		if binary.LittleEndian.Uint32(m[0:]) == boltMagic && h.Sum64() == binary.LittleEndian.Uint64(m[boltMetaSum:]) {
			if txid := binary.LittleEndian.Uint64(m[48:]); !best.ok || txid > best.txid {
				best.txid, best.pages, best.pageSize, best.ok = txid, binary.LittleEndian.Uint64(m[40:]), pageSize, true
			}
		}
		if pageSize == 0 || pageSize > 1<<20 {
			pageSize = 4096
		}
		offset = int64(pageSize)
	}
	if !best.ok {
		return damaged(path, "not a valid bolt file (no readable meta page)")
	}
	if want := int64(best.pages) * int64(best.pageSize); st.Size() < want {
		return damaged(path, fmt.Sprintf("truncated: %d bytes, its header says %d", st.Size(), want))
	}
	return nil
}

// checkSnapshots refuses to start when the log has been compacted (its
// first entry is past 1) but no snapshot covers the entries before it:
// Raft would otherwise panic when it reaches the gap.
func checkSnapshots(dir string, logs raft.LogStore, snaps raft.SnapshotStore) error {
	first, err := logs.FirstIndex()
	if err != nil || first <= 1 {
		return err
	}
	metas, err := snaps.List()
	if err != nil {
		return fmt.Errorf("list snapshots: %w", err)
	}
	snapDir := filepath.Join(dir, "snapshots")
	if len(metas) == 0 {
		return damaged(snapDir, fmt.Sprintf("no snapshot, but the log in "+walDir+" starts at entry %d: the snapshot with the entries before it is missing", first))
	}
	if newest := metas[0]; newest.Index+1 < first {
		return damaged(filepath.Join(snapDir, newest.ID),
			fmt.Sprintf("the newest snapshot ends at entry %d, but the log in "+walDir+" starts at entry %d", newest.Index, first))
	}
	return nil
}

// raftStartError explains an error of raft.NewRaft when it is about the
// files of the data dir.
func raftStartError(dir string, err error) error {
	if strings.Contains(err.Error(), "failed to load any existing snapshots") {
		return damaged(filepath.Join(dir, "snapshots"), "no snapshot can be read (a state.bin is missing or fails its checksum)")
	}
	return fmt.Errorf("start raft: %w", err)
}

// recoverFault turns a memory fault in the mapped bolt file, or a panic of
// Raft while it reads its stores at start-up, into an error naming the data
// dir, in place of a crash with a stack trace. Use it as
// `defer recoverFault(dir, &err)()` in the goroutine that opens the stores.
func recoverFault(dir string, err *error) func() {
	old := debug.SetPanicOnFault(true)
	return func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			*err = damaged(filepath.Join(dir, "raft.db"), fmt.Sprintf("reading it failed (%v)", r))
		}
	}
}
