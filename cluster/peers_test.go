package cluster

import (
	"log/slog"
	"net"
	"slices"
	"testing"
)

func TestJoinTargetsSkipSelfAndAddRememberedPeers(t *testing.T) {
	c := &Cluster{
		cfg:         Config{Join: []string{"127.0.0.1:7946", "127.0.0.1:7947"}, DataDir: t.TempDir()},
		log:         slog.New(slog.DiscardHandler),
		advertiseIP: net.ParseIP("127.0.0.1"),
		gossipPort:  7946,
		members: map[string]*member{
			"b": {gossipAddr: "127.0.0.1:7947", state: "alive"},
			"c": {gossipAddr: "127.0.0.1:7948", state: "alive"},
			"d": {gossipAddr: "127.0.0.1:7949", state: "dead"},
		},
		node: fakeNode{id: "a"},
	}
	for addr, want := range map[string]bool{
		"127.0.0.1:7946": true,
		"localhost:7946": true,
		"0.0.0.0:7946":   true,
		"127.0.0.1:7947": false,
		"10.9.9.9:7946":  false,
		"no-port":        false,
	} {
		if got := c.isSelf(addr); got != want {
			t.Errorf("isSelf(%q) = %v, want %v", addr, got, want)
		}
	}
	if got, want := c.joinTargets(), []string{"127.0.0.1:7947"}; !slices.Equal(got, want) {
		t.Fatalf("targets before any peer was saved = %v, want %v", got, want)
	}
	c.savePeers()
	// A restarted node whose only seed is itself still finds its peers.
	c.cfg.Join = []string{"127.0.0.1:7946"}
	if got, want := c.joinTargets(), []string{"127.0.0.1:7947", "127.0.0.1:7948"}; !slices.Equal(got, want) {
		t.Fatalf("targets after a restart = %v, want %v", got, want)
	}
}

// fakeNode is the part of Node that the peers code uses.
type fakeNode struct {
	Node
	id string
}

func (f fakeNode) ID() string { return f.id }
