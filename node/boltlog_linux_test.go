package node

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
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

// TestBoltLogReleasesCompactedPages fills a log, compacts it, and checks
// that the node no longer holds the file's pages: deleting the range read
// every one of them through bolt's mapping.
func TestBoltLogReleasesCompactedPages(t *testing.T) {
	b, path := openBoltLog(t)

	const entries = 16_000
	data := storeEntries(t, b, entries, 500)
	// Deleting through the bare store walks the pages and leaves them
	// resident: the measurement can see them.
	if err := b.BoltStore.DeleteRange(1, entries/2); err != nil {
		t.Fatal(err)
	}
	before := residentKiB(t, path)
	if err := b.DeleteRange(entries/2+1, entries-10); err != nil {
		t.Fatal(err)
	}
	after := residentKiB(t, path)
	t.Logf("raft.db resident: %d KiB after a plain compaction, %d KiB after boltLog's", before, after)
	if before < 4096 {
		t.Fatalf("only %d KiB resident before the release: the test does not measure what it should", before)
	}
	if after > before/8 {
		t.Fatalf("%d KiB of raft.db still resident after the compaction (%d before)", after, before)
	}
	var l raft.Log
	if err := b.GetLog(entries, &l); err != nil || len(l.Data) != len(data) {
		t.Fatalf("the last entry after the release: %v, %d bytes", err, len(l.Data))
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

// TestBoltLogReleasesAppendedPages checks that appending alone does not
// pile the log's pages up in the node.
func TestBoltLogReleasesAppendedPages(t *testing.T) {
	b, path := openBoltLog(t)
	storeEntries(t, b, 40_000, 100)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	resident := residentKiB(t, path)
	t.Logf("raft.db: %d KiB, %d KiB resident", fi.Size()>>10, resident)
	if limit := 2 * releaseEvery >> 10; resident > limit {
		t.Fatalf("%d KiB of raft.db resident after appending, want at most %d", resident, limit)
	}
}

// storeEntries stores entries of 1 KiB from index 1 to n in b, per to a
// call, and returns their data.
func storeEntries(t *testing.T, b *boltLog, n, per int) []byte {
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

// openBoltLog opens a boltLog on a new file, closed when the test ends.
func openBoltLog(t *testing.T) (*boltLog, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "raft.db")
	store, err := raftboltdb.New(raftboltdb.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	b := &boltLog{BoltStore: store, path: path}
	t.Cleanup(func() { b.Close() })
	return b, path
}
