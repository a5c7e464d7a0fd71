package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdminTokenFromDataDir: pastectl finds the token a node generated
// with --data-dir DIR or PASTE_DATA_DIR; a token given wins.
func TestAdminTokenFromDataDir(t *testing.T) {
	f, url := newFake(t)
	f.adminToken = "generated-token"
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "admin-token"), []byte("generated-token\n"), 0o600)

	if code, _, stderr := pastectl(t, "", "--addr", url, "--data-dir", dir, "snapshot"); code != 0 {
		t.Errorf("--data-dir: exit %d, stderr %q", code, stderr)
	}
	t.Setenv("PASTE_DATA_DIR", dir)
	if code, _, stderr := pastectl(t, "", "--addr", url, "snapshot"); code != 0 {
		t.Errorf("PASTE_DATA_DIR: exit %d, stderr %q", code, stderr)
	}
	if code, _, _ := pastectl(t, "", "--addr", url, "--admin-token", "wrong", "--data-dir", dir, "snapshot"); code != 1 {
		t.Errorf("--admin-token wrong with --data-dir: exit %d, want 1 (the token given wins)", code)
	}
	// A dir without the file: a usage error when given as a flag, nothing
	// when only the environment names it.
	empty := t.TempDir()
	code, _, stderr := pastectl(t, "", "--addr", url, "--data-dir", empty, "snapshot")
	if code != 2 || !strings.Contains(stderr, "admin-token") {
		t.Errorf("--data-dir without a token file: exit %d, stderr %q; want 2 naming the file", code, stderr)
	}
	t.Setenv("PASTE_DATA_DIR", empty)
	if code, _, stderr := pastectl(t, "", "--addr", url, "health"); code != 0 {
		t.Errorf("PASTE_DATA_DIR without a token file, health: exit %d, stderr %q", code, stderr)
	}
}

// TestAddrFromDataDir: the data dir says where its node serves, so
// --data-dir needs no --addr on any port; an address given wins.
func TestAddrFromDataDir(t *testing.T) {
	f, url := newFake(t)
	f.adminToken = "generated-token"
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "admin-token"), []byte("generated-token\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "serving.json"), []byte(`{"url": "`+url+`", "addr": "127.0.0.1:1", "tls": false}`), 0o600)

	if code, stdout, stderr := pastectl(t, "", "--data-dir", dir, "snapshot"); code != 0 || stdout != "snapshot taken\n" {
		t.Errorf("--data-dir alone: exit %d, stdout %q, stderr %q; want the node it names asked", code, stdout, stderr)
	}
	t.Setenv("PASTE_DATA_DIR", dir)
	if code, _, stderr := pastectl(t, "", "health"); code != 0 {
		t.Errorf("PASTE_DATA_DIR alone: exit %d, stderr %q", code, stderr)
	}
	// An address given, by flag or environment, wins over the file.
	refused := refusedAddr(t)
	if code, _, stderr := pastectl(t, "", "--addr", refused, "--data-dir", dir, "snapshot"); code != 1 || !strings.Contains(stderr, refused) {
		t.Errorf("--addr with --data-dir: exit %d, stderr %q; want %s asked", code, stderr, refused)
	}
	t.Setenv("PASTE_ADDR", refused)
	if code, _, _ := pastectl(t, "", "--data-dir", dir, "snapshot"); code != 1 {
		t.Errorf("PASTE_ADDR with --data-dir: exit %d, want 1 (the refused address asked)", code)
	}
	t.Setenv("PASTE_ADDR", "")

	os.WriteFile(filepath.Join(dir, "serving.json"), []byte(`{`), 0o600)
	if code, _, stderr := pastectl(t, "", "--data-dir", dir, "snapshot"); code != 2 || !strings.Contains(stderr, "serving.json") {
		t.Errorf("a broken serving.json: exit %d, stderr %q; want 2 naming it", code, stderr)
	}
}
