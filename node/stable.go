package node

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// stableCompactAt is the size of raft.db past which a start compacts it.
// The stable store needs a few pages for Raft's term and vote; a larger
// file holds the free pages of the log an older version kept in it, which
// bbolt never gives back to the file system.
const stableCompactAt = 1 << 20

// openStable opens raft.db, Raft's stable store, first compacting it if
// it is larger than stableCompactAt and holds no log.
func openStable(dataDir string, log *slog.Logger) (*raftboltdb.BoltStore, error) {
	path := filepath.Join(dataDir, "raft.db")
	if err := checkBoltFile(path); err != nil {
		return nil, err
	}
	if err := compactStable(path, log); err != nil {
		return nil, boltOpenError(path, dataDir, err)
	}
	// bbolt's default freelist: the options that made the log's writes
	// cheaper (no freelist synced, the hash-map freelist) do nothing
	// measurable for a few keys written once a term.
	store, err := raftboltdb.New(raftboltdb.Options{Path: path, BoltOptions: &bbolt.Options{Timeout: time.Second}})
	if err != nil {
		return nil, boltOpenError(path, dataDir, err)
	}
	return store, nil
}

// boltOpenError says which file failed to open, and that a lock held
// means another pastenode: the timeout makes a second process on the
// data dir fail at raft.db, its first file, where raft-wal would wait for
// its own lock for good.
func boltOpenError(path, dataDir string, err error) error {
	if errors.Is(err, bbolt.ErrTimeout) {
		return fmt.Errorf("open %s: locked: another pastenode runs on data dir %s", path, dataDir)
	}
	return fmt.Errorf("open %s: %w", path, err)
}

// compactStable rewrites the file at path with only its live pages, when
// it is over stableCompactAt and its log is empty. The copy is written
// beside it and renamed over it, so a crash leaves one whole file or the
// other.
func compactStable(path string, log *slog.Logger) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() <= stableCompactAt {
		return nil // a missing file is bbolt's to create
	}
	src, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		return err
	}
	defer src.Close()
	hasLog := false
	err = src.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket([]byte("logs")); b != nil {
			k, _ := b.Cursor().First()
			hasLog = k != nil
		}
		return nil
	})
	if err != nil || hasLog {
		return err // a log still in raft.db is openLog's to move first
	}
	tmp := path + ".compact"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dst, err := bbolt.Open(tmp, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	// bbolt syncs every transaction it commits, the compaction's too.
	err = bbolt.Compact(dst, src, 1<<20)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compact: %w", err)
	}
	src.Close()
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return err
	}
	if after, err := os.Stat(path); err == nil {
		log.Info("compacted raft.db, which held the log of an older version", "bytes_before", fi.Size(), "bytes_after", after.Size())
	}
	return nil
}
