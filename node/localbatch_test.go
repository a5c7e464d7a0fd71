package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/pastenode/pastenode/fsm"
)

// TestLeaderBatchesItsOwnCreates: creates that a leader's own clients send
// at the same time go to the log together, a few entries for many (which
// a restart then replays quickly), and each returns its own paste.
func TestLeaderBatchesItsOwnCreates(t *testing.T) {
	nodes := openCluster(t, 3)
	leader, _ := leaderOf(t, nodes)
	first, err := leader.wal.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	const count = 64
	var wg sync.WaitGroup
	errs := make(chan error, count)
	for i := range count {
		wg.Go(func() {
			content := fmt.Sprintf("local %d", i)
			p, err := leader.Create(context.Background(), CreateRequest{Content: []byte(content)})
			if err == nil && string(p.Content) != content {
				err = fmt.Errorf("create %d returned a paste of content %q", i, p.Content)
			}
			if err == nil {
				if got, ok := leader.fsm.Get(p.ID, time.Now()); !ok || string(got.Content) != content {
					err = fmt.Errorf("paste %s of create %d does not read back", p.ID, i)
				}
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	last, err := leader.wal.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	var entries, batches int
	for i := first + 1; i <= last; i++ {
		var l raft.Log
		if err := leader.wal.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		entries++
		if cmd, err := fsm.Decode(l.Data); err == nil && cmd.Type == fsm.TypeBatch {
			batches++
		}
	}
	if entries > count/4 || batches == 0 {
		t.Fatalf("%d concurrent creates took %d log entries, %d of them batches; want a few batches", count, entries, batches)
	}
	if got, _ := leader.Stats(); got != count {
		t.Fatalf("%d pastes, want %d", got, count)
	}
}

// TestCloseClosesTheForwarders: once the node is closed, neither its
// forwarder to the leader nor its own batcher takes a command.
func TestCloseClosesTheForwarders(t *testing.T) {
	n := openNode(t)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.forwards.forward(context.Background(), []byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("forwarding after Close: err = %v, want ErrClosed", err)
	}
	if _, err := n.local.forward(context.Background(), []byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("batching after Close: err = %v, want ErrClosed", err)
	}
}
