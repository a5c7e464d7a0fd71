package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pastenode/pastenode"
)

func TestRestoreCommand(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	if _, err := parseRestoreFlags([]string{"--data-dir", "x"}, noEnv); !errors.As(err, new(usageError)) {
		t.Errorf("no --from: got %v, want a usage error", err)
	}
	env := func(k string) (string, bool) { v, ok := map[string]string{"PASTE_FROM": "b.backup"}[k]; return v, ok }
	c, err := parseRestoreFlags([]string{"--raft-addr", "0.0.0.0:7000", "--advertise-host", "node1"}, env)
	if err != nil || c.From != "b.backup" || c.advertise != "node1:7000" {
		t.Errorf("flags: %+v, %v; want --from from PASTE_FROM and node1:7000 advertised", c, err)
	}

	// A backup of a newer format is refused with a clear message, and no
	// data dir is made.
	var buf bytes.Buffer
	bw := pastenode.NewBackupWriter(&buf)
	bw.Write([]byte("state"))
	bw.Close()
	b := buf.Bytes()
	b[len(pastenode.BackupMagic)] = pastenode.BackupVersion + 1
	dir := t.TempDir()
	file := filepath.Join(dir, "new.backup")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	err = run(context.Background(), []string{"restore", "--from", file, "--data-dir", data, "--node-id", "n1"}, io.Discard, io.Discard)
	if !errors.Is(err, pastenode.ErrBackupVersion) || !strings.Contains(err.Error(), "nothing was written") ||
		!strings.Contains(err.Error(), "use a newer pastenode") {
		t.Errorf("newer backup: got %v", err)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data dir: %v, want none made", err)
	}
}
