package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
)

// TestReplicationTimingsOnce: the leader reports each AppendEntries to a
// peer once, with the peer as a label, and not again under a name that
// holds the peer's id (raft's legacy telemetry).
func TestReplicationTimingsOnce(t *testing.T) {
	sink := metrics.NewInmemSink(time.Hour, time.Hour)
	conf := metrics.DefaultConfig("")
	conf.EnableHostname = false
	conf.EnableRuntimeMetrics = false
	if _, err := metrics.NewGlobal(conf, sink); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { metrics.NewGlobal(conf, &metrics.BlackholeSink{}) })
	nodes := openCluster(t, 3)
	createOn(t, nodes[0], "replicated", nodes...)
	waitUntil(t, 5*time.Second, "a labelled replication timing", func() error {
		for _, iv := range sink.Data() {
			iv.RLock()
			for name := range iv.Samples {
				if strings.HasPrefix(name, "raft.replication.appendEntries.rpc;") {
					iv.RUnlock()
					return nil
				}
			}
			iv.RUnlock()
		}
		return fmt.Errorf("none yet")
	})
	for _, iv := range sink.Data() {
		iv.RLock()
		for name := range iv.Samples {
			for _, n := range nodes {
				if strings.HasSuffix(name, "."+n.ID()) {
					t.Errorf("timing %q names the peer", name)
				}
			}
		}
		iv.RUnlock()
	}
}
