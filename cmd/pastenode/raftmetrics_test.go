package main

import (
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
)

// TestRaftMetricsBlocked checks that the Raft metrics the node exports
// include the ones the dashboard and alerts use and leave out the
// transport's per-RPC timings (raftBlocked).
func TestRaftMetricsBlocked(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := exportRaftMetrics(reg); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Millisecond)
	metrics.MeasureSince([]string{"raft", "commitTime"}, start)
	metrics.MeasureSince([]string{"raft", "rpc", "appendEntries"}, start)
	metrics.MeasureSince([]string{"raft", "net", "getRPCType"}, start)
	metrics.MeasureSinceWithLabels([]string{"raft", "net", "rpcDecode"}, start, []metrics.Label{{Name: "rpcType", Value: "AppendEntries"}})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
	}
	for _, name := range []string{"pastenode_raft_commitTime", "pastenode_raft_rpc_appendEntries"} {
		if !got[name] {
			t.Errorf("%s is not exported; have %v", name, got)
		}
	}
	for _, name := range []string{"pastenode_raft_net_getRPCType", "pastenode_raft_net_rpcDecode"} {
		if got[name] {
			t.Errorf("%s is exported, though raftBlocked blocks it", name)
		}
	}
}
