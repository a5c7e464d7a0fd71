package node

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/internal/freeport"
)

// openNodeAt opens a single-voter node of id on dir and addr and waits
// until it is ready.
func openNodeAt(t *testing.T, id, dir, addr string) *Node {
	t.Helper()
	return openNode(t, func(c *Config) { c.ID, c.DataDir, c.RaftAddr = id, dir, addr })
}

// writeBackup writes n's backup to a file and returns its path.
func writeBackup(t *testing.T, n *Node) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pastenode.backup")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := pastenode.NewBackupWriter(f)
	if _, err := n.Backup(context.Background(), bw); err != nil {
		t.Fatalf("backup: %v", err)
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBackupRestoreKeepsEverything(t *testing.T) {
	src := openNode(t)
	ctx := context.Background()
	plain, err := src.Create(ctx, CreateRequest{Content: []byte("plain\x00bytes"), DeleteToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	burn, err := src.Create(ctx, CreateRequest{Content: []byte("burn"), Burn: true})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := src.Create(ctx, CreateRequest{Content: []byte("gone"), DeleteToken: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Delete(ctx, gone.ID, "x", false); err != nil {
		t.Fatal(err)
	}
	if err := src.RemoveNode(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	path := writeBackup(t, src)

	if _, err := Restore(RestoreConfig{From: path, DataDir: t.TempDir(), ID: "old", AdvertiseAddr: "127.0.0.1:1"}); err == nil {
		t.Error("restore under a removed node id: got no error")
	}
	// A data dir for a node that will run beyond loopback (with its key,
	// which restore neither needs nor checks).
	if _, err := Restore(RestoreConfig{From: path, DataDir: t.TempDir(), ID: "r2", AdvertiseAddr: "10.0.0.5:7000"}); err != nil {
		t.Errorf("restore for a node at 10.0.0.5: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "restored")
	addr := freeport.Addr(t)
	info, err := Restore(RestoreConfig{From: path, DataDir: dir, ID: "r1", AdvertiseAddr: addr})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if info.Pastes != 2 || info.Index == 0 {
		t.Errorf("restore info %+v: want 2 pastes at an index", info)
	}
	n := openNodeAt(t, "r1", dir, addr)
	if got, err := n.Read(ctx, plain.ID, false); err != nil || string(got.Content) != "plain\x00bytes" {
		t.Errorf("plain paste after restore: %+v, %v", got, err)
	}
	if _, err := n.Read(ctx, gone.ID, false); !errors.Is(err, fsm.ErrNotFound) {
		t.Errorf("a paste deleted before the backup: Read err = %v, want not found", err)
	}
	if !n.Removed("old") {
		t.Error("the removed node set was lost")
	}
	if p, err := n.Consume(ctx, burn.ID); err != nil || string(p.Content) != "burn" {
		t.Errorf("first read of the burn paste: %v, %v", p, err)
	}
	if _, err := n.Read(ctx, burn.ID, false); !errors.Is(err, fsm.ErrNotFound) {
		t.Errorf("burn paste after it was read: Read err = %v, want not found", err)
	}
	if err := n.Delete(ctx, plain.ID, "wrong", false); !errors.Is(err, fsm.ErrForbidden) {
		t.Errorf("delete with a wrong token: %v", err)
	}
	if err := n.Delete(ctx, plain.ID, "tok", false); err != nil {
		t.Errorf("delete with the token from before the backup: %v", err)
	}
	if _, err := n.Create(ctx, CreateRequest{Content: []byte("new")}); err != nil {
		t.Errorf("create on the restored node: %v", err)
	}
}

func TestRestoreRefusesBadFilesWritingNothing(t *testing.T) {
	src := openNode(t)
	if _, err := src.Create(context.Background(), CreateRequest{Content: []byte("some content")}); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(writeBackup(t, src))
	if err != nil {
		t.Fatal(err)
	}
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)/2] ^= 0x40
	newer := append([]byte(nil), good...)
	newer[len(pastenode.BackupMagic)] = pastenode.BackupVersion + 1
	cases := []struct {
		name string
		file []byte
		want error
	}{
		{"truncated", good[:len(good)-7], pastenode.ErrBackupCorrupt},
		{"half", good[:len(good)/2], pastenode.ErrBackupCorrupt},
		{"corrupt", corrupt, pastenode.ErrBackupCorrupt},
		{"newer version", newer, pastenode.ErrBackupVersion},
		{"empty", nil, pastenode.ErrBackupCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "b")
			if err := os.WriteFile(path, tc.file, 0o600); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "data")
			_, err := Restore(RestoreConfig{From: path, DataDir: dir, ID: "r1", AdvertiseAddr: "127.0.0.1:7000"})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the data dir was created (%v): nothing may be written", err)
			}
		})
	}

	t.Run("non-empty data dir", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "b")
		if err := os.WriteFile(path, good, 0o600); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "something"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Restore(RestoreConfig{From: path, DataDir: dir, ID: "r1", AdvertiseAddr: "127.0.0.1:7000"})
		if !errors.Is(err, ErrDataDirNotEmpty) {
			t.Fatalf("got %v, want %v", err, ErrDataDirNotEmpty)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("data dir holds %d entries after the refusal, want the 1 it had", len(entries))
		}
	})
}
