package node

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/pastenode/pastenode/fsm"
)

// rawRPC sends one internal HTTP call straight to the Raft port, as anyone
// who reaches the port could, and returns the response.
func rawRPC(t *testing.T, n *Node, method, path string, body []byte) *http.Response {
	t.Helper()
	c, err := net.DialTimeout("tcp", n.cfg.RaftAddr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req, _ := http.NewRequest(method, "http://"+n.cfg.RaftAddr+path, bytes.NewReader(body))
	if _, err := c.Write([]byte{muxRPC}); err != nil {
		t.Fatal(err)
	}
	if err := req.Write(c); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Logf("writing the request: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func lastIndex(n *Node) uint64 { return n.raft.LastIndex() }

// commandsSince returns how many command entries the log holds after index.
// Raft adds entries of its own (a leader's no-op, barriers), which do not
// count.
func commandsSince(t *testing.T, n *Node, index uint64) int {
	t.Helper()
	count := 0
	for i := index + 1; i <= n.raft.LastIndex(); i++ {
		var l raft.Log
		if err := n.wal.GetLog(i, &l); err != nil {
			t.Fatalf("log entry %d: %v", i, err)
		}
		if l.Type == raft.LogCommand {
			count++
		}
	}
	return count
}

func TestForgedInternalApplyNeverReachesTheLog(t *testing.T) {
	n := openNode(t, func(c *Config) { c.MaxCommandBytes = 64 << 10 })
	before := lastIndex(n)
	for _, body := range [][]byte{{0xc1}, {}, {0x80}, []byte("not msgpack at all")} {
		resp := rawRPC(t, n, http.MethodPost, "/internal/v1/apply", body)
		var reply applyReply
		if err := msgpack.NewDecoder(resp.Body).Decode(&reply); err != nil {
			t.Fatalf("body %x: reply: %v", body, err)
		}
		resp.Body.Close()
		if reply.Err != "bad_command" {
			t.Fatalf("body %x: reply %+v, want bad_command", body, reply)
		}
	}
	now := time.Now().UnixNano()
	forged := []*fsm.Command{
		{Type: fsm.TypeExpire, Now: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()},
		{Type: fsm.TypeExpire, Now: now},
		{Type: fsm.TypeDelete, ID: "x", Admin: true, Now: now - int64(24*time.Hour)},
		{Type: fsm.TypeConsume, ID: "x"},
	}
	for _, c := range forged {
		body, err := fsm.Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		resp := rawRPC(t, n, http.MethodPost, "/internal/v1/apply", body)
		var reply applyReply
		if err := msgpack.NewDecoder(resp.Body).Decode(&reply); err != nil {
			t.Fatalf("%+v: reply: %v", c, err)
		}
		resp.Body.Close()
		if reply.Err != "bad_command" {
			t.Fatalf("forwarded %s at %d: reply %+v, want bad_command", c.Type, c.Now, reply)
		}
	}
	big := bytes.Repeat([]byte{'x'}, 1<<20)
	if resp := rawRPC(t, n, http.MethodPost, "/internal/v1/apply", big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over the limit got %s, want 413", resp.Status)
	}
	if got := commandsSince(t, n, before); got != 0 {
		t.Fatalf("%d commands reached the log", got)
	}
	if _, err := n.Create(context.Background(), CreateRequest{Content: []byte("still here")}); err != nil {
		t.Fatalf("create after the forged calls: %v", err)
	}
}

func TestGarbageInTheLogIsSkippedAndSurvivesARestart(t *testing.T) {
	n := openNode(t)
	ctx := context.Background()
	p, err := n.Create(ctx, CreateRequest{Content: []byte("before")})
	if err != nil {
		t.Fatal(err)
	}
	f := n.raft.Apply([]byte{0xc1}, 5*time.Second)
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	if res, ok := f.Response().(*fsm.Result); !ok || !errors.Is(res.Err, fsm.ErrBadCommand) {
		t.Fatalf("response to garbage = %#v, want ErrBadCommand", f.Response())
	}
	if _, err := n.Create(ctx, CreateRequest{Content: []byte("after")}); err != nil {
		t.Fatalf("create after garbage: %v", err)
	}
	if _, err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	n.raft.Apply([]byte("more garbage after the snapshot"), 5*time.Second)
	cfg := n.cfg
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Open(ctx); err != nil {
		t.Fatalf("reopen over a log with garbage: %v", err)
	}
	defer again.Close()
	waitFor(t, 10*time.Second, "the paste after the restart", func() bool {
		got, ok := again.fsm.Get(p.ID, time.Now())
		return ok && string(got.Content) == "before"
	})
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestIdleRaftConnectionIsClosed(t *testing.T) {
	n := openNode(t, func(c *Config) { c.IdleTimeout = 300 * time.Millisecond })
	for _, first := range [][]byte{nil, {muxRaft}, {muxRPC}} {
		c, err := net.Dial("tcp", n.cfg.RaftAddr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(first); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		_, err = io.ReadAll(c)
		c.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("protocol %q: an idle connection was still open after %v", first, time.Since(start))
		}
	}
}

func TestLeaderRefusesACommandAnOldMemberDoesNotKnow(t *testing.T) {
	n := openNode(t)
	ctx := context.Background()
	// A live member advertising protocol 0: older than every command type.
	n.SetPeerProtocol(func() int { return 0 })
	before := lastIndex(n)
	if _, err := n.Create(ctx, CreateRequest{Content: []byte("x")}); !errors.Is(err, ErrOldPeer) {
		t.Fatalf("create with an old member = %v, want ErrOldPeer", err)
	}
	if got := commandsSince(t, n, before); got != 0 {
		t.Fatalf("%d commands reached the log", got)
	}
	n.SetPeerProtocol(func() int { return fsm.ProtocolVersion })
	if _, err := n.Create(ctx, CreateRequest{Content: []byte("x")}); err != nil {
		t.Fatalf("create once every member is current: %v", err)
	}
}

func TestVerifyPeerChecksTheID(t *testing.T) {
	n := openNode(t)
	ctx := context.Background()
	waitFor(t, 5*time.Second, "a cluster id", func() bool { return n.ClusterID() != "" })
	got, err := n.VerifyPeer(ctx, "n1", n.cfg.RaftAddr)
	if err != nil {
		t.Fatalf("verify the node as itself: %v", err)
	}
	if got.Cluster != n.ClusterID() || !got.HasState {
		t.Errorf("identity %+v, want cluster %s with state", got, n.ClusterID())
	}
	if _, err := n.VerifyPeer(ctx, "n2", n.cfg.RaftAddr); !errors.Is(err, ErrNotVerified) {
		t.Fatalf("verify under another id = %v, want ErrNotVerified", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprint(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
			c.Close()
		}
	}()
	if _, err := n.VerifyPeer(ctx, "n2", ln.Addr().String()); !errors.Is(err, ErrNotVerified) {
		t.Fatalf("verify something that is not a node = %v, want ErrNotVerified", err)
	}
}
