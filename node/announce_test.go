package node

import (
	"context"
	"testing"
	"time"
)

// TestForwardedWritesAnnounceTheirCommit: with a CommitTimeout far longer
// than any write takes, a follower still answers the creates and deletes
// it forwards at once: the leader announces each commit that a follower
// waits for (announceCommit) instead of leaving it to the next
// AppendEntries, which hashicorp/raft would send only after CommitTimeout
// with no other write.
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
			err = from.Delete(ctx, p.ID, "tok", false)
		}
		cancel()
		if err != nil {
			t.Fatalf("write %d through %s, %s after it began: %v (CommitTimeout %s)", i, from.ID(), time.Since(start), err, commitTimeout)
		}
	}
}
