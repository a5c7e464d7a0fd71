package node

import (
	"sync"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// releaseEvery is how many bytes of entries boltLog stores between two
// releases of its mapped pages.
const releaseEvery = 8 << 20

// boltLog is the Raft log and stable store (bolt) that keeps the pages of
// raft.db from piling up in the node's memory.
//
// Bolt reads through a shared, read-only mapping of raft.db: appending to
// the log reads the last leaf page through it, and deleting a range walks
// every leaf page of the range, so the pages of every entry written stay
// mapped and count in the node's RSS, although Raft rarely reads them
// again (the recent entries are in the log cache). After every
// releaseEvery bytes stored and after every compaction, boltLog drops the
// mapping's pages from the node's page tables: the file's data stays in
// the kernel's page cache, to be kept or dropped like any cached file, and
// bolt faults back in what it reads next. Only a write transaction can
// grow the file and remap it, so every call that writes holds mu, and so
// does the release: the mapping it advises is the one bolt uses.
type boltLog struct {
	*raftboltdb.BoltStore
	path string

	mu     sync.Mutex
	stored int // bytes of entries stored since the last release
}

func (b *boltLog) StoreLog(l *raft.Log) error { return b.StoreLogs([]*raft.Log{l}) }

func (b *boltLog) StoreLogs(logs []*raft.Log) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.BoltStore.StoreLogs(logs); err != nil {
		return err
	}
	for _, l := range logs {
		b.stored += len(l.Data)
	}
	if b.stored >= releaseEvery {
		b.release()
	}
	return nil
}

// DeleteRange compacts the log, then releases the mapped pages.
func (b *boltLog) DeleteRange(min, max uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.BoltStore.DeleteRange(min, max); err != nil {
		return err
	}
	b.release()
	return nil
}

// release drops the mapped pages; the caller holds mu.
func (b *boltLog) release() {
	releaseMapping(b.path)
	b.stored = 0
}

func (b *boltLog) Set(key, val []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.BoltStore.Set(key, val)
}

func (b *boltLog) SetUint64(key []byte, val uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.BoltStore.SetUint64(key, val)
}

// Close unmaps the file, so it waits for a release in progress.
func (b *boltLog) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.BoltStore.Close()
}
