// Package node owns Raft: the log store, snapshots and transport, and the
// command vocabulary. Its typed writes (Create, Delete, Consume, RemoveNode)
// and the leader's expiry reaper are the only code that builds an
// fsm.Command, so this is the one place that turns "create this paste" into
// a replicated command. A node that is not the leader forwards writes to the
// leader over the internal RPC and waits until its own state machine has
// caught up, so that whoever asked reads their write at once. Reads are
// local while the node holds a read lease from the leader, and take a
// batched read index otherwise or on a miss (docs/CONSISTENCY.md).
package node

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/pastenode/pastenode/fsm"
)

// Errors returned by Node methods.
var (
	// ErrNoLeader means no leader could be reached in time: the write was not
	// applied. Retry later.
	ErrNoLeader = errors.New("no cluster leader: not enough nodes reachable")
	// ErrTimeout means a write was not confirmed in time although a leader
	// with a quorum was reachable: the cluster is busy, or this node is
	// slow to apply what was committed. Unlike after ErrNoLeader, the
	// write may still be applied, or may already be. Retry later.
	ErrTimeout = errors.New("write not confirmed in time: the cluster is busy")
	// ErrClosed means the node is shutting down.
	ErrClosed = errors.New("node is shutting down")
	// ErrNothingNew means a snapshot was asked for but nothing changed since
	// the last one.
	ErrNothingNew = errors.New("nothing new to snapshot")
	// ErrIDMismatch means the data directory belongs to another node id.
	ErrIDMismatch = errors.New("data directory belongs to another node id")
	// ErrOldPeer means a live member runs a version too old to apply the
	// command: upgrade every node first.
	ErrOldPeer = errors.New("a cluster member runs an older version that cannot apply this command; upgrade it first")

	errNotLeader = errors.New("not the leader")
)

// DefaultReadLease is Config.ReadLease when none is set.
const DefaultReadLease = 2 * time.Second

// Config configures a Node. Zero durations and sizes take the defaults.
type Config struct {
	ID              string
	DataDir         string
	RaftAddr        string // where to listen for Raft and internal RPC
	AdvertiseAddr   string // what peers dial; defaults to RaftAddr
	BootstrapExpect int    // 1: bootstrap alone at once; 0 or N>1: wait
	ClusterKey      []byte // nil, or 16, 24 or 32 bytes
	Logger          *slog.Logger
	// IDLength is the length of new paste ids: IDLen (0) or more, up to
	// MaxIDLen. Ids of any length stay readable, so a cluster may hold
	// pastes made under another setting.
	IDLength int

	// TimeScale multiplies every Raft timeout (Consul's raft_multiplier).
	// Tests use a fraction, slow or paused machines more than 1.
	TimeScale         float64
	CommitTimeout     time.Duration
	SnapshotInterval  time.Duration
	SnapshotThreshold uint64
	TrailingLogs      uint64
	SnapshotBytes     int64 // snapshot after this many bytes applied
	// PurgeAfter bounds how long the content of a deleted, burned or
	// expired paste stays in the store's files and snapshots (see purge).
	// Zero takes the default, DefaultPurgeAfter; negative: never purged
	// before compaction would reclaim it anyway.
	PurgeAfter time.Duration
	WriteHold  time.Duration // how long a write waits out an election
	// StorageReserve is the free space the data dir's file system keeps
	// for deletes, burns, expiry and Raft itself: creates are refused with
	// ErrStorageFull below it. Zero takes the default, 32 MiB; negative
	// turns the check off (creates are then refused only after a write
	// failed for want of space).
	StorageReserve int64
	// ReadLease is how long a read lease lets a node serve local hits
	// without asking the leader (docs/CONSISTENCY.md). A node cut off from
	// the quorum stops serving within it; a delete may wait that long
	// (and a tenth more) for a node that stopped answering.
	ReadLease time.Duration

	// MaxCommandBytes bounds a command, and the body of every internal
	// call: the API's largest paste plus its envelope (default 1 MiB plus
	// CommandEnvelope).
	MaxCommandBytes int64
	// IdleTimeout closes a Raft or internal-call connection on the Raft port
	// that sends nothing for this long (default 5 minutes).
	IdleTimeout time.Duration
	// InsecureCluster lets a node whose Raft address is not loopback run
	// without a ClusterKey: anyone who reaches the port can then write to
	// the log.
	InsecureCluster bool
	// AdminToken, if set, becomes the cluster's admin token should this
	// node be the one that gives the cluster its identity. Unset, that
	// node makes a random one.
	AdminToken string
}

// CommandEnvelope is what a command adds to the paste content it carries:
// title, language, ids, token hash and msgpack framing, with room to spare.
const CommandEnvelope = 64 << 10

// Validate checks c and changes nothing; New calls it, then fills in the
// defaults.
func (c *Config) Validate() error {
	if c.ID == "" {
		return errors.New("node id is empty")
	}
	if strings.ContainsAny(c.ID, " \t\n/") {
		return fmt.Errorf("node id %q: no spaces or slashes allowed", c.ID)
	}
	if c.DataDir == "" {
		return errors.New("data dir is empty")
	}
	if _, _, err := net.SplitHostPort(c.RaftAddr); err != nil {
		return fmt.Errorf("raft addr %q: %w", c.RaftAddr, err)
	}
	adv := c.AdvertiseAddr
	if adv == "" {
		adv = c.RaftAddr
	}
	host, port, err := net.SplitHostPort(adv)
	if err != nil {
		return fmt.Errorf("raft advertise addr %q: %w", adv, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("raft advertise addr %q: peers cannot dial it; set --advertise-host", adv)
	}
	if port == "0" {
		return fmt.Errorf("raft addr %q: a fixed port is needed, peers store it", adv)
	}
	if c.ReadLease < 0 || (c.ReadLease > 0 && c.ReadLease < 20*time.Millisecond) {
		return fmt.Errorf("read lease %s: must be at least 20ms", c.ReadLease)
	}
	if c.BootstrapExpect < 0 {
		return fmt.Errorf("bootstrap expect %d: must be 0 or more", c.BootstrapExpect)
	}
	if err := CheckIDLength(c.IDLength); err != nil {
		return err
	}
	if err := CheckClusterKey(c.ClusterKey); err != nil {
		return err
	}
	if len(c.ClusterKey) == 0 && !c.InsecureCluster && !IsLoopback(c.RaftAddr) {
		return fmt.Errorf("raft addr %s is not loopback: %w", c.RaftAddr, ErrNeedKey)
	}
	return nil
}

// withDefaults returns c with the advertise address, the logger and every
// zero duration and size filled in.
func (c Config) withDefaults() Config {
	if c.AdvertiseAddr == "" {
		c.AdvertiseAddr = c.RaftAddr
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.TimeScale <= 0 {
		c.TimeScale = 1
	}
	if c.CommitTimeout == 0 {
		c.CommitTimeout = 15 * time.Millisecond
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = 30 * time.Second
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = 4096
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = 1024
	}
	if c.SnapshotBytes == 0 {
		c.SnapshotBytes = 64 << 20
	}
	if c.PurgeAfter == 0 {
		c.PurgeAfter = DefaultPurgeAfter
	}
	if c.WriteHold == 0 {
		c.WriteHold = 7 * time.Second
	}
	if c.StorageReserve == 0 {
		c.StorageReserve = 32 << 20
	}
	c.StorageReserve = max(c.StorageReserve, 0)
	if c.ReadLease == 0 {
		c.ReadLease = DefaultReadLease
	}
	if c.MaxCommandBytes == 0 {
		c.MaxCommandBytes = 1<<20 + CommandEnvelope
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 5 * time.Minute
	}
	return c
}

// CheckClusterKey accepts no key, or an AES key of 16, 24 or 32 bytes: the
// same key encrypts gossip and derives the Raft port's TLS identity.
func CheckClusterKey(key []byte) error {
	switch len(key) {
	case 0, 16, 24, 32:
		return nil
	}
	return fmt.Errorf("cluster key is %d bytes, want 16, 24 or 32", len(key))
}

// Node is one member of the Raft cluster.
type Node struct {
	cfg    Config
	log    *slog.Logger
	fsm    *fsm.FSM
	hooks  *testHooks // nil outside tests
	raft   *raft.Raft
	snaps  snapshotFiles         // Raft's snapshot store, for install
	bolt   *raftboltdb.BoltStore // the stable store: term and vote
	wal    *logStore             // the log
	trans  *raft.NetworkTransport
	mux    *muxListener
	rpc    *http.Server
	client *http.Client
	// forwards coalesces the commands this node forwards to the leader;
	// local, those it applies as the leader.
	forwards *forwarder[applyReply]
	local    *forwarder[applied]

	storage *storageGuard

	notify      chan bool
	minProto    atomic.Pointer[func() int] // see SetPeerProtocol
	closing     atomic.Bool
	barrierTerm atomic.Uint64 // the term whose Barrier this leader passed
	unannounced atomic.Int64  // writes to announce not committed yet (announceCommit)
	lastSnapAt  atomic.Int64  // FSM.AppliedBytes at the last snapshot
	purging     purging       // snapshotLoop's alone
	// timeouts holds Raft's configured timeouts while campaignAlone has
	// them lowered.
	timeouts      atomic.Pointer[raft.ReloadableConfig]
	leaderChanges atomic.Uint64  // see LeaderChanges
	transport     *raftTransport // Raft's, which knows the peers that do not answer

	lease      leaseHolder  // the read lease this node holds
	grants     *leaseGrants // as leader, the leases it granted
	reads      *readIndexer
	startIndex atomic.Uint64 // the leader's read index learnt after Open
	caughtUp   atomic.Bool   // applied startIndex
	caughtUpCh chan struct{} // closed once caughtUp is set

	// The cluster's identity as this node knows it (identity.go).
	fileCluster atomic.Pointer[string] // the cluster id in the data dir
	adminToken  atomic.Pointer[string] // this node's copy of the admin token
	ownToken    atomic.Pointer[string] // the token it made at this start, if it made one
	removal     atomic.Int32           // inCluster, removedMarked or rejoining
	removedCh   chan struct{}          // closed when an operator removed this node
	abstain     atomic.Bool            // refuse votes: state lost, not caught up (raftTransport)

	stop        chan struct{}
	stopMetrics context.CancelFunc
	wg          sync.WaitGroup
}

// New returns a node for cfg. It starts nothing: call Open.
func New(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Node{
		cfg:        cfg,
		log:        cfg.Logger.With("component", "node"),
		fsm:        fsm.NewLogged(cfg.Logger.With("component", "fsm")),
		storage:    newStorageGuard(cfg.DataDir, cfg.StorageReserve, cfg.Logger.With("component", "storage")),
		notify:     make(chan bool, 16),
		stop:       make(chan struct{}),
		grants:     newLeaseGrants(cfg.ReadLease),
		caughtUpCh: make(chan struct{}),
		reads:      newReadIndexer(),
		removedCh:  make(chan struct{}),
	}, nil
}

// Raft returns the Raft instance. Nothing in pastenode drives Raft
// through it; tests use it to stop Raft abruptly, as a crash would.
func (n *Node) Raft() *raft.Raft { return n.raft }

// Stats returns the number of live pastes and their total content bytes,
// as this node has applied them.
func (n *Node) Stats() (count, bytes int64) { return n.fsm.Stats() }

// View returns a consistent view of the whole store as this node has
// applied it, for exports.
func (n *Node) View() fsm.View { return n.fsm.View() }

// ID returns the node id.
func (n *Node) ID() string { return n.cfg.ID }

// Listen binds the Raft port. Open calls it when it has not been called;
// a caller that binds every port first, as pastenode does, learns of a
// busy port before anything touches the data dir.
func (n *Node) Listen() error {
	if n.mux != nil {
		return nil
	}
	return n.listen(newHclog(n.cfg.Logger.With("component", "raft"), hclog.Warn))
}

// Open opens the stores, starts Raft and the internal RPC, and bootstraps a
// lone node when BootstrapExpect is 1 and there is no state yet.
func (n *Node) Open(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			n.closeResources()
		}
	}()
	if err := n.Listen(); err != nil {
		return err
	}
	if err := os.MkdirAll(n.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if err := checkNodeID(n.cfg.DataDir, n.cfg.ID); err != nil {
		return err
	}
	if err := n.loadIdentity(); err != nil {
		return err
	}
	defer recoverFault(n.cfg.DataDir, &err)()

	hlog := newHclog(n.cfg.Logger.With("component", "raft"), hclog.Warn)
	logs, snaps, err := n.openStores(hlog)
	if err != nil {
		return err
	}

	rc := n.raftConfig(hlog)
	rc.NoSnapshotRestoreOnStart = true
	has, err := raft.HasExistingState(logs, n.bolt, snaps)
	if err != nil {
		return fmt.Errorf("check raft state: %w", err)
	}
	n.transport = newRaftTransport(n.trans, n)
	n.snaps = snaps
	n.raft, err = raft.NewRaft(rc, n.raftFSM(), guardedLogs{logs, n.storage}, guardedStable{n.bolt, n.storage},
		guardedSnapshots{snaps, n.storage}, n.transport)
	if err != nil {
		return raftStartError(n.cfg.DataDir, err)
	}
	n.countLeaderChanges()
	n.abstain.Store(!has)
	if !has && n.cfg.BootstrapExpect == 1 {
		if err := n.Bootstrap([]raft.Server{n.self()}); err != nil {
			return err
		}
	}
	n.campaignAlone()

	metricsCtx, stopMetrics := context.WithCancel(context.Background())
	n.stopMetrics = stopMetrics
	n.wg.Add(9)
	go func() { defer n.wg.Done(); n.identityLoop() }()
	go func() { defer n.wg.Done(); n.bolt.RunMetrics(metricsCtx, 10*time.Second) }()
	go func() { defer n.wg.Done(); n.mux.serve() }()
	go func() { defer n.wg.Done(); _ = n.rpc.Serve(n.mux.rpc) }()
	go func() { defer n.wg.Done(); n.leaderLoop() }()
	go func() { defer n.wg.Done(); n.snapshotLoop() }()
	go func() { defer n.wg.Done(); n.leaseLoop() }()
	go func() { defer n.wg.Done(); n.readLoop() }()
	go func() { defer n.wg.Done(); n.catchUpAtStart() }()
	n.log.Info("raft started", "id", n.cfg.ID, "addr", n.cfg.AdvertiseAddr, "existing_state", has, "cluster_id", n.ClusterID())
	return nil
}

func (n *Node) listen(hlog hclog.Logger) error {
	ln, err := net.Listen("tcp", n.cfg.RaftAddr)
	if err != nil {
		return fmt.Errorf("listen on raft addr: %w", err)
	}
	var tlsConf *tls.Config
	if len(n.cfg.ClusterKey) > 0 {
		if tlsConf, err = clusterTLS(n.cfg.ClusterKey); err != nil {
			ln.Close()
			return err
		}
	}
	n.mux = newMux(ln, hostPortAddr(n.cfg.AdvertiseAddr), tlsConf, n.cfg.IdleTimeout)
	n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  streamLayer{n.mux.raft},
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  hlog,
		// No pipelined replication: in raft 1.7.3, when a follower answers
		// with a newer term or a failure while a pipelined send is under
		// way, the pipeline's goroutines wait on each other for good. The
		// leader then stops replicating to that follower (its heartbeats
		// go on, so no election mends it), and Raft's Shutdown never
		// returns: `make jepsen` saw SIGTERMs hang so. Batching already
		// sends a batch per round trip, and more requests in flight made
		// creates through a follower no faster.
		MaxRPCsInFlight: 1,
	})
	n.rpc = n.rpcServer()
	n.client = n.rpcClient()
	n.forwards = &forwarder[applyReply]{send: n.sendBatch, limit: n.cfg.MaxCommandBytes, hold: n.cfg.WriteHold}
	n.local = &forwarder[applied]{send: n.applyLocalBatch, limit: n.cfg.MaxCommandBytes, hold: n.cfg.WriteHold}
	return nil
}

func (n *Node) raftConfig(hlog hclog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(n.cfg.ID)
	rc.HeartbeatTimeout = n.scale(heartbeatTimeout)
	rc.ElectionTimeout = n.scale(heartbeatTimeout)
	rc.LeaderLeaseTimeout = n.scale(leaderLease)
	rc.CommitTimeout = n.cfg.CommitTimeout
	rc.BatchApplyCh = true
	rc.SnapshotInterval = n.cfg.SnapshotInterval
	rc.SnapshotThreshold = n.cfg.SnapshotThreshold
	rc.TrailingLogs = n.cfg.TrailingLogs
	rc.ShutdownOnRemove = false
	rc.NotifyCh = n.notify
	rc.Logger = hlog
	// Raft sends each replication timing twice, once with the peer as a
	// label and once with the peer in the metric's name; only the first
	// is kept, which halves the leader's samples per AppendEntries.
	rc.NoLegacyTelemetry = true
	return rc
}

// heartbeatTimeout is Raft's HeartbeatTimeout and ElectionTimeout before
// scaling: how long a follower waits to hear from a leader before it
// stands for election.
const heartbeatTimeout = time.Second

// leaderLease is Raft's LeaderLeaseTimeout before scaling: how long a
// leader that reaches no quorum keeps leading.
const leaderLease = 500 * time.Millisecond

// scale multiplies a Raft timeout by Config.TimeScale.
func (n *Node) scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * n.cfg.TimeScale)
}

func (n *Node) self() raft.Server {
	return raft.Server{
		Suffrage: raft.Voter,
		ID:       raft.ServerID(n.cfg.ID),
		Address:  raft.ServerAddress(n.cfg.AdvertiseAddr),
	}
}

// Bootstrap forms a new cluster of servers. Every node given the same list
// may call it; a node with existing state refuses (raft.ErrCantBootstrap),
// which Bootstrap treats as done.
func (n *Node) Bootstrap(servers []raft.Server) error {
	err := n.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
	if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if err == nil {
		n.abstain.Store(false) // a new cluster: no entry was ever acknowledged
		n.log.Info("bootstrapped cluster", "servers", len(servers))
	}
	return nil
}

// Close stops the node cleanly: a leader first hands leadership to another
// voter so the cluster needs no election timeout, a long log tail is
// snapshotted so the next start need not replay it (snapshotAtClose), then
// Raft stops and the files close. Everything acknowledged is already on
// disk.
func (n *Node) Close() error {
	if !n.closing.CompareAndSwap(false, true) {
		return nil
	}
	if n.raft != nil && n.raft.State() == raft.Leader && len(n.voters()) > 1 {
		if err := n.raft.LeadershipTransfer().Error(); err != nil {
			n.log.Warn("leadership transfer failed", "err", err)
		} else {
			n.log.Info("handed over leadership")
		}
	}
	close(n.stop)
	if n.forwards != nil {
		n.forwards.close()
		n.local.close()
	}
	if n.stopMetrics != nil {
		n.stopMetrics()
	}
	var errs []error
	if n.raft != nil {
		n.snapshotAtClose()
		if err := n.raft.Shutdown().Error(); err != nil {
			errs = append(errs, fmt.Errorf("raft shutdown: %w", err))
		}
	}
	n.closeResources()
	n.wg.Wait()
	return errors.Join(errs...)
}

func (n *Node) closeResources() {
	if n.rpc != nil {
		n.rpc.Close()
	}
	if n.client != nil {
		n.client.CloseIdleConnections()
	}
	if n.trans != nil {
		n.trans.Close()
	}
	if n.mux != nil {
		n.mux.close()
	}
	if n.wal != nil {
		n.wal.Close()
	}
	if n.bolt != nil {
		n.bolt.Close()
	}
}

// voters returns the voters of the latest Raft configuration.
func (n *Node) voters() []raft.ServerID {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	var v []raft.ServerID
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			v = append(v, s.ID)
		}
	}
	return v
}

// newRequestID returns a random id for a command's idempotency.
func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// hostPortAddr is a net.Addr that keeps a host name unresolved, so that
// peers store "node1:7000" and not an address that changes when a
// container restarts.
type hostPortAddr string

func (a hostPortAddr) Network() string { return "tcp" }
func (a hostPortAddr) String() string  { return string(a) }
