package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pastenode/pastenode/node"
)

// storageMetrics are the node's storage guard figures: whether creates are
// refused for want of space (507), how many were, and how many writes of
// the Raft stores failed for want of space.
func storageMetrics(n *node.Node) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pastenode_storage_full",
			Help: "1 while this node refuses creates with 507 because its data dir is (nearly) full.",
		}, func() float64 {
			if n.Storage().Full {
				return 1
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "pastenode_storage_refused_total",
			Help: "Creates refused with 507 Insufficient Storage.",
		}, func() float64 { return float64(n.Storage().Refused) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "pastenode_storage_errors_total",
			Help: "Writes of the Raft log, stable or snapshot store that failed for want of space.",
		}, func() float64 { return float64(n.Storage().WriteErrors) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pastenode_storage_reserve_bytes",
			Help: "Free space the data dir keeps; creates are refused below it (--storage-reserve).",
		}, func() float64 { return float64(n.Storage().ReserveBytes) }),
	}
}
