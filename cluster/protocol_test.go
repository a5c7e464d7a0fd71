package cluster

import (
	"log/slog"
	"testing"

	"github.com/hashicorp/memberlist"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/pastenode/pastenode/fsm"
)

func TestMinProtocolIsTheOldestLiveMember(t *testing.T) {
	c := &Cluster{self: meta{Protocol: fsm.ProtocolVersion + 1}, members: map[string]*member{},
		wake: make(chan struct{}, 1), peersWake: make(chan struct{}, 1), log: slog.New(slog.DiscardHandler)}
	ev := (*events)(c)
	join := func(name string, m meta) {
		b, err := msgpack.Marshal(&m)
		if err != nil {
			t.Fatal(err)
		}
		ev.NotifyJoin(&memberlist.Node{Name: name, Meta: b})
	}
	if got := c.MinProtocol(); got != fsm.ProtocolVersion+1 {
		t.Fatalf("alone: MinProtocol = %d", got)
	}
	join("new", meta{Protocol: fsm.ProtocolVersion + 2})
	join("current", meta{Protocol: fsm.ProtocolVersion})
	if got := c.MinProtocol(); got != fsm.ProtocolVersion {
		t.Fatalf("with a member at %d: MinProtocol = %d", fsm.ProtocolVersion, got)
	}
	// A node from before the field advertises nothing: protocol 1.
	join("old", meta{})
	if got := c.MinProtocol(); got != 1 {
		t.Fatalf("with a member that advertises no protocol: MinProtocol = %d, want 1", got)
	}
	// A member that is gone no longer holds the others back.
	ev.NotifyLeave(&memberlist.Node{Name: "old", Meta: mustMeta(t, meta{})})
	ev.NotifyLeave(&memberlist.Node{Name: "current", Meta: mustMeta(t, meta{Protocol: fsm.ProtocolVersion})})
	if got := c.MinProtocol(); got != fsm.ProtocolVersion+1 {
		t.Fatalf("after the old members left: MinProtocol = %d", got)
	}
}

func mustMeta(t *testing.T, m meta) []byte {
	t.Helper()
	b, err := msgpack.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
