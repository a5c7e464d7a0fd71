package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"
)

// HasState reports whether this node is part of a cluster already: it has
// a Raft configuration, from a bootstrap or from a leader that added it.
func (n *Node) HasState() bool {
	f := n.raft.GetConfiguration()
	return f.Error() == nil && len(f.Configuration().Servers) > 0
}

// ErrNoCluster means this node is in no cluster yet: it was started to
// wait until it is added (BootstrapExpect 0) and no leader has added it.
// Nothing will change that until an operator joins it to one.
var ErrNoCluster = errors.New("not in a cluster yet: run pastectl join")

// awaitsJoin reports whether this node waits for an operator to join it
// to a cluster: started to be added rather than to bootstrap, and in no
// Raft configuration yet. Its writes would wait for a leader that no
// election can bring, so they are refused at once (ErrNoCluster).
func (n *Node) awaitsJoin() bool {
	return n.cfg.BootstrapExpect == 0 && !n.HasState()
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
	if err := n.getFrom(ctx, raftAddr, "/internal/v1/stats", 64<<10, &s); err != nil {
		return s, fmt.Errorf("stats from %w", err)
	}
	return s, nil
}

func (n *Node) handleStats(w http.ResponseWriter, r *http.Request) {
	s := n.localStats()
	writeMsgpack(w, &s)
}
