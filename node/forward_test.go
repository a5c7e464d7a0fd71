package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/pastenode/pastenode/fsm"
)

// batchRPC sends cmds to n's batch call as a peer would and decodes the
// replies; it fails the test unless n answers 200.
func batchRPC(t *testing.T, n *Node, cmds ...[]byte) []applyReply {
	t.Helper()
	return batchCall(t, n, "/internal/v1/apply-batch", cmds...)
}

func batchCall(t *testing.T, n *Node, path string, cmds ...[]byte) []applyReply {
	t.Helper()
	body, err := msgpack.Marshal(cmds)
	if err != nil {
		t.Fatal(err)
	}
	resp := rawRPC(t, n, http.MethodPost, path, body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("batch call: %s", resp.Status)
	}
	var replies []applyReply
	if err := msgpack.NewDecoder(resp.Body).Decode(&replies); err != nil {
		t.Fatalf("batch reply: %v", err)
	}
	if len(replies) != len(cmds) {
		t.Fatalf("%d replies to %d commands", len(replies), len(cmds))
	}
	return replies
}

func encodeCommand(t *testing.T, c *fsm.Command) []byte {
	t.Helper()
	b, err := fsm.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBatchCallChecksEachCommand: the leader checks every command of a
// batch as it checks a single forwarded one, applies the good ones as one
// log entry (as one entry each while a member runs protocol 1) and answers
// each in order; a body it cannot take reaches nothing.
func TestBatchCallChecksEachCommand(t *testing.T) {
	tests := []struct {
		name     string
		protocol int
		entries  int
		nested   string // the error code for a batch inside the batch
	}{
		{"current members", fsm.ProtocolVersion, 1, "bad_command"},
		{"a member at protocol 1", 1, 2, "old_peer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := openNode(t, func(c *Config) { c.MaxCommandBytes = 64 << 10 })
			n.SetPeerProtocol(func() int { return tt.protocol })
			before := lastIndex(n)
			now := time.Now().UnixNano()
			create := func(id string) []byte {
				return encodeCommand(t, &fsm.Command{Type: fsm.TypeCreate, Now: now, RequestID: "r-" + id,
					Paste: &fsm.Paste{ID: id, Content: []byte(id), CreatedAt: now}})
			}
			replies := batchRPC(t, n,
				create("first-paste"),
				[]byte("not msgpack"),
				encodeCommand(t, &fsm.Command{Type: fsm.TypeExpire, Now: now}),
				bytes.Repeat([]byte{'x'}, 64<<10+1),
				encodeCommand(t, &fsm.Command{Type: fsm.TypeBatch, Batch: [][]byte{create("nested")}}),
				create("second-paste"),
			)
			want := []string{"", "bad_command", "bad_command", "bad_command", tt.nested, ""}
			for i, r := range replies {
				if r.Err != want[i] {
					t.Errorf("reply %d = %+v, want error code %q", i, r, want[i])
				}
			}
			first, second := replies[0], replies[5]
			if first.Paste == nil || first.Paste.ID != "first-paste" || second.Paste == nil || second.Paste.ID != "second-paste" {
				t.Fatalf("the creates' replies = %+v and %+v, want their pastes", first, second)
			}
			if first.Index <= before || second.Index < first.Index {
				t.Fatalf("the creates' indexes = %d and %d, want in log order after %d", first.Index, second.Index, before)
			}
			if got := commandsSince(t, n, before); got != tt.entries {
				t.Fatalf("%d log entries for the 2 creates, want %d", got, tt.entries)
			}
			if _, ok := n.fsm.Get("second-paste", time.Now()); !ok {
				t.Fatal("second-paste not in the store")
			}
		})
	}
}

// TestBatchCallLeanReplies: asked with leanReplies, the leader leaves the
// content out of the pastes creates return, and only then.
func TestBatchCallLeanReplies(t *testing.T) {
	n := openNode(t)
	now := time.Now().UnixNano()
	create := func(id string) []byte {
		return encodeCommand(t, &fsm.Command{Type: fsm.TypeCreate, Now: now, RequestID: "r-" + id,
			Paste: &fsm.Paste{ID: id, Content: []byte("content of " + id), CreatedAt: now}})
	}
	full := batchRPC(t, n, create("full-paste"))[0]
	lean := batchCall(t, n, "/internal/v1/apply-batch?"+leanReplies, create("lean-paste"))[0]
	if full.Paste == nil || string(full.Paste.Content) != "content of full-paste" {
		t.Errorf("a plain batch call's create reply %+v, want the paste with its content", full.Paste)
	}
	if lean.Paste == nil || lean.Paste.ID != "lean-paste" || lean.Paste.Content != nil {
		t.Errorf("a lean batch call's create reply %+v, want the paste without content", lean.Paste)
	}
	if p, ok := n.fsm.Get("lean-paste", time.Now()); !ok || string(p.Content) != "content of lean-paste" {
		t.Error("the lean reply changed the stored paste")
	}
}

// TestBatchCallRefusesBadBodies: a batch body the leader cannot take
// answers 400 or 413 and reaches nothing.
func TestBatchCallRefusesBadBodies(t *testing.T) {
	n := openNode(t, func(c *Config) { c.MaxCommandBytes = 64 << 10 })
	before := lastIndex(n)
	big, err := msgpack.Marshal([][]byte{bytes.Repeat([]byte{'x'}, 40<<10), bytes.Repeat([]byte{'y'}, 40<<10)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		body []byte
		want int
	}{
		{"garbage", []byte("not msgpack"), http.StatusBadRequest},
		{"too many commands", msgpackArrayOf(t, maxForwardBatch+1), http.StatusBadRequest},
		{"over the byte limit", big, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		if resp := rawRPC(t, n, http.MethodPost, "/internal/v1/apply-batch", tt.body); resp.StatusCode != tt.want {
			t.Errorf("%s: got %s, want %d", tt.name, resp.Status, tt.want)
		}
	}
	if got := commandsSince(t, n, before); got != 0 {
		t.Fatalf("%d commands reached the log", got)
	}
}

// msgpackArrayOf encodes n empty byte strings.
func msgpackArrayOf(t *testing.T, n int) []byte {
	t.Helper()
	b, err := msgpack.Marshal(make([][]byte, n))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestForwardedCreatesSurviveALeaderChange: creates forwarded from a
// follower while leadership moves all succeed, each exactly once, and each
// is readable on the forwarding node as soon as it returns.
func TestForwardedCreatesSurviveALeaderChange(t *testing.T) {
	nodes := openCluster(t, 3)
	leader, followers := leaderOf(t, nodes)
	from := followers[0]
	if replies := batchRPC(t, from, []byte("x")); replies[0].Err != "not_leader" {
		t.Fatalf("a batch sent to a follower: reply %+v, want not_leader", replies[0])
	}
	const count = 200
	var wg sync.WaitGroup
	errs := make(chan error, count)
	for i := range count {
		wg.Go(func() {
			p, err := from.Create(context.Background(), CreateRequest{Content: []byte(fmt.Sprint(i))})
			if err == nil {
				// Read, not the store: the create is answered once the
				// leader has applied it, and a read that misses on from
				// waits for from to catch up (G2).
				if _, err = from.Read(context.Background(), p.ID, false); err != nil {
					err = fmt.Errorf("paste %s not readable on %s once created: %w", p.ID, from.ID(), err)
				} else if string(p.Content) != fmt.Sprint(i) {
					err = fmt.Errorf("create %d returned a paste of content %q", i, p.Content)
				}
			}
			errs <- err
		})
	}
	// The creates are in flight, most of them still queued on from.
	if err := leader.raft.LeadershipTransfer().Error(); err != nil {
		t.Fatalf("leadership transfer: %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		waitUntil(t, 5*time.Second, n.ID()+" has every paste", func() error {
			if got, _ := n.Stats(); got != count {
				return fmt.Errorf("%d pastes, want %d", got, count)
			}
			return nil
		})
	}
}

// TestForwardedCreateReturnsItsPaste: a create through a follower returns
// the paste with its content, which the leader's lean reply left out.
func TestForwardedCreateReturnsItsPaste(t *testing.T) {
	nodes := openCluster(t, 3)
	_, followers := leaderOf(t, nodes)
	for i := range 3 {
		content := fmt.Sprintf("forwarded %d", i)
		p, err := followers[0].Create(context.Background(), CreateRequest{Content: []byte(content), Title: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if string(p.Content) != content || p.Title != "t" || p.ID == "" {
			t.Fatalf("create %d returned %+v, want its content %q and title", i, p, content)
		}
	}
}

// TestForwardingFallsBackForAnOldLeader: a leader that does not serve the
// batch call (404, an older version) still gets every write, one call each.
func TestForwardingFallsBackForAnOldLeader(t *testing.T) {
	nodes := openCluster(t, 3)
	_, followers := leaderOf(t, nodes)
	from := followers[0]
	if err := from.roundTrip(context.Background(), http.MethodPost, "/internal/v1/no-such-call", nil, 1<<10, nil); !errors.Is(err, errNotServed) {
		t.Fatalf("a call the leader does not serve: err = %v, want errNotServed", err)
	}
	batches := 0
	from.forwards.send = func(context.Context, [][]byte) ([]applyReply, error) {
		batches++ // one sender at a time here: creates run one after another
		return nil, errNotServed
	}
	for i := range 3 {
		p, err := from.Create(context.Background(), CreateRequest{Content: []byte(fmt.Sprint(i))})
		if err != nil {
			t.Fatalf("create %d through an old leader: %v", i, err)
		}
		if got, err := from.Read(context.Background(), p.ID, false); err != nil || string(got.Content) != fmt.Sprint(i) {
			t.Fatalf("paste %s on %s once created: %v, %v", p.ID, from.ID(), got, err)
		}
	}
	if batches != 3 {
		t.Fatalf("%d batch calls tried, want 3", batches)
	}
}
