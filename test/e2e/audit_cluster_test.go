package e2e

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pastenode/pastenode/internal/freeport"
)

// rawInternal sends one internal HTTP call to a node's Raft port the way a
// hostile host on the cluster network would: the mux byte 'H', then plain
// HTTP. It returns the response, or nil when the node closed the
// connection without one.
func rawInternal(t *testing.T, raftAddr, path string, body []byte) *http.Response {
	t.Helper()
	c, err := net.DialTimeout("tcp", raftAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	req, _ := http.NewRequest(http.MethodPost, "http://"+raftAddr+path, bytes.NewReader(body))
	_, _ = c.Write([]byte{'H'})
	_ = req.Write(c)
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		return nil
	}
	return resp
}

// TestAuditClusterPlane replays the cluster-plane attacks of the security
// audit against the real binary: a forged and an oversized internal apply
// on a keyless loopback node, the same on a node with a key, a node that
// would listen beyond loopback without a key, and a damaged data dir.
func TestAuditClusterPlane(t *testing.T) {
	t.Parallel()
	t.Run("forged apply is refused and the node restarts", func(t *testing.T) {
		p := startProc(t, "--max-paste-size", "4KiB")
		pasteURL, _ := curlPost(t, p.URL, []byte("acknowledged before the attack"), "")
		resp := rawInternal(t, p.raftAddr, "/internal/v1/apply", []byte{0xc1})
		if resp == nil {
			t.Fatal("no answer to a forged apply on a keyless loopback node")
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		if !strings.Contains(b.String(), "bad_command") {
			t.Fatalf("forged apply answered %s %q, want a bad_command refusal", resp.Status, b.String())
		}
		if resp := rawInternal(t, p.raftAddr, "/internal/v1/apply", bytes.Repeat([]byte{'x'}, 256<<10)); resp == nil ||
			resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("an apply body past --max-paste-size plus the envelope got %v, want 413", resp)
		}
		get(t, pasteURL, []byte("acknowledged before the attack"))
		p.stop()
		p.restart()
		get(t, pasteURL, []byte("acknowledged before the attack"))
		if log, _ := os.ReadFile(p.logPath); bytes.Contains(log, []byte("panic")) {
			t.Fatalf("the node panicked:\n%s", log)
		}
	})
	t.Run("a keyed raft port answers no plain call", func(t *testing.T) {
		key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
		p := startProc(t, "--cluster-key", key)
		if resp := rawInternal(t, p.raftAddr, "/internal/v1/apply", []byte{0xc1}); resp != nil {
			t.Fatalf("a node with a key answered a call without TLS: %s", resp.Status)
		}
	})
	t.Run("beyond loopback without a key", func(t *testing.T) {
		dir := t.TempDir()
		r := run(t, "pastenode", nil, nil, "--node-id", "x", "--data-dir", dir, "--http-addr", freeport.Addr(t),
			"--raft-addr", "0.0.0.0:"+portOf(freeport.Addr(t)), "--advertise-host", "127.0.0.1", "--gossip-addr", freeport.Addr(t))
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "pastenode keygen") {
			t.Fatalf("got exit %d, stderr %q; want exit 2 and one line saying how to make a key", r.code, r.stderr)
		}
		k := run(t, "pastenode", nil, nil, "keygen")
		if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(k.stdout)); k.code != 0 || err != nil || len(raw) != 32 {
			t.Fatalf("pastenode keygen: exit %d, %q", k.code, k.stdout)
		}
	})
	t.Run("a truncated raft.db is named, not a crash", func(t *testing.T) {
		p := startProc(t)
		curlPost(t, p.URL, []byte("some data"), "")
		p.stop()
		db := filepath.Join(p.dataDir, "raft.db")
		// Cut the last page in use (the file may be longer): bbolt would
		// die of SIGBUS on it.
		bdb, err := bbolt.Open(db, 0o600, &bbolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var used int64
		err = bdb.View(func(tx *bbolt.Tx) error { used = tx.Size(); return nil })
		bdb.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(db, used-4096); err != nil {
			t.Fatal(err)
		}
		r := run(t, "pastenode", nil, nil, "--node-id", p.id, "--data-dir", p.dataDir, "--http-addr", freeport.Addr(t),
			"--raft-addr", p.raftAddr, "--gossip-addr", p.gossip)
		if r.code != 1 || !strings.Contains(r.stderr, db) || strings.Contains(r.stderr, "goroutine ") {
			t.Fatalf("start on a truncated raft.db: exit %d, stderr:\n%s\nwant exit 1 and an error naming %s", r.code, r.stderr, db)
		}
	})
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}
