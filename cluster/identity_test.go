package cluster

import (
	"errors"
	"net"
	"testing"

	"github.com/hashicorp/memberlist"
	autopilot "github.com/hashicorp/raft-autopilot"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/pastenode/pastenode/node"
)

// identityNode is the part of Node that the identity checks use.
type identityNode struct {
	Node
	cluster  string
	hasState bool
}

func (n identityNode) ID() string        { return "self" }
func (n identityNode) ClusterID() string { return n.cluster }
func (n identityNode) HasState() bool    { return n.hasState }

func gossipNode(t *testing.T, name, cluster string) *memberlist.Node {
	t.Helper()
	b, err := msgpack.Marshal(&meta{Cluster: cluster})
	if err != nil {
		t.Fatal(err)
	}
	return &memberlist.Node{Name: name, Addr: net.IPv4(127, 0, 0, 2), Port: 7946, Meta: b}
}

func TestCheckPeer(t *testing.T) {
	tests := []struct {
		name     string
		ours     string
		hasState bool
		peer     string // its name
		theirs   string
		merge    bool
		refuse   bool
	}{
		{"same cluster", "A", true, "p", "A", true, false},
		{"another cluster", "A", true, "p", "B", false, true},
		{"another cluster at a join", "A", true, "p", "B", true, true},
		{"a new node joins anyone", "", false, "p", "B", true, false},
		{"a peer without an id yet", "A", true, "p", "", true, false},
		{"state of no known cluster, at a join", "", true, "p", "B", true, true},
		{"a namesake of another cluster", "A", true, "self", "B", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Cluster{node: identityNode{cluster: tt.ours, hasState: tt.hasState}, advertiseIP: net.IPv4(127, 0, 0, 1), gossipPort: 7946}
			c.joinedOnce.Store(true)
			err := c.checkPeer(gossipNode(t, tt.peer, tt.theirs), tt.merge)
			if got := err != nil; got != tt.refuse {
				t.Fatalf("checkPeer = %v, want refused %v", err, tt.refuse)
			}
			if err != nil && !errors.Is(err, node.ErrForeignCluster) {
				t.Errorf("error %v does not wrap ErrForeignCluster", err)
			}
		})
	}
}

func TestAdmissible(t *testing.T) {
	s := &autopilot.Server{ID: "p"}
	tests := []struct {
		name   string
		ours   string
		id     node.PeerIdentity
		member bool
		refuse bool
	}{
		{"a new node", "A", node.PeerIdentity{}, false, false},
		{"a member of this cluster", "A", node.PeerIdentity{Cluster: "A", HasState: true}, false, false},
		{"a node of another cluster", "A", node.PeerIdentity{Cluster: "B", HasState: true}, false, true},
		{"a member at a new address claiming another cluster", "A", node.PeerIdentity{Cluster: "B", HasState: true}, true, true},
		{"state of no known cluster", "A", node.PeerIdentity{HasState: true}, false, true},
		{"an old-version member at a new address", "A", node.PeerIdentity{HasState: true}, true, false},
		{"a node with an id, this cluster without one", "", node.PeerIdentity{Cluster: "B", HasState: true}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Cluster{node: identityNode{cluster: tt.ours}}
			err := c.admissible(s, tt.id, tt.member)
			if got := err != nil; got != tt.refuse {
				t.Fatalf("admissible = %v, want refused %v", err, tt.refuse)
			}
		})
	}
}
