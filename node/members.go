package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/pastenode/pastenode/fsm"
)

// HasState reports whether this node is part of a cluster already: it has
// a Raft configuration, from a bootstrap or from a leader that added it.
func (n *Node) HasState() bool {
	f := n.raft.GetConfiguration()
	return f.Error() == nil && len(f.Configuration().Servers) > 0
}

// IsLeader reports whether this node leads.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// NewAutopilot returns an autopilot that manages this node's Raft voters
// for app. It starts nothing: the caller starts it while this node leads.
func (n *Node) NewAutopilot(app autopilot.ApplicationIntegration, opts ...autopilot.Option) *autopilot.Autopilot {
	return autopilot.New(n.raft, app, opts...)
}

// ServerStats are what autopilot needs to judge a server's health.
type ServerStats struct {
	LastContact time.Duration `msgpack:"c"` // -1: never
	LastTerm    uint64        `msgpack:"t"`
	LastIndex   uint64        `msgpack:"i"`
}

// localStats returns this node's ServerStats.
func (n *Node) localStats() ServerStats {
	st := n.raft.Stats()
	s := ServerStats{LastContact: -1}
	s.LastTerm, _ = strconv.ParseUint(st["last_log_term"], 10, 64)
	s.LastIndex, _ = strconv.ParseUint(st["last_log_index"], 10, 64)
	switch c := st["last_contact"]; c {
	case "never":
	case "0":
		s.LastContact = 0
	default:
		if d, err := time.ParseDuration(c); err == nil {
			s.LastContact = d
		}
	}
	if n.raft.State() == raft.Leader {
		s.LastContact = 0
	}
	return s
}

// ServerStats returns the ServerStats of server id at raftAddr: this
// node's own, or asked over the internal RPC.
func (n *Node) ServerStats(ctx context.Context, id, raftAddr string) (ServerStats, error) {
	if id == n.cfg.ID {
		return n.localStats(), nil
	}
	return n.peerStats(ctx, raftAddr)
}

// peerStats asks the node at raftAddr for its ServerStats.
func (n *Node) peerStats(ctx context.Context, raftAddr string) (ServerStats, error) {
	var s ServerStats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+raftAddr+"/internal/v1/stats", nil)
	if err != nil {
		return s, err
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return s, fmt.Errorf("stats from %s: %w", raftAddr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("stats from %s: %s", raftAddr, resp.Status)
	}
	if err := msgpack.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&s); err != nil {
		return s, fmt.Errorf("stats from %s: %w", raftAddr, err)
	}
	return s, nil
}

func (n *Node) handleStats(w http.ResponseWriter, r *http.Request) {
	s := n.localStats()
	writeMsgpack(w, &s)
}

// identity is what a node says of itself over the internal RPC.
type identity struct {
	ID       string `msgpack:"id"`
	Protocol int    `msgpack:"pv"`
}

func (n *Node) handleIdentity(w http.ResponseWriter, r *http.Request) {
	writeMsgpack(w, &identity{ID: n.cfg.ID, Protocol: fsm.ProtocolVersion})
}

// ErrNotVerified means a gossip member could not prove over the internal
// RPC that it is the node it claims to be: the leader does not add it.
var ErrNotVerified = errors.New("member not verified")

// VerifyPeer asks the node at raftAddr who it is, over the internal RPC,
// and checks that it is node id. With a cluster key the call runs over
// mutual TLS pinned to the key, so an answer proves that the peer holds the
// key; without one it proves only that the address answers as id.
func (n *Node) VerifyPeer(ctx context.Context, id, raftAddr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+raftAddr+"/internal/v1/identity", nil)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotVerified, err)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s at %s: %v", ErrNotVerified, id, raftAddr, err)
	}
	defer resp.Body.Close()
	var got identity
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s at %s answered %s", ErrNotVerified, id, raftAddr, resp.Status)
	}
	if err := msgpack.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&got); err != nil {
		return fmt.Errorf("%w: %s at %s: %v", ErrNotVerified, id, raftAddr, err)
	}
	if got.ID != id {
		return fmt.Errorf("%w: %s is node %q, gossip says %q", ErrNotVerified, raftAddr, got.ID, id)
	}
	return nil
}
