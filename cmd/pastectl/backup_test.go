package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pastenode/pastenode"
)

// backupServer serves body as GET /api/v1/backup.
func backupServer(t *testing.T, body []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/backup" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestBackup(t *testing.T) {
	var good bytes.Buffer
	bw := pastenode.NewBackupWriter(&good)
	bw.Write(bytes.Repeat([]byte("state\x00\xff"), 5000))
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "cluster.backup")

	code, stdout, stderr := pastectl(t, "", "--addr", backupServer(t, good.Bytes()), "backup", "--out", out)
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "backed up 35054 bytes in ") {
		t.Fatalf("backup: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, good.Bytes()) {
		t.Fatalf("file: %d bytes, %v; want the %d bytes served", len(got), err, good.Len())
	}

	// -o json: a summary instead of the line.
	code, stdout, _ = pastectl(t, "", "-o", "json", "--addr", backupServer(t, good.Bytes()), "backup", "--out", out)
	if v := oneObject(t, stdout); code != 0 || v["bytes"] != 35054.0 || v["file"] != out || v["seconds"] == nil {
		t.Errorf("-o json backup: exit %d, %s; want its file, bytes and seconds", code, stdout)
	}

	// A stream cut short is refused and leaves the old file alone.
	cut := good.Bytes()[:good.Len()-10]
	code, stdout, stderr = pastectl(t, "", "--addr", backupServer(t, cut), "backup", "--out", out)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "not complete") || !strings.Contains(stderr, "cut short") {
		t.Errorf("truncated: exit %d stdout %q stderr %q; want 1 and why", code, stdout, stderr)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, good.Bytes()) {
		t.Error("the truncated backup replaced the good file")
	}
	if _, err := os.Stat(out + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left behind: %v", err)
	}
}
