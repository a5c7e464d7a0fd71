package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/internal/freeport"
)

// openNode opens a single-voter node in a temporary dir, with the changes
// to its Config, and waits until it is ready.
func openNode(t *testing.T, changes ...func(*Config)) *Node {
	t.Helper()
	cfg := Config{ID: "n1", DataDir: t.TempDir(), RaftAddr: freeport.Addr(t), BootstrapExpect: 1, TimeScale: 0.1}
	for _, c := range changes {
		c(&cfg)
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	withHooks(n)
	if err := n.Open(context.Background()); err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { n.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for n.Ready() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("node not ready: %v", n.Ready())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return n
}

func TestCreateStampsIDAndTimes(t *testing.T) {
	n := openNode(t)
	ctx := context.Background()
	before := time.Now().UnixNano()
	p, err := n.Create(ctx, CreateRequest{Content: []byte("hi"), Title: "t", Lang: "Go", Expire: time.Hour, DeleteToken: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.ID) != IDLen || strings.Trim(p.ID, IDAlphabet) != "" {
		t.Errorf("id %q: want %d characters of IDAlphabet", p.ID, IDLen)
	}
	if p.CreatedAt < before || p.ExpiresAt != p.CreatedAt+int64(time.Hour) {
		t.Errorf("times: got created %d, expires %d; want created after %d and expiry an hour later", p.CreatedAt, p.ExpiresAt, before)
	}
	got, err := n.Read(ctx, p.ID, false)
	if err != nil || string(got.Content) != "hi" || got.Title != "t" || got.Lang != "Go" {
		t.Fatalf("Read(%s) = %+v, %v; want the paste", p.ID, got, err)
	}
	if err := n.Delete(ctx, p.ID, "wrong", false); !errors.Is(err, fsm.ErrForbidden) {
		t.Errorf("delete with the wrong token: got %v, want %v", err, fsm.ErrForbidden)
	}
	if err := n.Delete(ctx, p.ID, "secret", false); err != nil {
		t.Errorf("delete with the token: %v", err)
	}
	if _, err := n.Read(ctx, p.ID, false); !errors.Is(err, fsm.ErrNotFound) {
		t.Errorf("Read of the deleted paste: err = %v, want %v", err, fsm.ErrNotFound)
	}
}

func TestCreateDrawsAnotherIDWhenTaken(t *testing.T) {
	n := openNode(t)
	ctx := context.Background()
	ids := []string{"taken", "taken", "free"}
	n.hooks.newID = func() string {
		id := ids[0]
		ids = ids[1:]
		return id
	}
	if _, err := n.Create(ctx, CreateRequest{Content: []byte("first")}); err != nil {
		t.Fatal(err)
	}
	p, err := n.Create(ctx, CreateRequest{Content: []byte("second")})
	if err != nil {
		t.Fatalf("create after a taken id: %v", err)
	}
	if p.ID != "free" {
		t.Errorf("got id %q, want the second draw %q", p.ID, "free")
	}

	n.hooks.newID = func() string { return "taken" }
	if _, err := n.Create(ctx, CreateRequest{Content: []byte("third")}); err == nil {
		t.Error("create with only taken ids: got no error")
	}
}

func TestConsumeAndRemoveNode(t *testing.T) {
	n := openNode(t)
	ctx := context.Background()
	p, err := n.Create(ctx, CreateRequest{Content: []byte("once"), Burn: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := n.Consume(ctx, p.ID)
	if err != nil || string(got.Content) != "once" {
		t.Fatalf("first consume: got %v, %v; want the content", got, err)
	}
	if _, err := n.Consume(ctx, p.ID); !errors.Is(err, fsm.ErrNotFound) {
		t.Errorf("second consume: got %v, want %v", err, fsm.ErrNotFound)
	}

	if n.Removed("n9") {
		t.Fatal("n9 removed before anyone removed it")
	}
	if err := n.RemoveNode(ctx, "n9"); err != nil {
		t.Fatal(err)
	}
	if !n.Removed("n9") {
		t.Error("n9 not recorded as removed")
	}
}

// TestSlowWriteTimesOut: a write that a leader with a quorum does not
// confirm within the write hold, because the leader is slow to apply it, or
// because the follower that took a removal is, fails with ErrTimeout, which
// says it may still be applied, not with ErrNoLeader, which says it was
// not. And it is applied: every node has it once the slow one catches up.
func TestSlowWriteTimesOut(t *testing.T) {
	const hold = 500 * time.Millisecond
	nodes := openCluster(t, 3, func(c *Config) { c.WriteHold = hold })
	leader, followers := leaderOf(t, nodes)
	ctx := context.Background()
	doomed := createOn(t, followers[1], "doomed", nodes...)
	for i, w := range []struct {
		slow  *Node
		write func() error
		want  int64 // pastes on every node afterwards
	}{
		{leader, func() error {
			_, err := leader.Create(ctx, CreateRequest{Content: []byte("slow"), DeleteToken: "t"})
			return err
		}, 2},
		{followers[0], func() error { return followers[0].Delete(ctx, doomed, "t", false) }, 1},
	} {
		closeGate(w.slow)
		start := time.Now()
		err := w.write()
		elapsed := time.Since(start)
		openGate(w.slow)
		if !errors.Is(err, ErrTimeout) || errors.Is(err, ErrNoLeader) {
			t.Errorf("write %d on %s while it cannot apply: got %v, want %v", i, w.slow.ID(), err, ErrTimeout)
		}
		if elapsed > hold+2*time.Second {
			t.Errorf("write %d on %s took %s, want about the write hold %s", i, w.slow.ID(), elapsed, hold)
		}
		waitUntil(t, 10*time.Second, "every node holding the timed-out writes", func() error {
			for _, n := range nodes {
				if count, _ := n.fsm.Stats(); count != w.want {
					return fmt.Errorf("%s holds %d pastes, want %d", n.ID(), count, w.want)
				}
			}
			return nil
		})
	}
}

// TestCreateOnASlowFollowerIsReadThere: a create through a follower that
// cannot apply is answered once the leader has applied it, and a read of
// it there does not answer 404 meanwhile: it waits to apply up to the read
// index, answering ErrUnavailable while it cannot, and the content once it
// can (G2).
func TestCreateOnASlowFollowerIsReadThere(t *testing.T) {
	nodes := openCluster(t, 3, func(c *Config) { c.WriteHold = 500 * time.Millisecond })
	_, followers := leaderOf(t, nodes)
	f := followers[0]
	ctx := context.Background()
	closeGate(f)
	p, err := f.Create(ctx, CreateRequest{Content: []byte("mine"), DeleteToken: "t"})
	if err != nil {
		openGate(f)
		t.Fatalf("create on a follower that cannot apply: %v; want it answered once the leader applied it", err)
	}
	if got, err := f.Read(ctx, p.ID, false); !errors.Is(err, ErrUnavailable) {
		openGate(f)
		t.Fatalf("read on the follower before it applied the create: %v, %v; want ErrUnavailable, never not found", got, err)
	}
	openGate(f)
	got, err := f.Read(ctx, p.ID, false)
	if err != nil || string(got.Content) != "mine" {
		t.Fatalf("read on the follower once it can apply: %v, %v; want the content", got, err)
	}
}

// TestNodeInNoClusterRefusesWritesAtOnce: a node started to be added
// (BootstrapExpect 0) and not joined says so at once, for writes and
// readiness, rather than holding a write for a leader no election brings.
func TestNodeInNoClusterRefusesWritesAtOnce(t *testing.T) {
	n, err := New(Config{ID: "n1", DataDir: t.TempDir(), RaftAddr: freeport.Addr(t), BootstrapExpect: 0,
		TimeScale: 0.1, WriteHold: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Open(context.Background()); err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { n.Close() })

	start := time.Now()
	_, err = n.Create(context.Background(), CreateRequest{Content: []byte("x"), DeleteToken: "t"})
	if !errors.Is(err, ErrNoCluster) {
		t.Fatalf("create: got %v, want ErrNoCluster", err)
	}
	// Well within the write hold, which it would otherwise wait out.
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("create took %s to fail, want at once (the hold is 10s)", took)
	}
	if err := n.Delete(context.Background(), "someid", "t", false); !errors.Is(err, ErrNoCluster) {
		t.Errorf("delete: got %v, want ErrNoCluster", err)
	}
	if err := n.Ready(); !errors.Is(err, ErrNoCluster) {
		t.Errorf("ready: got %v, want ErrNoCluster", err)
	}
}
