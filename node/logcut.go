package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/segment"
)

// A cut moves the log into walNext, without the entries it drops, and
// swaps the two directories through walOld (recoverCut).
const (
	walNext = "wal.next"
	walOld  = "wal.old"
)

// cut removes the entries up to index upTo from the log's files, which must
// all be in a snapshot. Raft's compaction drops entries from the log but
// not always from its files: raft-wal deletes a segment file only once it
// drops every entry in it, so a quiet log keeps them all in its one open
// segment, however often it is compacted. When a file may hold one (its
// first index is upTo or below), cut copies the entries after upTo into a
// new log and swaps that in: the copy runs beside Raft, and only its last
// entries and the swap hold appends back. A DeleteRange meanwhile (Raft
// compacting, or a follower dropping a conflicting tail) makes the copy
// stale: cut gives up, and says so with errLogChanged. It reports whether
// it swapped in a copy.
func (l *logStore) cut(upTo uint64) (bool, error) {
	dir := filepath.Join(l.dataDir, walDir)
	segs, err := segment.NewFiler(dir, walfs.New()).List()
	if err != nil {
		return false, err
	}
	if !holdsUpTo(segs, upTo) {
		return false, nil
	}
	return true, l.swapIn(upTo)
}

// swapIn is cut's copy and swap.
func (l *logStore) swapIn(upTo uint64) error {
	dir := filepath.Join(l.dataDir, walDir)
	deletes := l.deletes.Load()
	next := filepath.Join(l.dataDir, walNext)
	if err := os.RemoveAll(next); err != nil {
		return err
	}
	nw, err := openWAL(next, l.segSize, l.hlog)
	if err != nil {
		return err
	}
	abandon := func(err error) error {
		nw.Close()
		return errors.Join(err, os.RemoveAll(next))
	}
	copied, err := l.copyAfter(nw, upTo)
	if err != nil {
		return abandon(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return abandon(ErrClosed)
	}
	if l.deletes.Load() != deletes {
		return abandon(errLogChanged)
	}
	if _, err := copyLogs(nw, l.w, copied); err != nil {
		return abandon(err)
	}
	if err := nw.Close(); err != nil {
		return abandon(err)
	}
	// From here on a failure may leave no log to append to: it stops the
	// node, and the next start finishes or undoes the swap.
	if err := l.w.Close(); err != nil {
		panic(fmt.Sprintf("node: close the raft log for a cut: %v", err))
	}
	if err := swapCut(l.dataDir); err != nil {
		panic(fmt.Sprintf("node: swap in the cut raft log: %v", err))
	}
	if l.w, err = openWAL(dir, l.segSize, l.hlog); err != nil {
		panic(fmt.Sprintf("node: open the cut raft log: %v", err))
	}
	return nil
}

// errLogChanged: the log changed while cut copied it; the next cut tries
// again.
var errLogChanged = errors.New("the raft log changed during the cut")

// holdsUpTo reports whether a segment file of segs (segment id to first
// index) may hold an entry at upTo or below.
func holdsUpTo(segs map[uint64]uint64, upTo uint64) bool {
	for _, base := range segs {
		if base <= upTo {
			return true
		}
	}
	return false
}

// copyAfter copies into dst the entries of l after index after, as far as
// the log goes now, and returns the last index copied (after, when none).
func (l *logStore) copyAfter(dst *wal.WAL, after uint64) (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	first, err := l.w.FirstIndex()
	if err != nil {
		return 0, err
	}
	if first > after+1 {
		after = first - 1 // compacted past it already
	}
	return copyLogs(dst, l.w, after)
}

// copyLogs appends to dst the entries of src after index after, in batches
// of a few megabytes, and returns the last index copied.
func copyLogs(dst, src raft.LogStore, after uint64) (uint64, error) {
	last, err := src.LastIndex()
	if err != nil {
		return 0, err
	}
	const batchBytes = 4 << 20
	var batch []*raft.Log
	size := 0
	for i := after + 1; i <= last; i++ {
		e := new(raft.Log)
		if err := src.GetLog(i, e); err != nil {
			return 0, fmt.Errorf("read entry %d: %w", i, err)
		}
		batch = append(batch, e)
		if size += len(e.Data); size >= batchBytes || i == last {
			if err := dst.StoreLogs(batch); err != nil {
				return 0, err
			}
			batch, size = batch[:0], 0
		}
	}
	return max(after, last), nil
}

// swapCut puts the log in walNext, complete and closed, in walDir's place:
// walDir becomes walOld, walNext becomes walDir, and walOld goes. Each
// step is synced, so that recoverCut can finish the swap after a crash.
func swapCut(dataDir string) error {
	next, dir, old := filepath.Join(dataDir, walNext), filepath.Join(dataDir, walDir), filepath.Join(dataDir, walOld)
	if err := syncDir(next); err != nil {
		return err
	}
	if err := os.Rename(dir, old); err != nil {
		return err
	}
	if err := syncDir(dataDir); err != nil {
		return err
	}
	if err := os.Rename(next, dir); err != nil {
		return err
	}
	if err := syncDir(dataDir); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// recoverCut finishes or undoes a cut that a crash interrupted: walNext
// beside walDir is an unfinished copy; walNext without walDir is complete,
// as the old log was moved aside only after it was.
func recoverCut(dataDir string) error {
	next, dir, old := filepath.Join(dataDir, walNext), filepath.Join(dataDir, walDir), filepath.Join(dataDir, walOld)
	if _, err := os.Stat(next); err == nil {
		if _, err := os.Stat(dir); err == nil {
			if err := os.RemoveAll(next); err != nil {
				return err
			}
		} else if err := os.Rename(next, dir); err != nil {
			return err
		} else if err := syncDir(dataDir); err != nil {
			return err
		}
	}
	return os.RemoveAll(old)
}
