package node

import (
	"io"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// testHooks are the seams through which tests play a slow, stuck or
// cut-off node, or choose the ids it draws. A node outside tests has none
// (Node.hooks is nil); a test gives a node its hooks before Open, so that
// the node's goroutines never see the pointer change.
type testHooks struct {
	// gate, while set, holds back every apply until it is closed.
	gate atomic.Pointer[chan struct{}]
	// leaseHold stops the lease renewals this node asks for.
	leaseHold atomic.Bool
	// newID, when set, draws paste ids in place of newPasteID.
	newID func() string
	// readRounds counts the read-index round trips completed.
	readRounds atomic.Uint64
}

// raftFSM is the state machine as Raft sees it: the node's own, or, with
// test hooks, the same behind their gate.
func (n *Node) raftFSM() raft.FSM {
	if n.hooks == nil {
		return installFSM{n.fsm, n}
	}
	return gatedFSM{n}
}

// leaseHeld reports whether a test stopped this node's lease renewals.
func (n *Node) leaseHeld() bool { return n.hooks != nil && n.hooks.leaseHold.Load() }

// drawID draws a new paste id.
func (n *Node) drawID() string {
	if n.hooks != nil && n.hooks.newID != nil {
		return n.hooks.newID()
	}
	return newPasteID(n.cfg.IDLength)
}

// gatedFSM is the node's FSM behind its test hooks' gate: every apply
// and restore first waits for the gate to open.
type gatedFSM struct{ n *Node }

var _ raft.BatchingFSM = gatedFSM{}

func (g gatedFSM) wait() {
	if ch := g.n.hooks.gate.Load(); ch != nil {
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
	return g.n.install(rc)
}
