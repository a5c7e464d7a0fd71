package node

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStorageGuard(t *testing.T) {
	free := int64(100 << 20)
	g := newStorageGuard("/data", 8<<20, slog.New(slog.DiscardHandler))
	g.free = func(string) (int64, bool) { return free, true }
	// Every admit reads the file system afresh: a second passes per call.
	clock := time.Unix(0, 0)
	g.now = func() time.Time { clock = clock.Add(time.Second); return clock }

	if err := g.admit(0); err != nil {
		t.Fatalf("100 MiB free, 8 MiB reserve: %v", err)
	}
	free = 7 << 20
	err := g.admit(0)
	if !errors.Is(err, ErrStorageFull) || !strings.Contains(err.Error(), "7 MiB free") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("below the reserve: got %v, want a one-line ErrStorageFull with the free space", err)
	}
	if st := (&Node{storage: g}).Storage(); !st.Full || st.Refused != 1 {
		t.Errorf("stats %+v: want full with 1 refused", st)
	}
	free = 9 << 20
	if err := g.admit(0); err != nil {
		t.Fatalf("back above the reserve: %v", err)
	}

	// A write that fails for want of space anyway raises the bar to twice
	// the free space then, plus the reserve.
	g.failed(errors.New("some other error"))
	g.failed(fmt.Errorf("unable to store logs: %w", &fs.PathError{Op: "write", Path: "raft.db", Err: syscall.ENOSPC}))
	if g.errors.Load() != 1 {
		t.Errorf("write errors counted: %d, want 1 (only the one for want of space)", g.errors.Load())
	}
	free = 20 << 20
	if err := g.admit(0); !errors.Is(err, ErrStorageFull) || !strings.Contains(err.Error(), "a write failed") {
		t.Fatalf("20 MiB free after a failed write at 9 MiB: got %v, want refused until 26 MiB", err)
	}
	free = 26 << 20
	if err := g.admit(0); err != nil {
		t.Fatalf("26 MiB free: %v", err)
	}
	if st := (&Node{storage: g}).Storage(); st.Full {
		t.Errorf("stats %+v: want not full", st)
	}
}

func TestNoSpace(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&fs.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}, true},
		{errors.New(`unable to store logs within log store, err: "write raft.db: no space left on device"`), true},
		{syscall.EDQUOT, true},
		{syscall.EIO, false},
	} {
		if got := noSpace(tc.err); got != tc.want {
			t.Errorf("noSpace(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestStorageGuardReadsFreeSpaceSparingly checks that creates in quick
// succession share one read of the free space while it is plentiful, that
// what they admit counts against it, and that near the reserve every
// create reads it afresh.
func TestStorageGuardReadsFreeSpaceSparingly(t *testing.T) {
	const mib = 1 << 20
	free, reads := int64(statfsMargin+100*mib), 0
	g := newStorageGuard("/data", 8*mib, slog.New(slog.DiscardHandler))
	g.free = func(string) (int64, bool) { reads++; return free, true }
	clock := time.Unix(0, 0)
	g.now = func() time.Time { return clock }

	for range 90 {
		if err := g.admit(mib); err != nil {
			t.Fatal(err)
		}
	}
	if reads != 1 {
		t.Fatalf("90 creates within %v read the free space %d times, want once", statfsEvery, reads)
	}
	// 90 MiB admitted: 3 more would cut into the reserve and margin, so
	// the guard looks again, and finds the disk filled meanwhile.
	free = 7 * mib
	if err := g.admit(3 * mib); !errors.Is(err, ErrStorageFull) || reads != 2 {
		t.Fatalf("past the space read: %v after %d reads, want refused after a second read", err, reads)
	}
	// Near the reserve, every create looks.
	free = 50 * mib
	for i := range 3 {
		if err := g.admit(1); err != nil || reads != 3+i {
			t.Fatalf("50 MiB free: %v after %d reads, want admitted after %d", err, reads, 3+i)
		}
	}
	// Plenty again: one look, then none until statfsEvery has passed.
	free = statfsMargin + 100*mib
	for range 2 {
		if err := g.admit(1); err != nil {
			t.Fatal(err)
		}
	}
	clock = clock.Add(statfsEvery)
	free = 7 * mib
	if err := g.admit(1); !errors.Is(err, ErrStorageFull) || reads != 7 {
		t.Fatalf("after %v: %v after %d reads, want refused after a fresh read", statfsEvery, err, reads)
	}
}

// TestHasRoom: what may do without the space gets it only while the
// reserve and the margin stay free after it, and where the free space
// cannot be read.
func TestHasRoom(t *testing.T) {
	g := newStorageGuard("/data", 8<<20, slog.New(slog.DiscardHandler))
	var free int64
	known := true
	g.free = func(string) (int64, bool) { return free, known }
	n := &Node{storage: g}
	free = 8<<20 + roomMargin + 16<<20
	if !n.HasRoom(16 << 20) {
		t.Error("no room for 16 MiB with the reserve, the margin and 16 MiB free")
	}
	if n.HasRoom(16<<20 + 1) {
		t.Error("room for a byte more than leaves the reserve and the margin")
	}
	known = false
	if !n.HasRoom(1 << 40) {
		t.Error("no room where the free space is unknown")
	}
}
