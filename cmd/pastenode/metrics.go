package main

import (
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pastenode/pastenode/cluster"
	"github.com/pastenode/pastenode/internal/buildinfo"
	"github.com/pastenode/pastenode/node"
)

// registerNodeMetrics adds to reg what only the process that owns the node
// can report: leader changes, the voters, the peers as the leader sees
// them, and the files and disk under the data dir.
func registerNodeMetrics(reg prometheus.Registerer, n *node.Node, cl *cluster.Cluster, dataDir string) error {
	collectors := []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "pastenode_raft_leader_changes_total",
			Help: "Times this node learnt of a new Raft leader (itself included).",
		}, func() float64 { return float64(n.LeaderChanges()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pastenode_raft_voters",
			Help: "Voters in the Raft configuration.",
		}, func() float64 {
			servers, _ := n.Servers()
			v := 0
			for _, s := range servers {
				if s.Suffrage == "voter" {
					v++
				}
			}
			return float64(v)
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pastenode_raft_log_bytes",
			Help: "Bytes of the Raft log's segment files (wal/) in the data dir, as allocated ahead.",
		}, func() float64 { return float64(dirSize(filepath.Join(dataDir, "wal"))) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pastenode_raft_snapshot_bytes",
			Help: "Bytes of the Raft snapshots kept in the data dir (the newest two).",
		}, func() float64 { return float64(dirSize(filepath.Join(dataDir, "snapshots"))) }),
		buildInfoMetric(buildinfo.Read()),
		&peerCollector{cl: cl},
		&diskCollector{dir: dataDir},
	}
	collectors = append(collectors, storageMetrics(n)...)
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// buildInfoMetric is the usual constant 1 whose labels say which build
// runs: version is the string status shows, so that a dashboard and
// pastectl status name a build the same way.
func buildInfoMetric(in buildinfo.Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "pastenode_build_info",
		Help: "Always 1; the labels name the build: version (as in status), revision, and the Go version.",
		ConstLabels: prometheus.Labels{
			"version": in.String(), "revision": in.Revision, "goversion": in.GoVersion,
		},
	})
	g.Set(1)
	return g
}

func dirSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

var (
	peerHealthyDesc = prometheus.NewDesc("pastenode_raft_peer_healthy",
		"Leader only: 1 if autopilot finds the server healthy (in contact, not far behind).",
		[]string{"peer", "suffrage"}, nil)
	peerLagDesc = prometheus.NewDesc("pastenode_raft_peer_lag_entries",
		"Leader only: log entries the server is behind the leader's last index.",
		[]string{"peer", "suffrage"}, nil)
	peerContactDesc = prometheus.NewDesc("pastenode_raft_peer_last_contact_seconds",
		"Leader only: seconds since the leader last heard from the server.",
		[]string{"peer", "suffrage"}, nil)
	toleranceDesc = prometheus.NewDesc("pastenode_raft_failure_tolerance",
		"Leader only: voters that could fail without losing the quorum.", nil, nil)
)

// peerCollector reports the leader's autopilot view of every server. The
// other nodes report none of these series, so a query that sums or takes
// the max over instances reads the current leader's view.
type peerCollector struct{ cl *cluster.Cluster }

func (c *peerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- peerHealthyDesc
	ch <- peerLagDesc
	ch <- peerContactDesc
	ch <- toleranceDesc
}

func (c *peerCollector) Collect(ch chan<- prometheus.Metric) {
	peers, tolerance, ok := c.cl.Health()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(toleranceDesc, prometheus.GaugeValue, float64(tolerance))
	for _, p := range peers {
		suffrage := "nonvoter"
		if p.Voter {
			suffrage = "voter"
		}
		healthy := 0.0
		if p.Healthy {
			healthy = 1
		}
		ch <- prometheus.MustNewConstMetric(peerHealthyDesc, prometheus.GaugeValue, healthy, p.ID, suffrage)
		ch <- prometheus.MustNewConstMetric(peerLagDesc, prometheus.GaugeValue, float64(p.Lag), p.ID, suffrage)
		ch <- prometheus.MustNewConstMetric(peerContactDesc, prometheus.GaugeValue, p.LastContact.Seconds(), p.ID, suffrage)
	}
}

var (
	diskFreeDesc = prometheus.NewDesc("pastenode_disk_free_bytes",
		"Bytes available to the node on the file system of the data dir.", nil, nil)
	diskSizeDesc = prometheus.NewDesc("pastenode_disk_size_bytes",
		"Size of the file system of the data dir.", nil, nil)
)

// diskCollector reports the space on the data dir's file system, so that
// an alert can fire before writes start failing with 507.
type diskCollector struct{ dir string }

func (c *diskCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- diskFreeDesc
	ch <- diskSizeDesc
}

func (c *diskCollector) Collect(ch chan<- prometheus.Metric) {
	free, size, err := diskSpace(c.dir)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(diskFreeDesc, prometheus.GaugeValue, float64(free))
	ch <- prometheus.MustNewConstMetric(diskSizeDesc, prometheus.GaugeValue, float64(size))
}
