package node

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pastenode/pastenode/fsm"
)

func TestCheckID(t *testing.T) {
	for _, c := range []struct {
		id string
		ok bool
	}{
		{"Xk3tR9wq2m", true},
		{"l1IO0abcdefghij", true},                      // the look-alikes drawn ids leave out
		{"0b2f8e4c-7d1a-4c3e-9f6b-2a5d8c1e7f40", true}, // a UUID
		{"under_score", true},
		{strings.Repeat("a", MaxIDLen), true},
		{"", false},
		{"short", false},
		{"new", false},
		{strings.Repeat("a", MaxIDLen+1), false},
		{"has/slash1", false},
		{"has space1", false},
		{"dotted.name", false},
		{"%2e%2e%2fetc", false},
		{"ümlautümlaut", false},
	} {
		err := CheckID(c.id)
		if c.ok && err != nil {
			t.Errorf("CheckID(%q) = %v, want nil", c.id, err)
		}
		if !c.ok && !errors.Is(err, ErrBadID) {
			t.Errorf("CheckID(%q) = %v, want an error wrapping ErrBadID", c.id, err)
		}
	}
}

// An import is replicated with the id and times it names: every node
// holds the same paste, whichever node proposed it.
func TestImportKeepsIDAndTimes(t *testing.T) {
	nodes := openCluster(t, 3)
	_, followers := leaderOf(t, nodes)
	ctx := context.Background()
	created := time.Date(2021, 3, 14, 15, 9, 26, 0, time.UTC)
	expires := time.Now().Add(48 * time.Hour).Truncate(time.Second)
	req := ImportRequest{
		ID: "old-Link_0lI", Content: []byte("from the old pastebin\n"), Title: "kept", Lang: "Go",
		CreatedAt: created, ExpiresAt: expires, Encrypted: true, DeleteToken: "tok",
	}
	p, err := followers[0].Import(ctx, req)
	if err != nil {
		t.Fatalf("import through a follower: %v", err)
	}
	if p.ID != req.ID || p.CreatedAt != created.UnixNano() || p.ExpiresAt != expires.UnixNano() {
		t.Errorf("imported paste: id %q, created %d, expires %d; want %q, %d, %d",
			p.ID, p.CreatedAt, p.ExpiresAt, req.ID, created.UnixNano(), expires.UnixNano())
	}
	for _, n := range nodes {
		got, err := n.Read(ctx, req.ID, false)
		if err != nil {
			t.Fatalf("%s: read the import: %v", n.ID(), err)
		}
		if string(got.Content) != string(req.Content) || got.Title != "kept" || got.Lang != "Go" || !got.Encrypted || got.Burn ||
			got.CreatedAt != created.UnixNano() || got.ExpiresAt != expires.UnixNano() {
			t.Errorf("%s: read %+v; want the imported paste with its own times", n.ID(), got)
		}
	}

	// The same id again, from any node, is taken; nothing draws another.
	for _, n := range nodes {
		again := req
		again.Content = []byte("a second copy")
		if _, err := n.Import(ctx, again); !errors.Is(err, fsm.ErrExists) {
			t.Errorf("%s: import of a taken id: got %v, want %v", n.ID(), err, fsm.ErrExists)
		}
	}
	got, _ := nodes[0].Read(ctx, req.ID, false)
	if string(got.Content) != string(req.Content) {
		t.Errorf("after the second import: content %q, want the first one's", got.Content)
	}

	// An id a create drew, or one deleted moments ago, is taken too.
	made, err := nodes[1].Create(ctx, CreateRequest{Content: []byte("drawn"), DeleteToken: "d"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[2].Import(ctx, ImportRequest{ID: made.ID, Content: []byte("x")}); !errors.Is(err, fsm.ErrExists) {
		t.Errorf("import over a created paste: got %v, want %v", err, fsm.ErrExists)
	}
	if err := nodes[1].Delete(ctx, made.ID, "d", false); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[2].Import(ctx, ImportRequest{ID: made.ID, Content: []byte("x")}); !errors.Is(err, fsm.ErrExists) {
		t.Errorf("import over a tombstone: got %v, want %v", err, fsm.ErrExists)
	}

	if _, err := nodes[0].Import(ctx, ImportRequest{ID: "bad/id/here", Content: []byte("x")}); !errors.Is(err, ErrBadID) {
		t.Errorf("import with a bad id: got %v, want %v", err, ErrBadID)
	}
}

// An import is a create command, which members of every protocol apply:
// a cluster in the middle of a rolling upgrade from the oldest protocol
// takes it.
func TestImportNeedsNoNewProtocol(t *testing.T) {
	n := openNode(t)
	n.SetPeerProtocol(func() int { return 1 })
	ctx := context.Background()
	if _, err := n.Import(ctx, ImportRequest{ID: "kept-from-v1", Content: []byte("x"), CreatedAt: time.Unix(1e9, 0)}); err != nil {
		t.Fatalf("import with a protocol 1 member: %v", err)
	}
	got, err := n.Read(ctx, "kept-from-v1", false)
	if err != nil || got.CreatedAt != time.Unix(1e9, 0).UnixNano() || got.ExpiresAt != 0 {
		t.Errorf("read %+v, %v; want the paste created at its own time, never expiring", got, err)
	}
}
