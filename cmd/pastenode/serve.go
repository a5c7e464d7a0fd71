package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	metricsprom "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pastenode/pastenode/api"
	"github.com/pastenode/pastenode/cluster"
	"github.com/pastenode/pastenode/internal/buildinfo"
	"github.com/pastenode/pastenode/mirror"
	"github.com/pastenode/pastenode/node"
	"github.com/pastenode/pastenode/ui"
)

// serve runs a node until ctx ends, then stops it cleanly: the HTTP server
// drains, a leader hands over leadership, Raft shuts down and files close.
// It also ends when an operator removed the node (errRemoved) or its seeds
// belong to another cluster.
//
// Every port is bound before the data dir is opened: a busy or bad
// address is one line and a non-zero exit, and leaves the data dir as it
// was (a data dir bootstrapped by a start that then failed would form a
// cluster of its own).
func serve(ctx context.Context, c *config, log *slog.Logger) error {
	if c.InsecureCluster && len(c.ClusterKey) == 0 {
		log.Warn("--insecure-cluster: node-to-node traffic is neither authenticated nor encrypted; " +
			"anyone who reaches the raft or gossip port can read every paste and write to the cluster")
	}
	n, cl, ln, err := bindPorts(c, log)
	if err != nil {
		return err
	}
	defer ln.Close()
	defer func() {
		if err := n.Close(); err != nil {
			log.Error("close node", "err", err)
		}
	}()

	tuneGC()
	// The start rebuilds the store from the snapshot and the log: the
	// collector gets the headroom of an export meanwhile (gc.go).
	releaseHeadroom := holdHeadroom()
	if err := n.Open(ctx); err != nil {
		releaseHeadroom()
		cl.Close()
		return err
	}
	go func() {
		select {
		case <-n.CaughtUp():
		case <-ctx.Done():
		case <-time.After(startHeadroomFor):
		}
		releaseHeadroom()
	}()
	if n.WasRemoved() {
		log.Warn(node.ErrRemoved.Error()+"; it stays out until `pastectl join` on it", "cluster_id", n.ClusterID())
	}

	n.SetPeerProtocol(cl.MinProtocol)
	if err := cl.Start(ctx); err != nil {
		return err
	}
	// Leave gossip before Raft stops (deferred calls run last first).
	defer func() {
		if err := cl.Close(); err != nil {
			log.Warn("leave gossip", "err", err)
		}
	}()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		select {
		case <-n.RemovedCh():
			stop(errRemoved)
		case err := <-cl.Fatal():
			stop(err)
		case <-ctx.Done():
		}
	}()
	err = serveHTTP(ctx, c, n, cl, ln, log)
	if cause := context.Cause(ctx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// bindPorts makes the node and its gossip and binds the HTTP, Raft and
// gossip ports, in that order; on failure it releases what it bound.
func bindPorts(c *config, log *slog.Logger) (*node.Node, *cluster.Cluster, net.Listener, error) {
	n, err := node.New(nodeConfig(c, log))
	if err != nil {
		return nil, nil, nil, usageError{err}
	}
	cl, err := cluster.New(clusterConfig(c, n, log))
	if err != nil {
		return nil, nil, nil, usageError{err}
	}
	ln, err := publicLimits.listen(c.HTTPAddr)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listen on http addr: %w", err)
	}
	if err := n.Listen(); err != nil {
		ln.Close()
		return nil, nil, nil, err
	}
	if err := cl.Bind(); err != nil {
		n.Close()
		ln.Close()
		return nil, nil, nil, err
	}
	return n, cl, ln, nil
}

// serveHTTP serves the API of n and cl on ln until ctx ends.
func serveHTTP(ctx context.Context, c *config, n *node.Node, cl *cluster.Cluster, ln net.Listener, log *slog.Logger) error {
	if c.AdminToken == "" {
		log.Info("admin token: the cluster's", "file", n.AdminTokenFile(), "hint", "pastectl --data-dir "+c.DataDir+" reads it")
	}
	apiServer, err := newAPIServer(c, n, cl, log)
	if err != nil {
		return err
	}
	srv, err := newHTTPServerFor(c, apiServer.Handler(), log)
	if err != nil {
		return err
	}
	ln = newConnLimitListener(ln, c.MaxConnsPerIP, apiServer.Trusted)
	if err := n.RecordServing(ln.Addr(), srv.TLSConfig != nil, c.BasePath); err != nil {
		return err
	}
	log.Info("serving", "http", ln.Addr().String(), "tls", c.TLSCert != "", "node_id", c.NodeID, "data_dir", c.DataDir,
		"cluster_id", n.ClusterID(), "rate_limit", c.RateLimit, "max_store_bytes", c.MaxStoreBytes, "max_conns_per_ip", c.MaxConnsPerIP)
	if srv.TLSConfig != nil {
		return serveUntil(ctx, srv, ln, log)
	}
	return serveFrontUntil(ctx, publicLimits.newFront(srv, apiServer.ServeFast, apiServer.FastStarts(), log), ln, log)
}

// errRemoved ends a node that an operator removed from its cluster; the
// process exits with exitRemoved.
var errRemoved = fmt.Errorf("%w: stopping; a restart keeps it out until `pastectl join SEED` on it", node.ErrRemoved)

// nodeConfig is the Raft node the flags describe.
func nodeConfig(c *config, log *slog.Logger) node.Config {
	return node.Config{
		ID:              c.NodeID,
		DataDir:         c.DataDir,
		RaftAddr:        c.RaftAddr,
		AdvertiseAddr:   net.JoinHostPort(c.AdvertiseHost, portOf(c.RaftAddr)),
		BootstrapExpect: c.BootstrapExpect,
		ClusterKey:      c.ClusterKey,
		InsecureCluster: c.InsecureCluster,
		MaxCommandBytes: c.MaxPasteSize + node.CommandEnvelope,
		Logger:          log,
		TimeScale:       c.TimeScale,
		StorageReserve:  c.StorageReserve,
		PurgeAfter:      purgeAfter(c.PurgeAfter),
		ReadLease:       c.ReadLease,
		IDLength:        c.IDLength,
		AdminToken:      c.AdminToken,
	}
}

// clusterConfig is the gossip membership the flags describe, around n.
func clusterConfig(c *config, n *node.Node, log *slog.Logger) cluster.Config {
	return cluster.Config{
		Node:            n,
		GossipAddr:      c.GossipAddr,
		AdvertiseHost:   c.AdvertiseHost,
		Join:            c.Join,
		ClusterKey:      c.ClusterKey,
		InsecureCluster: c.InsecureCluster,
		BootstrapExpect: c.BootstrapExpect,
		RaftAddr:        net.JoinHostPort(c.AdvertiseHost, portOf(c.RaftAddr)),
		APIAddr:         net.JoinHostPort(c.AdvertiseHost, portOf(c.HTTPAddr)),
		DataDir:         c.DataDir,
		Version:         buildinfo.Read().String(),
		Logger:          log,
		TimeScale:       c.TimeScale,
	}
}

// exportCacheFile, in the data directory, keeps the pages of the last
// export for the next (mirror.PageCache).
const exportCacheFile = "export-cache.cdb"

// newAPIServer returns the HTTP API over n and cl, reporting Raft's
// metrics along with its own.
func newAPIServer(c *config, n *node.Node, cl *cluster.Cluster, log *slog.Logger) (*api.Server, error) {
	pages, err := ui.New(ui.Options{BasePath: c.BasePath})
	if err != nil {
		return nil, err
	}
	s, err := api.NewServer(api.Config{
		Store:          n,
		Cluster:        cl,
		UI:             pages,
		Logger:         log,
		Version:        buildinfo.Read().String(),
		PublicURL:      c.PublicURL,
		MaxPasteSize:   c.MaxPasteSize,
		MaxExpire:      c.MaxExpire,
		AdminToken:     c.AdminToken,
		IsClusterToken: n.IsAdminToken,
		RateLimit:      c.RateLimit,
		MaxStoreBytes:  c.MaxStoreBytes,
		TrustedProxies: c.TrustedProxies,
		// Raft's election timeout is a second, scaled; two rounds.
		NoQuorumWait: time.Duration(2 * float64(time.Second) * c.TimeScale),

		CreateTokensFile: c.CreateTokens,
		// The old pastebins' --uri-prefix and default expiry.
		BasePath:      c.BasePath,
		DefaultExpire: c.DefaultExpire,
		ExportStarted: holdHeadroom,
		ExportCache:   mirror.NewPageCache(filepath.Join(c.DataDir, exportCacheFile), log, n.HasRoom),
	})
	if err != nil {
		return nil, usageError{err}
	}
	if err := exportRaftMetrics(s.Registry()); err != nil {
		return nil, err
	}
	if err := registerNodeMetrics(s.Registry(), n, cl, c.DataDir); err != nil {
		return nil, err
	}
	return s, nil
}

// newHTTPServerFor returns the server for h, with TLS from --tls-cert and
// --tls-key when they are set.
func newHTTPServerFor(c *config, h http.Handler, log *slog.Logger) (*http.Server, error) {
	srv := publicLimits.server(h, log)
	if c.TLSCert != "" {
		certs := &certReloader{certFile: c.TLSCert, keyFile: c.TLSKey}
		if _, err := certs.get(nil); err != nil {
			return nil, err
		}
		publicLimits.withTLS(srv, &tls.Config{GetCertificate: certs.get, MinVersion: tls.VersionTLS12})
	}
	return srv, nil
}

// exportRaftMetrics sends hashicorp/raft's and raft-boltdb's metrics
// (commit time, FSM apply, last contact, the bolt freelist gauges) to reg,
// but those of raftBlocked.
func exportRaftMetrics(reg prometheus.Registerer) error {
	sink, err := metricsprom.NewPrometheusSinkFrom(metricsprom.PrometheusOpts{
		Registerer: reg,
		Expiration: time.Minute,
	})
	if err != nil {
		return fmt.Errorf("raft metrics: %w", err)
	}
	conf := metrics.DefaultConfig("pastenode")
	conf.EnableHostname = false
	conf.EnableRuntimeMetrics = false // client_golang reports those
	for _, p := range raftBlocked {
		conf.BlockedPrefixes = append(conf.BlockedPrefixes, conf.ServiceName+"."+p)
	}
	_, err = metrics.NewGlobal(conf, sink)
	return err
}

// raftBlocked are the prefixes of the Raft metrics a node does not export.
// raft.net is the transport's four timings of every RPC it serves (reading
// its type, decoding it, waiting for the Raft loop, answering): each is a
// summary whose every sample takes a lock and updates its quantile streams,
// and under creates through a follower those samples were a visible share
// of a follower's CPU. Raft's own timing of the same RPCs
// (raft.rpc.appendEntries and its storeLogs and processLogs) and
// thread_main_saturation still tell how busy a follower is.
var raftBlocked = []string{"raft.net."}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// certReloader serves the certificate in certFile and keyFile, loading it
// again when either file changes, so renewed certificates need no restart.
type certReloader struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime time.Time
	checked time.Time
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cert != nil && time.Since(r.checked) < 5*time.Second {
		return r.cert, nil
	}
	r.checked = time.Now()
	var latest time.Time
	for _, f := range []string{r.certFile, r.keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			if r.cert != nil {
				return r.cert, nil // keep serving the last good one
			}
			return nil, fmt.Errorf("tls: %w", err)
		}
		if st.ModTime().After(latest) {
			latest = st.ModTime()
		}
	}
	if r.cert != nil && !latest.After(r.modTime) {
		return r.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		if r.cert != nil {
			return r.cert, nil
		}
		return nil, fmt.Errorf("tls: load key pair: %w", err)
	}
	r.cert, r.modTime = &cert, latest
	return r.cert, nil
}

// purgeAfter is node.Config.PurgeAfter for the --purge-after flag, whose
// 0 means off.
func purgeAfter(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
