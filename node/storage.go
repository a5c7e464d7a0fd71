package node

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/fsm"
)

// ErrStorageFull means a create was refused because the data dir's file
// system is full, or nearly: the API answers 507 Insufficient Storage. Its
// text, after the sentinel's, says why in one line.
var ErrStorageFull = errors.New("insufficient storage")

// storageGuard keeps creates from reaching a log store that cannot write
// them. Hashicorp/raft's leader steps down when its log store fails, then
// keeps starting elections it cannot persist: every create that reaches a
// full disk costs the cluster its leader. So the guard refuses creates
// while the data dir has less than the reserve free, checked on every
// create, leaving the reserve to deletes, burns, expiry and Raft's own
// entries; and when a store write fails for want of space anyway, it
// refuses creates until the free space has grown well past what it was.
//
// While the file system has plenty of room, it is asked at most every
// statfsEvery: in between, a create is admitted if the free space last
// read, less the content admitted since, still leaves the reserve and
// statfsMargin besides. Near the reserve it is asked on every create, as
// the log's writes take more than the content (bolt's pages, its file
// growing, a snapshot being written), and only a fresh reading keeps the
// last creates from reaching a full disk. (Asking on every create was a
// visible share of a follower's CPU under load.)
type storageGuard struct {
	dir     string
	reserve int64
	log     *slog.Logger
	free    func(dir string) (int64, bool) // the free bytes, if known
	now     func() time.Time

	errors  atomic.Int64 // store writes that failed for want of space
	refused atomic.Int64 // creates refused
	full    atomic.Bool  // the last check refused

	mu      sync.Mutex
	needed  int64 // after a failed write: the free bytes to wait for
	lastErr string
	// After a check that admitted creates: when, the free bytes it read,
	// and the content bytes admitted since.
	checkedAt time.Time
	lastFree  int64
	since     int64
}

// statfsEvery is how long the free space read from the file system
// stands in for the real one, and statfsMargin how much it must exceed
// the reserve by for that: more than a node writes in statfsEvery.
const (
	statfsEvery  = 100 * time.Millisecond
	statfsMargin = 1 << 30
)

func newStorageGuard(dir string, reserve int64, log *slog.Logger) *storageGuard {
	return &storageGuard{dir: dir, reserve: reserve, log: log, free: diskFree, now: time.Now}
}

// admit returns nil if a create of size bytes may go ahead, or an error
// wrapping ErrStorageFull that says why not.
func (g *storageGuard) admit(size int64) error {
	if g.admitRecent(size) {
		return nil
	}
	reason, free := g.check()
	if reason == "" {
		g.mu.Lock()
		g.checkedAt, g.lastFree, g.since = g.now(), free, size
		g.mu.Unlock()
		return nil
	}
	g.mu.Lock()
	g.checkedAt = time.Time{} // refused: the next create looks again
	g.mu.Unlock()
	g.refused.Add(1)
	return fmt.Errorf("%w: %s; free space or grow the disk, creates resume by themselves", ErrStorageFull, reason)
}

// admitRecent admits a create of size bytes on the strength of the last
// check, if that is recent, admitted creates and left room for this one.
func (g *storageGuard) admitRecent(size int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	ok := !g.checkedAt.IsZero() && g.needed == 0 && g.lastFree >= 0 &&
		g.now().Sub(g.checkedAt) < statfsEvery && g.lastFree-g.since-size >= g.reserve+statfsMargin
	if ok {
		g.since += size
	}
	return ok
}

// check looks at the free space now and returns why creates are refused,
// or "" when they are not, and the free bytes (-1: unknown).
func (g *storageGuard) check() (reason string, free int64) {
	free, ok := g.free(g.dir)
	if !ok {
		free = -1
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	need := max(g.reserve, g.needed)
	switch {
	case !ok && g.needed > 0:
		reason = "the last write to the data dir failed: " + g.lastErr
	case ok && free < need:
		reason = fmt.Sprintf("the data dir has %s free, creates need %s", pastenode.FormatSize(free), pastenode.FormatSize(need))
		if g.needed > g.reserve {
			reason += " (a write failed for want of space: " + g.lastErr + ")"
		}
	}
	if reason == "" {
		g.needed = 0
		if g.full.Swap(false) {
			g.log.Info("storage: space is back, creates are accepted again", "free", free)
		}
		return "", free
	}
	if !g.full.Swap(true) {
		g.log.Warn("storage: refusing creates", "reason", reason)
	}
	return reason, free
}

// failed records a store write error. An error for want of space refuses
// creates until the free space is twice what it was now plus the reserve.
func (g *storageGuard) failed(err error) {
	if err == nil || !noSpace(err) {
		return
	}
	g.errors.Add(1)
	free, _ := g.free(g.dir)
	g.mu.Lock()
	g.checkedAt = time.Time{}
	g.needed = max(g.needed, 2*free+g.reserve)
	g.lastErr = err.Error()
	g.mu.Unlock()
	g.full.Store(true)
	g.log.Error("storage: a write failed for want of space; refusing creates", "err", err, "free", free)
}

// noSpace reports whether err means the file system is full. Bolt does not
// always keep the errno in its chain, so the text counts too.
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		strings.Contains(err.Error(), "no space left on device")
}

// StorageStats says whether creates are refused for want of space, how
// many were, and how many store writes failed for want of space.
type StorageStats struct {
	Full         bool
	Reason       string // why creates are refused, if they are
	Refused      int64
	WriteErrors  int64
	ReserveBytes int64
	FreeBytes    int64 // -1: unknown
}

// Storage returns the storage guard's figures, the free space checked now.
func (n *Node) Storage() StorageStats {
	g := n.storage
	reason, free := g.check()
	return StorageStats{
		Full: reason != "", Reason: reason, Refused: g.refused.Load(), WriteErrors: g.errors.Load(),
		ReserveBytes: g.reserve, FreeBytes: free,
	}
}

// HasRoom reports whether the data dir's file system can take bytes more
// and still have the storage reserve free and roomMargin besides: room
// for something the node can do without, such as the export's page
// cache, which must never be what leaves the Raft log without space. It
// reads the free space every time. Where that cannot be read, it says
// yes.
func (n *Node) HasRoom(bytes int64) bool {
	g := n.storage
	free, ok := g.free(g.dir)
	return !ok || free-bytes >= g.reserve+roomMargin
}

// roomMargin is what HasRoom leaves free beyond the reserve: a margin for
// the creates admitted meanwhile and for a snapshot.
const roomMargin = 256 << 20

// guardedLogs reports the write errors of a log store to the guard.
type guardedLogs struct {
	raft.LogStore
	g *storageGuard
}

// IsMonotonic passes on the log's own answer, which Raft asks for when it
// installs a snapshot (logStore.IsMonotonic).
func (l guardedLogs) IsMonotonic() bool {
	m, ok := l.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

func (l guardedLogs) StoreLog(log *raft.Log) error {
	err := l.LogStore.StoreLog(log)
	l.g.failed(err)
	return err
}

func (l guardedLogs) StoreLogs(logs []*raft.Log) error {
	err := l.LogStore.StoreLogs(logs)
	l.g.failed(err)
	return err
}

// guardedStable reports the write errors of a stable store to the guard.
type guardedStable struct {
	raft.StableStore
	g *storageGuard
}

func (s guardedStable) Set(key, val []byte) error {
	err := s.StableStore.Set(key, val)
	s.g.failed(err)
	return err
}

func (s guardedStable) SetUint64(key []byte, val uint64) error {
	err := s.StableStore.SetUint64(key, val)
	s.g.failed(err)
	return err
}

// guardedSnapshots reports the write errors of snapshots to the guard.
type guardedSnapshots struct {
	raft.SnapshotStore
	g *storageGuard
}

func (s guardedSnapshots) Create(version raft.SnapshotVersion, index, term uint64,
	conf raft.Configuration, confIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.SnapshotStore.Create(version, index, term, conf, confIndex, trans)
	s.g.failed(err)
	if err != nil {
		return nil, err
	}
	return guardedSink{sink, s.g}, nil
}

type guardedSink struct {
	raft.SnapshotSink
	g *storageGuard
}

func (s guardedSink) Write(p []byte) (int, error) {
	n, err := s.SnapshotSink.Write(p)
	s.g.failed(err)
	return n, err
}

// Dir is the directory of a sink of the node's snapshot store, where the
// FSM links its segments; "" for any other sink.
func (s guardedSink) Dir() string {
	if d, ok := s.SnapshotSink.(interface{ Dir() string }); ok {
		return d.Dir()
	}
	return ""
}

func (s guardedSink) Close() error {
	err := s.SnapshotSink.Close()
	s.g.failed(err)
	return err
}

// admitForwarded checks a command forwarded to this leader: a create is
// refused while this node's storage is full, like a local one.
func (n *Node) admitForwarded(cmd *fsm.Command) error {
	if cmd.Type != fsm.TypeCreate || cmd.Paste == nil {
		return nil
	}
	return n.storage.admit(int64(len(cmd.Paste.Content)))
}

// remoteStorageFull turns the leader's storage_full reply text back into an
// error wrapping ErrStorageFull.
func remoteStorageFull(msg string) error {
	if reason, ok := strings.CutPrefix(msg, ErrStorageFull.Error()+": "); ok {
		return fmt.Errorf("%w: %s", ErrStorageFull, reason)
	}
	return fmt.Errorf("%w: %s", ErrStorageFull, msg)
}
