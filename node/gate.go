package node

import (
	"io"

	"github.com/hashicorp/raft"
)

// gatedFSM is the FSM as Raft sees it: every apply first passes the node's
// gate, which is open (nil) except in tests that hold back one node's
// applies to play a slow or stuck node.
type gatedFSM struct{ n *Node }

var _ raft.BatchingFSM = gatedFSM{}

func (g gatedFSM) wait() {
	if ch := g.n.gate.Load(); ch != nil {
		<-*ch
	}
}

func (g gatedFSM) Apply(l *raft.Log) interface{} {
	g.wait()
	return g.n.fsm.Apply(l)
}

func (g gatedFSM) ApplyBatch(logs []*raft.Log) []interface{} {
	g.wait()
	return g.n.fsm.ApplyBatch(logs)
}

func (g gatedFSM) Snapshot() (raft.FSMSnapshot, error) { return g.n.fsm.Snapshot() }

func (g gatedFSM) Restore(rc io.ReadCloser) error {
	g.wait()
	return g.n.fsm.Restore(rc)
}
