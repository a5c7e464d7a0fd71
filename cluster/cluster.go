// Package cluster owns gossip membership (hashicorp/memberlist): node
// metadata, join and leave events, bootstrapping a new cluster of
// --bootstrap-expect nodes together, and, on the leader, reconciling live
// members into Raft voters with hashicorp/raft-autopilot.
//
// Gossip proposes who may be added, and the leader adds a member only once
// it proved its identity over the authenticated internal RPC; gossip never
// removes anyone. A node that
// stops, crashes or leaves stays a voter, so a rolling restart never shrinks
// the cluster. Only an operator removes a node, through a replicated command
// that also keeps gossip from adding it back.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/node"
)

// Errors returned by Cluster methods.
var (
	// ErrUnknownNode means no node with that id is known to Raft or gossip.
	ErrUnknownNode = errors.New("unknown node id")
	// ErrJoin means none of the seeds answered.
	ErrJoin = errors.New("could not reach any seed")
	// ErrForeignCluster means the seeds, or a member, belong to another
	// cluster than this node's state: nothing is merged.
	ErrForeignCluster = node.ErrForeignCluster
)

// Node is what the cluster needs of the local Raft node (*node.Node).
type Node interface {
	ID() string
	// HasState reports whether the node belongs to a cluster already.
	HasState() bool
	IsLeader() bool
	// Bootstrap forms a new cluster of servers.
	Bootstrap(servers []raft.Server) error
	// Servers is the Raft configuration, with the leader marked.
	Servers() ([]node.Server, error)
	// RemoveNode replicates an operator's removal of node id; Removed
	// reports one.
	RemoveNode(ctx context.Context, id string) error
	Removed(id string) bool
	// ServerStats are the health figures autopilot judges server id by.
	ServerStats(ctx context.Context, id, raftAddr string) (node.ServerStats, error)
	// NewAutopilot returns an autopilot over the node's Raft.
	NewAutopilot(app autopilot.ApplicationIntegration, opts ...autopilot.Option) *autopilot.Autopilot
	// VerifyPeer checks over the authenticated internal RPC that the node
	// at raftAddr is node id, and returns what it says of its cluster.
	VerifyPeer(ctx context.Context, id, raftAddr string) (node.PeerIdentity, error)
	// ClusterID is the id of the node's cluster, "" while it has none;
	// Applied is closed after the next apply, which may bring one.
	ClusterID() string
	Applied() <-chan struct{}
	// WasRemoved reports whether an operator removed the node and it waits
	// for an explicit join; Rejoin clears that, and Rejoining reports a
	// node that asked to come back and is not back yet.
	WasRemoved() bool
	Rejoin() error
	Rejoining() bool
	// Readmit replicates that node id, once removed, may come back.
	Readmit(ctx context.Context, id string) error
}

// Config configures a Cluster.
type Config struct {
	Node            Node
	GossipAddr      string   // bind host:port, TCP and UDP
	AdvertiseHost   string   // what peers dial; resolved to an IP at start
	Join            []string // seeds host:port
	ClusterKey      []byte   // nil, or 16, 24 or 32 bytes: encrypts gossip
	BootstrapExpect int
	RaftAddr        string // advertised Raft address, for the metadata
	APIAddr         string // advertised HTTP address, for the metadata
	DataDir         string // where to remember gossip peers; "" forgets them
	Version         string
	Logger          *slog.Logger
	// InsecureCluster lets gossip bind beyond loopback without a
	// ClusterKey.
	InsecureCluster bool
	// TimeScale below 1 selects memberlist's fast local timings and shortens
	// autopilot's stabilisation time, for tests.
	TimeScale float64
}

// Validate checks c and fills in defaults.
func (c *Config) Validate() error {
	if c.Node == nil {
		return errors.New("cluster: no node")
	}
	if _, _, err := net.SplitHostPort(c.GossipAddr); err != nil {
		return fmt.Errorf("gossip addr %q: %w", c.GossipAddr, err)
	}
	if err := node.CheckClusterKey(c.ClusterKey); err != nil {
		return err
	}
	if len(c.ClusterKey) == 0 && !c.InsecureCluster && !node.IsLoopback(c.GossipAddr) {
		return fmt.Errorf("gossip addr %s is not loopback: %w", c.GossipAddr, node.ErrNeedKey)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.TimeScale <= 0 {
		c.TimeScale = 1
	}
	return nil
}

// meta is what every node advertises in gossip. It must stay well under
// memberlist's 512-byte limit.
type meta struct {
	RaftAddr string `msgpack:"r"`
	APIAddr  string `msgpack:"a"`
	Version  string `msgpack:"v"`
	// Protocol is the newest command protocol the node applies
	// (fsm.ProtocolVersion); 0, from a node older than the field, means 1.
	Protocol int    `msgpack:"pv,omitempty"`
	Expect   int    `msgpack:"e"`
	HasState bool   `msgpack:"s"`
	Proposal string `msgpack:"p,omitempty"` // hash of the bootstrap set this node proposes
	// Cluster is the id of the node's cluster, "" while it has none:
	// members of two clusters never merge (mergeDelegate).
	Cluster string `msgpack:"ci,omitempty"`
	// Rejoin is set by an operator's join of a removed node: the leader
	// then readmits it.
	Rejoin bool `msgpack:"rj,omitempty"`
	// Leaving is set just before a graceful leave. Memberlist v0.6.0 never
	// fills in Node.State for the leave event (its own state shadows it),
	// so this is how the others tell "left" from "dead".
	Leaving bool `msgpack:"l,omitempty"`
}

// member is a node as gossip last described it.
type member struct {
	meta       meta
	gossipAddr string
	state      string // alive, dead, left
	// lastAck is when this node last heard from the member: a join, an
	// update or an answered probe. Memberlist does not tell when it
	// suspects a node, so a live member unheard of for a while is
	// reported as suspect.
	lastAck time.Time
}

// Cluster is this node's view of gossip membership.
type Cluster struct {
	cfg  Config
	log  *slog.Logger
	node Node
	ml   *memberlist.Memberlist

	mu      sync.Mutex
	self    meta
	members map[string]*member
	metaMu  sync.Mutex // orders the updates of self (setMeta)

	advertiseIP  net.IP // set by Start
	gossipPort   int
	suspectAfter time.Duration
	savedPeers   []string             // what savePeers last wrote
	unverified   map[string]time.Time // member id -> last warning that it was not verified

	ap        atomic.Pointer[autopilot.Autopilot] // set while autopilot runs here
	wake      chan struct{}                       // nudges the leader's reconcile after gossip events
	peersWake chan struct{}                       // nudges joinLoop to record the live peers
	stop      chan struct{}
	wg        sync.WaitGroup
	once      sync.Once

	// leaveMu orders a leave of stateLoop against Close's shutdown:
	// memberlist panics on a leave after shutdown.
	leaveMu  sync.Mutex
	shutDown bool

	transport  *memberlist.NetTransport // bound by Bind
	refused    atomic.Pointer[error]    // the last foreign-cluster refusal of a merge
	joinedOnce atomic.Bool              // the first join after the start is done
	fatal      chan error               // see Fatal
}

// New returns a cluster for cfg. It starts nothing: call Start.
func New(cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Cluster{
		cfg:  cfg,
		log:  cfg.Logger.With("component", "cluster"),
		node: cfg.Node,
		self: meta{
			RaftAddr: cfg.RaftAddr,
			APIAddr:  cfg.APIAddr,
			Version:  cfg.Version,
			Protocol: fsm.ProtocolVersion,
			Expect:   cfg.BootstrapExpect,
		},
		members:   make(map[string]*member),
		fatal:     make(chan error, 1),
		wake:      make(chan struct{}, 1),
		peersWake: make(chan struct{}, 1),
		stop:      make(chan struct{}),
	}, nil
}

// Bind binds the gossip port, TCP and UDP. Start calls it when it has not
// been called; a caller that binds every port first learns of a busy port
// before anything touches the data dir.
func (c *Cluster) Bind() error {
	if c.transport != nil {
		return nil
	}
	host, portStr, _ := net.SplitHostPort(c.cfg.GossipAddr)
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("gossip addr %s: bad port %q", c.cfg.GossipAddr, portStr)
	}
	t, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{host},
		BindPort:  port,
		Logger:    newMemberlistLogger(c.cfg.Logger.With("component", "gossip")),
	})
	if err != nil {
		return fmt.Errorf("listen on gossip addr %s: %w", c.cfg.GossipAddr, flatten(err))
	}
	c.transport = t
	return nil
}

// Fatal delivers an error after which this node cannot go on: its seeds
// belong to another cluster than its state.
func (c *Cluster) Fatal() <-chan error { return c.fatal }

// Start joins gossip and starts the background work: seeds, bootstrap and
// the leader's reconciliation.
func (c *Cluster) Start(ctx context.Context) error {
	c.self.HasState = c.node.HasState()
	c.self.Cluster = c.node.ClusterID()
	if err := c.Bind(); err != nil {
		return err
	}
	mc, err := c.memberlistConfig()
	if err != nil {
		return err
	}
	c.ml, err = memberlist.Create(mc)
	if err != nil {
		return fmt.Errorf("start gossip: %w", err)
	}
	c.wg.Add(4)
	go func() { defer c.wg.Done(); c.joinLoop() }()
	go func() { defer c.wg.Done(); c.bootstrapLoop() }()
	go func() { defer c.wg.Done(); c.leaderLoop() }()
	go func() { defer c.wg.Done(); c.stateLoop() }()
	c.log.Info("gossip started", "addr", c.cfg.GossipAddr, "seeds", c.cfg.Join, "encrypted", len(c.cfg.ClusterKey) > 0)
	return nil
}

func (c *Cluster) memberlistConfig() (*memberlist.Config, error) {
	mc := memberlist.DefaultLANConfig()
	if c.cfg.TimeScale < 1 {
		mc = memberlist.DefaultLocalConfig()
		// The local config retransmits too little for four or more nodes
		// to hear of a join or leave before the next push/pull.
		mc.RetransmitMult = 4
	}
	// Start has bound the transport (Bind), port 0 resolved to the one
	// the kernel chose.
	host, _, _ := net.SplitHostPort(c.cfg.GossipAddr)
	port := c.transport.GetAutoBindPort()
	mc.Name = c.node.ID()
	mc.Transport = c.transport
	mc.BindAddr, mc.BindPort, mc.AdvertisePort = host, port, port
	adv := c.cfg.AdvertiseHost
	if adv == "" {
		adv = host
	}
	ips, err := net.DefaultResolver.LookupIPAddr(context.Background(), adv)
	if err != nil || len(ips) == 0 {
		return nil, fmt.Errorf("resolve advertise host %q: %v", adv, err)
	}
	if ips[0].IP.IsUnspecified() {
		return nil, fmt.Errorf("advertise host %q: peers cannot dial an unspecified address", adv)
	}
	mc.AdvertiseAddr = ips[0].IP.String()
	c.advertiseIP, c.gossipPort = ips[0].IP, port
	if len(c.cfg.ClusterKey) > 0 {
		mc.SecretKey = c.cfg.ClusterKey
	}
	mc.Label = "pastenode"
	mc.DeadNodeReclaimTime = 30 * time.Second
	mc.Events = (*events)(c)
	mc.Ping = (*pings)(c)
	c.suspectAfter = 5 * mc.ProbeInterval
	mc.Delegate = (*delegate)(c)
	mc.Merge = (*mergeDelegate)(c)
	mc.Alive = (*mergeDelegate)(c)
	mc.Logger = newMemberlistLogger(c.cfg.Logger.With("component", "gossip"))
	return mc, nil
}

// Close leaves gossip gracefully and stops the background work.
func (c *Cluster) Close() error {
	var err error
	c.once.Do(func() {
		close(c.stop)
		if c.ml == nil && c.transport != nil {
			err = c.transport.Shutdown() // bound, never started
		}
		if c.ml != nil {
			c.leave()
			c.leaveMu.Lock()
			c.shutDown = true
			err = c.ml.Shutdown()
			c.leaveMu.Unlock()
		}
		c.wg.Wait()
	})
	return err
}

// leave tells the others that this node leaves on purpose, then leaves.
// Once Close has shut gossip down it does nothing.
func (c *Cluster) leave() {
	c.leaveMu.Lock()
	defer c.leaveMu.Unlock()
	if c.shutDown {
		return
	}
	c.setMeta(func(m *meta) { m.Leaving = true })
	if err := c.ml.Leave(2 * time.Second); err != nil {
		c.log.Warn("gossip leave", "err", err)
	}
}

// Join joins the gossip cluster of the seeds: an operator's explicit join.
// The leader then adds this node to Raft. A node whose state belongs to
// another cluster than the seeds' is refused with ErrForeignCluster, and a
// node an operator removed asks to be readmitted.
func (c *Cluster) Join(ctx context.Context, seeds []string) error {
	if err := c.node.Rejoin(); err != nil {
		return err
	}
	// What the seeds judge this node by must be current, not what the
	// last tick of stateLoop advertised: a cluster id learnt a moment ago
	// included.
	id, hasState, rejoin := c.node.ClusterID(), c.node.HasState(), c.node.Rejoining()
	c.setMeta(func(m *meta) { m.Cluster, m.HasState, m.Rejoin = id, hasState || m.HasState, rejoin })
	c.refused.Store(nil)
	n, err := c.ml.Join(seeds)
	if n == 0 {
		if r := c.refused.Load(); r != nil {
			return *r
		}
		return fmt.Errorf("%w %v: %v", ErrJoin, seeds, flatten(err))
	}
	c.log.Info("joined gossip", "seeds", seeds, "contacted", n)
	nudge(c.peersWake)
	return nil
}

// flatten makes one line of a multi-line error, such as memberlist's
// list of failed seeds.
func flatten(err error) error {
	if err == nil {
		return nil
	}
	s := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n\t* ", "; ")), " ")
	return errors.New(s)
}

// Members returns every node Raft or gossip knows, merged and sorted by
// id. Gossip is alive, suspect, dead, left, or unknown for a node only Raft
// knows; Suffrage is voter, nonvoter, or none for a node only gossip knows.
func (c *Cluster) Members() []pastenode.Member {
	servers, _ := c.node.Servers()
	c.mu.Lock()
	byID := map[string]*pastenode.Member{}
	get := func(id string) *pastenode.Member {
		m, ok := byID[id]
		if !ok {
			m = &pastenode.Member{ID: id, Gossip: "unknown", Suffrage: "none"}
			byID[id] = m
		}
		return m
	}
	inRaft := make(map[string]bool, len(servers))
	for _, s := range servers {
		inRaft[s.ID] = true
	}
	for id, g := range c.members {
		if (g.state == "left" || g.state == "dead") && !inRaft[id] {
			continue // gone, and not a member of the cluster: nothing to show
		}
		m := get(id)
		m.APIAddr, m.RaftAddr, m.GossipAddr, m.Gossip = g.meta.APIAddr, g.meta.RaftAddr, g.gossipAddr, g.state
		m.Unreachable = g.state == "dead" || g.state == "left"
		if g.state == "alive" && id != c.node.ID() && time.Since(g.lastAck) > c.suspectAfter {
			m.Gossip = "suspect"
		}
	}
	c.mu.Unlock()
	for _, s := range servers {
		m := get(s.ID)
		m.Suffrage, m.Leader = s.Suffrage, s.Leader
		m.Unreachable = m.Unreachable || s.Unreachable
		if m.RaftAddr == "" {
			m.RaftAddr = s.Addr
		}
	}
	out := make([]pastenode.Member, 0, len(byID))
	for _, m := range byID {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b pastenode.Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// MinProtocol returns the lowest command protocol among this node, the live
// gossip members, and the Raft servers as gossip last described them (a
// voter that is down now comes back with the version it had, unless it was
// upgraded meanwhile, which gossip then reports). A Raft server that gossip
// has not described since this process started (Raft opens before gossip
// joins) may run any version, so it counts as protocol 1. The node
// proposes no command type newer than that (node.SetPeerProtocol), so that
// an old follower never meets a command it cannot apply during a rolling
// upgrade.
func (c *Cluster) MinProtocol() int {
	servers, _ := c.node.Servers()
	inRaft := make(map[string]bool, len(servers))
	for _, s := range servers {
		inRaft[s.ID] = true
	}
	self := c.node.ID()
	c.mu.Lock()
	defer c.mu.Unlock()
	low := protocolOf(c.self)
	for id := range inRaft {
		if _, known := c.members[id]; !known && id != self {
			return 1
		}
	}
	for id, m := range c.members {
		if m.state == "alive" || inRaft[id] {
			low = min(low, protocolOf(m.meta))
		}
	}
	return low
}

func protocolOf(m meta) int {
	if m.Protocol == 0 {
		return 1
	}
	return m.Protocol
}

// setMeta changes this node's advertised metadata and gossips it.
//
// Updates are made one at a time (metaMu), so that the newest alive
// message gossip sends carries the newest metadata: two at once could
// take their incarnations in one order and their metadata in the other.
// Once this node has advertised that it leaves, it advertises nothing
// more, as the others tell a clean stop from a crash by that flag.
func (c *Cluster) setMeta(change func(*meta)) {
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	c.mu.Lock()
	before := c.self
	change(&c.self)
	changed := c.self != before
	c.mu.Unlock()
	if changed && !before.Leaving && c.ml != nil {
		if err := c.ml.UpdateNode(5 * time.Second); err != nil {
			c.log.Warn("gossip metadata update", "err", err)
		}
	}
}

// delegate gives memberlist this node's metadata.
type delegate Cluster

func (d *delegate) NodeMeta(limit int) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := msgpack.Marshal(&d.self)
	if err != nil || len(b) > limit {
		d.log.Error("node metadata does not fit", "bytes", len(b), "limit", limit, "err", err)
		return nil
	}
	return b
}

func (d *delegate) NotifyMsg([]byte)                           {}
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *delegate) LocalState(join bool) []byte                { return nil }
func (d *delegate) MergeRemoteState(buf []byte, join bool)     {}

// events records gossip changes. Memberlist calls it in order and waits for
// it, so it only updates the map and nudges the reconcile loop.
type events Cluster

func (e *events) NotifyJoin(n *memberlist.Node)   { e.record(n, "alive") }
func (e *events) NotifyUpdate(n *memberlist.Node) { e.record(n, "alive") }
func (e *events) NotifyLeave(n *memberlist.Node) {
	var m meta
	if msgpack.Unmarshal(n.Meta, &m) == nil && m.Leaving {
		e.record(n, "left")
		return
	}
	e.record(n, "dead")
}

func (e *events) record(n *memberlist.Node, state string) {
	var m meta
	if err := msgpack.Unmarshal(n.Meta, &m); err != nil {
		e.log.Warn("ignoring gossip member with unreadable metadata", "member", n.Name, "err", err)
		return
	}
	e.mu.Lock()
	e.members[n.Name] = &member{meta: m, gossipAddr: n.Address(), state: state, lastAck: time.Now()}
	e.mu.Unlock()
	nudge(e.wake)
	nudge(e.peersWake)
}

// pings records answered probes, from which Members tells suspect members.
type pings Cluster

func (p *pings) AckPayload() []byte { return nil }

func (p *pings) NotifyPingComplete(other *memberlist.Node, _ time.Duration, _ []byte) {
	p.mu.Lock()
	if m, ok := p.members[other.Name]; ok {
		m.lastAck = time.Now()
	}
	p.mu.Unlock()
}
