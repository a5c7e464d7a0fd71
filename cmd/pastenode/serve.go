package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	metricsprom "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pastenode/pastenode/api"
	"github.com/pastenode/pastenode/cluster"
	"github.com/pastenode/pastenode/node"
	"github.com/pastenode/pastenode/ui"
)

// serve runs a node until ctx ends, then stops it cleanly: the HTTP server
// drains, a leader hands over leadership, Raft shuts down and files close.
func serve(ctx context.Context, c *config, log *slog.Logger) error {
	raftPort := portOf(c.RaftAddr)
	n, err := node.New(node.Config{
		ID:              c.NodeID,
		DataDir:         c.DataDir,
		RaftAddr:        c.RaftAddr,
		AdvertiseAddr:   net.JoinHostPort(c.AdvertiseHost, raftPort),
		BootstrapExpect: c.BootstrapExpect,
		ClusterKey:      c.ClusterKey,
		Logger:          log,
		TimeScale:       c.TimeScale,
	})
	if err != nil {
		return usageError{err}
	}
	if err := n.Open(ctx); err != nil {
		return err
	}
	defer func() {
		if err := n.Close(); err != nil {
			log.Error("close node", "err", err)
		}
	}()

	httpPort := portOf(c.HTTPAddr)
	cl, err := cluster.New(cluster.Config{
		Node:            n,
		GossipAddr:      c.GossipAddr,
		AdvertiseHost:   c.AdvertiseHost,
		Join:            c.Join,
		ClusterKey:      c.ClusterKey,
		BootstrapExpect: c.BootstrapExpect,
		RaftAddr:        net.JoinHostPort(c.AdvertiseHost, raftPort),
		APIAddr:         net.JoinHostPort(c.AdvertiseHost, httpPort),
		DataDir:         c.DataDir,
		Version:         version,
		Logger:          log,
		TimeScale:       c.TimeScale,
	})
	if err != nil {
		return usageError{err}
	}
	if err := cl.Start(ctx); err != nil {
		return err
	}
	// Leave gossip before Raft stops (deferred calls run last first).
	defer func() {
		if err := cl.Close(); err != nil {
			log.Warn("leave gossip", "err", err)
		}
	}()

	pages, err := ui.New(ui.Options{})
	if err != nil {
		return err
	}
	apiServer, err := api.NewServer(api.Config{
		Store:        n,
		Cluster:      cl,
		UI:           pages,
		Logger:       log,
		Version:      version,
		PublicURL:    c.PublicURL,
		MaxPasteSize: c.MaxPasteSize,
		MaxExpire:    c.MaxExpire,
		AdminToken:   c.AdminToken,
		RateLimit:    c.RateLimit,
	})
	if err != nil {
		return usageError{err}
	}

	if err := exportRaftMetrics(apiServer.Registry()); err != nil {
		return err
	}
	if err := registerNodeMetrics(apiServer.Registry(), n, cl, c.DataDir); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", c.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on http addr: %w", err)
	}
	srv := newHTTPServer(apiServer.Handler(), log)
	if c.TLSCert != "" {
		certs := &certReloader{certFile: c.TLSCert, keyFile: c.TLSKey}
		if _, err := certs.get(nil); err != nil {
			ln.Close()
			return err
		}
		srv.TLSConfig = &tls.Config{GetCertificate: certs.get, MinVersion: tls.VersionTLS12}
	}
	log.Info("serving", "http", ln.Addr().String(), "tls", c.TLSCert != "", "node_id", c.NodeID, "data_dir", c.DataDir)

	return serveUntil(ctx, srv, ln, log)
}

// exportRaftMetrics sends hashicorp/raft's and raft-boltdb's metrics
// (commit time, FSM apply, last contact, the bolt freelist gauges) to reg.
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
	_, err = metrics.NewGlobal(conf, sink)
	return err
}

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
