package node

import (
	"bufio"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/hashicorp/raft-wal/migrate"
)

func TestMappingOf(t *testing.T) {
	for _, tc := range []struct {
		line       string
		start, end uintptr
		ok         bool
	}{
		{"7f1c2a000000-7f1c2e000000 r--s 00000000 fd:01 4242 /data/raft.db", 0x7f1c2a000000, 0x7f1c2e000000, true},
		{"7f1c2a000000-7f1c2e000000 r--s 00000000 fd:01 4243 /data/other.db", 0, 0, false},
		{"7f1c2a000000-7f1c2e000000 r--p 00000000 fd:01 4242 /data/raft.db", 0, 0, false}, // private
		{"7f1c2e000000-7f1c2a000000 r--s 00000000 fd:01 4242 /data/raft.db", 0, 0, false}, // backwards
		{"00400000-00452000 r-xp 00000000 08:02 173521", 0, 0, false},
		{"garbage", 0, 0, false},
	} {
		start, end, ok := mappingOf(tc.line, 4242)
		if start != tc.start || end != tc.end || ok != tc.ok {
			t.Errorf("mappingOf(%q) = %#x, %#x, %v; want %#x, %#x, %v", tc.line, start, end, ok, tc.start, tc.end, tc.ok)
		}
	}
}

// TestMovedLogReleasesPages moves a log of 16 MiB out of raft.db and
// checks that the node no longer holds the file's pages: the copy and
// the delete read every one of them through bolt's mapping.
func TestMovedLogReleasesPages(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "raft.db")
	b, err := raftboltdb.New(raftboltdb.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	const entries = 16_000
	data := storeEntries(t, b, entries, 500)
	// Reading through the bare store leaves the pages resident: the
	// measurement can see them.
	if err := migrate.CopyLogs(context.Background(), raft.NewInmemStore(), b, 4<<20, nil); err != nil {
		t.Fatal(err)
	}
	before := residentKiB(t, path)
	w, err := openLog(dir, b, 1<<20, hclog.NewNullLogger(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	after := residentKiB(t, path)
	t.Logf("raft.db resident: %d KiB after reading the log, %d KiB after moving it", before, after)
	if before < 4096 {
		t.Fatalf("only %d KiB resident before the move: the test does not measure what it should", before)
	}
	if after > before/8 {
		t.Fatalf("%d KiB of raft.db still resident after the move (%d before)", after, before)
	}
	var l raft.Log
	if err := w.GetLog(entries, &l); err != nil || len(l.Data) != len(data) {
		t.Fatalf("the last entry after the move: %v, %d bytes", err, len(l.Data))
	}
}

// residentKiB sums the Rss of this process's mappings of the file at path.
func residentKiB(t *testing.T, path string) int {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ino := strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 10)
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	defer f.Close()
	total, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			in = fields[4] == ino
		case in && len(fields) == 3 && fields[0] == "Rss:":
			kib, _ := strconv.Atoi(fields[1])
			total += kib
		}
	}
	return total
}

// storeEntries stores entries of 1 KiB from index 1 to n in b, per to a
// call, and returns their data.
func storeEntries(t *testing.T, b raft.LogStore, n, per int) []byte {
	t.Helper()
	data := make([]byte, 1024)
	for first := 1; first <= n; first += per {
		logs := make([]*raft.Log, per)
		for i := range logs {
			logs[i] = &raft.Log{Index: uint64(first + i), Term: 1, Type: raft.LogCommand, Data: data}
		}
		if err := b.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	return data
}
