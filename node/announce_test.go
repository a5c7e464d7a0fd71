package node

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/pastenode/pastenode/fsm"
)

// TestForwardedWritesAnnounceTheirCommit: with a CommitTimeout far longer
// than any write takes, a follower still reads a paste it just forwarded
// the create of, and answers the delete it forwards, at once: the leader
// announces each commit that a follower waits for (announceCommit) instead
// of leaving it to the next AppendEntries, which hashicorp/raft would send
// only after CommitTimeout with no other write. (The read takes the read
// index, whose budget of a second is shorter than the timeout.)
func TestForwardedWritesAnnounceTheirCommit(t *testing.T) {
	const commitTimeout = 3 * time.Second
	nodes := openCluster(t, 3, func(c *Config) { c.CommitTimeout = commitTimeout })
	_, followers := leaderOf(t, nodes)
	from := followers[0]
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout/3)
		start := time.Now()
		p, err := from.Create(ctx, CreateRequest{Content: []byte("announced"), DeleteToken: "tok"})
		if err == nil {
			var got *fsm.Paste
			if got, err = from.Read(ctx, p.ID, false); err == nil && string(got.Content) != "announced" {
				err = fmt.Errorf("read back %q", got.Content)
			}
		}
		if err == nil {
			err = from.Delete(ctx, p.ID, "tok", false)
		}
		cancel()
		if err != nil {
			t.Fatalf("write %d through %s, %s after it began: %v (CommitTimeout %s)", i, from.ID(), time.Since(start), err, commitTimeout)
		}
	}
}

// TestReadsAnnounceTheCommitTheyNeed: with a CommitTimeout far longer
// than any read may wait, a paste created on the leader, or through one
// follower, reads at once on the other nodes: a follower asking for the
// read index tells the leader the commit index it knows of, and the
// leader, seeing it behind, announces its commit (handleReadIndex).
func TestReadsAnnounceTheCommitTheyNeed(t *testing.T) {
	const commitTimeout = 3 * time.Second
	nodes := openCluster(t, 3, func(c *Config) { c.CommitTimeout = commitTimeout })
	leader, followers := leaderOf(t, nodes)
	for i, pair := range [][2]*Node{{leader, followers[0]}, {leader, followers[1]}, {followers[0], followers[1]}, {followers[1], leader}} {
		from, to := pair[0], pair[1]
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout/3)
		start := time.Now()
		content := fmt.Sprintf("create %d on %s", i, from.ID())
		p, err := from.Create(ctx, CreateRequest{Content: []byte(content)})
		if err == nil {
			var got *fsm.Paste
			if got, err = to.Read(ctx, p.ID, false); err == nil && string(got.Content) != content {
				err = fmt.Errorf("read back %q", got.Content)
			}
		}
		cancel()
		if err != nil {
			t.Fatalf("create %d on %s, read on %s, %s after it began: %v (CommitTimeout %s)", i, from.ID(), to.ID(), time.Since(start), err, commitTimeout)
		}
	}
}

// TestCreatesAppendNoBarriers: creates forwarded by a follower are not
// announced each (announces), so they append no barriers to the log; and
// reads on that follower append at most the one barrier that tells it of
// their commits, not one per read, whether they hit or miss.
func TestCreatesAppendNoBarriers(t *testing.T) {
	nodes := openCluster(t, 3, func(c *Config) { c.CommitTimeout = 3 * time.Second })
	leader, followers := leaderOf(t, nodes)
	from := followers[0]
	barriers := func(after uint64) (count int, last uint64) {
		t.Helper()
		last, err := leader.wal.LastIndex()
		if err != nil {
			t.Fatal(err)
		}
		for i := after + 1; i <= last; i++ {
			var l raft.Log
			if err := leader.wal.GetLog(i, &l); err != nil {
				t.Fatal(err)
			}
			if l.Type == raft.LogBarrier {
				count++
			}
		}
		return count, last
	}
	_, start := barriers(0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ids []string
	for i := range 10 {
		p, err := from.Create(ctx, CreateRequest{Content: fmt.Appendf(nil, "forwarded %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
		time.Sleep(3 * announceDelay) // past an announcement's delay, so that one per create would show
	}
	if n, _ := barriers(start); n != 0 {
		t.Fatalf("10 creates through %s appended %d barriers, want none", from.ID(), n)
	}
	// Each round of reads apart from the last by more than an
	// announcement's delay, so that one announcement per read would show.
	for range 3 {
		for _, id := range append(ids, "nosuchpaste") {
			if _, err := from.Read(ctx, id, false); err != nil && !errors.Is(err, fsm.ErrNotFound) {
				t.Fatalf("read %s on %s: %v", id, from.ID(), err)
			}
		}
		time.Sleep(3 * announceDelay)
	}
	if n, _ := barriers(start); n > 1 {
		t.Fatalf("33 reads on %s after its creates appended %d barriers, want at most 1", from.ID(), n)
	}
}
