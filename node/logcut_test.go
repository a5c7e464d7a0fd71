package node

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// openCutLog opens a logStore in a new data dir holding the entries 1 to
// n, each "secret-<index>-" padded to 1 KiB.
func openCutLog(t *testing.T, n uint64) *logStore {
	t.Helper()
	dataDir := t.TempDir()
	w, err := openWAL(filepath.Join(dataDir, walDir), 1<<20, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	l := &logStore{w: w, dataDir: dataDir, segSize: 1 << 20, hlog: hclog.NewNullLogger()}
	t.Cleanup(func() { l.Close() })
	for i := uint64(1); i <= n; i++ {
		if err := l.StoreLogs([]*raft.Log{cutEntry(i)}); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func cutEntry(i uint64) *raft.Log {
	data := fmt.Appendf(nil, "secret-%d-", i)
	data = append(data, bytes.Repeat([]byte{'.'}, 1024-len(data))...)
	return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: data}
}

// checkCutLog fails unless the log holds exactly the entries first to
// last, and no file of its directory holds an entry before first.
func checkCutLog(t *testing.T, l *logStore, first, last uint64) {
	t.Helper()
	if got, _ := l.FirstIndex(); got != first && !(first > last && got == 0) {
		t.Fatalf("first index %d, want %d", got, first)
	}
	if got, _ := l.LastIndex(); got != last && !(first > last && got == 0) {
		t.Fatalf("last index %d, want %d", got, last)
	}
	for i := first; i <= last; i++ {
		var e raft.Log
		if err := l.GetLog(i, &e); err != nil || !bytes.Equal(e.Data, cutEntry(i).Data) {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(l.dataDir, "*", "*"))
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		for i := uint64(1); i < first; i++ {
			if bytes.Contains(raw, fmt.Appendf(nil, "secret-%d-", i)) {
				t.Fatalf("%s holds entry %d, which was cut", f, i)
			}
		}
	}
}

func TestCutRemovesEntriesFromTheFiles(t *testing.T) {
	l := openCutLog(t, 10)
	// Raft's compaction alone leaves them in the open segment's file.
	if err := l.DeleteRange(1, 4); err != nil {
		t.Fatal(err)
	}
	if cut, err := l.cut(6); err != nil || !cut {
		t.Fatalf("cut = %v, %v", cut, err)
	}
	checkCutLog(t, l, 7, 10)
	if err := l.StoreLogs([]*raft.Log{cutEntry(11)}); err != nil {
		t.Fatalf("append after the cut: %v", err)
	}
	// The cut log is what a restart opens.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b := openBolt(t, l.dataDir)
	defer b.Close()
	w, _, err := openLog(l.dataDir, b, l.segSize, hclog.NewNullLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	l.w = w
	checkCutLog(t, l, 7, 11)
}

func TestCutOfTheWholeLog(t *testing.T) {
	l := openCutLog(t, 10)
	if cut, err := l.cut(10); err != nil || !cut {
		t.Fatalf("cut = %v, %v", cut, err)
	}
	checkCutLog(t, l, 11, 10)
	// Raft appends after its snapshot's index.
	if err := l.StoreLogs([]*raft.Log{cutEntry(11)}); err != nil {
		t.Fatalf("append after the cut: %v", err)
	}
	checkCutLog(t, l, 11, 11)
}

func TestCutBelowTheFilesDoesNothing(t *testing.T) {
	l := openCutLog(t, 10)
	if cut, err := l.cut(6); err != nil || !cut {
		t.Fatalf("cut = %v, %v", cut, err)
	}
	// Nothing up to 6 is in a file any more: no copy is made.
	if cut, err := l.cut(5); err != nil || cut {
		t.Fatalf("a cut with nothing left to cut: %v, %v", cut, err)
	}
}

func TestInterruptedCutIsFinishedOrUndone(t *testing.T) {
	mk := func(t *testing.T, dirs ...string) string {
		dataDir := t.TempDir()
		for _, d := range dirs {
			if err := os.MkdirAll(filepath.Join(dataDir, d), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dataDir, d, "from"), []byte(d), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dataDir
	}
	for _, tt := range []struct {
		name string
		dirs []string
		want string // what wal/ holds after recoverCut
	}{
		{"copy unfinished", []string{walDir, walNext}, walDir},
		{"between the renames", []string{walOld, walNext}, walNext},
		{"old log not removed yet", []string{walDir, walOld}, walDir},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := mk(t, tt.dirs...)
			if err := recoverCut(dataDir); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(filepath.Join(dataDir, walDir, "from")); err != nil || string(got) != tt.want {
				t.Fatalf("wal/ holds the log of %s (%v), want that of %s", got, err, tt.want)
			}
			for _, d := range []string{walNext, walOld} {
				if _, err := os.Stat(filepath.Join(dataDir, d)); !os.IsNotExist(err) {
					t.Fatalf("%s is left: %v", d, err)
				}
			}
		})
	}
}
