package cluster

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// peersFile holds the gossip addresses of the members last seen alive, so
// that a restarted node finds the cluster again even when its --join seeds
// are down, or name only itself.
const peersFile = "gossip-peers.json"

// joinTargets returns the seeds and the remembered peers, without this
// node's own address.
func (c *Cluster) joinTargets() []string {
	all := append(slices.Clone(c.cfg.Join), c.loadPeers()...)
	var out []string
	for _, a := range all {
		if !slices.Contains(out, a) && !c.isSelf(a) {
			out = append(out, a)
		}
	}
	return out
}

// isSelf reports whether addr is this node's own gossip address.
func (c *Cluster) isSelf(addr string) bool {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if port, err := strconv.Atoi(portStr); err != nil || port != c.gossipPort {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return false
	}
	for _, ip := range ips {
		if ip.IP.Equal(c.advertiseIP) || ip.IP.IsUnspecified() {
			return true
		}
	}
	return false
}

func (c *Cluster) loadPeers() []string {
	if c.cfg.DataDir == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(c.cfg.DataDir, peersFile))
	if err != nil {
		return nil
	}
	var peers []string
	if err := json.Unmarshal(b, &peers); err != nil {
		c.log.Warn("ignoring unreadable gossip peers file", "err", err)
		return nil
	}
	return peers
}

// savePeers records the live members' gossip addresses when they changed.
func (c *Cluster) savePeers() {
	if c.cfg.DataDir == "" {
		return
	}
	c.mu.Lock()
	var peers []string
	for id, m := range c.members {
		if m.state == "alive" && id != c.node.ID() && m.gossipAddr != "" {
			peers = append(peers, m.gossipAddr)
		}
	}
	c.mu.Unlock()
	slices.Sort(peers)
	if len(peers) == 0 || slices.Equal(peers, c.savedPeers) {
		return
	}
	b, _ := json.Marshal(peers)
	path := filepath.Join(c.cfg.DataDir, peersFile)
	tmp := path + ".tmp"
	err := os.WriteFile(tmp, b, 0o600)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		c.log.Warn("save gossip peers", "err", err)
		return
	}
	c.savedPeers = peers
}

// missingSeed reports whether some seed address, other than this node's
// own, is not a live member. It reads the members the event delegate
// recorded, not ml.Members(), whose nodes memberlist updates without a lock
// the caller could take.
func (c *Cluster) missingSeed() bool {
	alive := map[string]bool{}
	c.mu.Lock()
	for _, m := range c.members {
		if m.state == "alive" {
			alive[m.gossipAddr] = true
		}
	}
	c.mu.Unlock()
	for _, s := range c.cfg.Join {
		if !alive[s] && !c.isSelf(s) {
			return true
		}
	}
	return false
}
