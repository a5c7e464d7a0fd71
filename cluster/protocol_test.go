package cluster

import (
	"log/slog"
	"testing"

	"github.com/hashicorp/memberlist"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/node"
)

func TestMinProtocolIsTheOldestMember(t *testing.T) {
	raftServers := &serversOnly{}
	c := &Cluster{self: meta{Protocol: fsm.ProtocolVersion + 1}, members: map[string]*member{}, node: raftServers,
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
	// A Raft server that is down still holds the others back: it comes
	// back with the version it had.
	raftServers.servers = []node.Server{{ID: "old"}, {ID: "current"}}
	ev.NotifyLeave(&memberlist.Node{Name: "old", Meta: mustMeta(t, meta{})})
	ev.NotifyLeave(&memberlist.Node{Name: "current", Meta: mustMeta(t, meta{Protocol: fsm.ProtocolVersion})})
	if got := c.MinProtocol(); got != 1 {
		t.Fatalf("with an old voter down: MinProtocol = %d, want 1", got)
	}
	// Once it is upgraded, or out of Raft, it no longer does.
	join("old", meta{Protocol: fsm.ProtocolVersion + 1})
	raftServers.servers = []node.Server{{ID: "old"}}
	if got := c.MinProtocol(); got != fsm.ProtocolVersion+1 {
		t.Fatalf("after the upgrade and a removal: MinProtocol = %d, want %d", got, fsm.ProtocolVersion+1)
	}
}

// serversOnly is a Node whose only working method is Servers.
type serversOnly struct {
	Node
	servers []node.Server
}

func (s *serversOnly) Servers() ([]node.Server, error) { return s.servers, nil }

func (s *serversOnly) ID() string { return "self" }

// TestMinProtocolCountsUndescribedVoters: right after a start, Raft knows
// its voters before gossip has described them; until it does, they may run
// any version, so they hold the protocol at 1.
func TestMinProtocolCountsUndescribedVoters(t *testing.T) {
	raftServers := &serversOnly{servers: []node.Server{{ID: "self"}, {ID: "peer"}}}
	c := &Cluster{self: meta{Protocol: fsm.ProtocolVersion}, members: map[string]*member{}, node: raftServers,
		wake: make(chan struct{}, 1), peersWake: make(chan struct{}, 1), log: slog.New(slog.DiscardHandler)}
	if got := c.MinProtocol(); got != 1 {
		t.Fatalf("a voter gossip has not described: MinProtocol = %d, want 1", got)
	}
	(*events)(c).NotifyJoin(&memberlist.Node{Name: "peer", Meta: mustMeta(t, meta{Protocol: fsm.ProtocolVersion})})
	if got := c.MinProtocol(); got != fsm.ProtocolVersion {
		t.Fatalf("once gossip describes it: MinProtocol = %d, want %d", got, fsm.ProtocolVersion)
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
