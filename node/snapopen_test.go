package node

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// writeTestSnapshot stores a snapshot of state through Raft's own writer
// and returns its id.
func writeTestSnapshot(t *testing.T, s snapshotFiles, state []byte) string {
	t.Helper()
	conf := raft.Configuration{Servers: []raft.Server{{ID: "a", Address: "127.0.0.1:1"}}}
	_, trans := raft.NewInmemTransport("127.0.0.1:1")
	sink, err := s.Create(raft.SnapshotVersionMax, 42, 3, conf, 7, trans)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Write(state); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	return sink.ID()
}

// TestSnapshotFilesOpenAsRaftDoes opens a snapshot that Raft wrote both
// ways: the meta and the bytes must be the same, or Raft's layout of the
// snapshot directory has changed under snapshotFiles.
func TestSnapshotFilesOpenAsRaftDoes(t *testing.T) {
	s, err := openSnapshotFiles(t.TempDir(), 2, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	state := bytes.Repeat([]byte("pastenode snapshot "), 1000)
	id := writeTestSnapshot(t, s, state)

	wantMeta, wantRC, err := s.FileSnapshotStore.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := io.ReadAll(wantRC)
	wantRC.Close()
	meta, rc, err := s.Open(id)
	if err != nil {
		t.Fatalf("Open(%s): %v", id, err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(meta, wantMeta) {
		t.Errorf("meta = %+v\nRaft's %+v", meta, wantMeta)
	}
	if !bytes.Equal(got, want) || !bytes.Equal(got, state) {
		t.Errorf("read %d bytes, Raft reads %d, %d written", len(got), len(want), len(state))
	}
}

func TestSnapshotFilesRefuseATruncatedState(t *testing.T) {
	dir := t.TempDir()
	s, err := openSnapshotFiles(dir, 2, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	id := writeTestSnapshot(t, s, bytes.Repeat([]byte("x"), 4096))
	if err := os.Truncate(filepath.Join(dir, "snapshots", id, "state.bin"), 4000); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Open(id); err == nil || !strings.Contains(err.Error(), "state.bin is 4000 bytes, meta.json says 4096") {
		t.Fatalf("Open of a truncated state.bin: %v; want an error giving both sizes", err)
	}
	for _, bad := range []string{"", "..", "../x", "a/b"} {
		if _, _, err := s.Open(bad); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
}
