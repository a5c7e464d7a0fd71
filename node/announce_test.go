package node

import (
	"context"
	"fmt"
	"testing"
	"time"

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
