package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestRestartedFollowerReturnsAtOnce SIGKILLs a follower of three, keeps
// writing for 8 s, starts it again and prints how long it took from its
// start until it was ready and served the newest paste. make bench holds
// the target (the "restarted follower" row); the bound here only catches
// a return that waits out Raft's backoff from a failed peer, which reaches
// seconds after 8 s down.
func TestRestartedFollowerReturnsAtOnce(t *testing.T) {
	t.Parallel()
	nodes := startCluster(t, "rejoin", 3)
	leader, err := leaderOf(t, nodes)
	if err != nil {
		t.Fatal(err)
	}
	var down, writer *proc
	for _, p := range nodes {
		switch {
		case p.id == leader:
			writer = p
		case down == nil:
			down = p
		}
	}
	down.kill()
	var newest string
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		newest, _ = mustPost(t, writer.URL, []byte("written while a follower is down "+time.Now().String()))
	}
	start := time.Now()
	down.start()
	down.waitReady()
	eventually(t, 10*time.Second, "the newest paste on the restarted follower", func() error {
		code, _, err := getRaw(down.URL, newest+"?stale=true")
		if err == nil && code != 200 {
			err = fmt.Errorf("status %d", code)
		}
		return err
	})
	took := time.Since(start)
	t.Logf("restarted follower: %.2f s from its start to ready and serving the newest paste", took.Seconds())
	if took > 5*time.Second {
		t.Errorf("the restarted follower took %s: the leader backs off from it", took.Round(time.Millisecond))
	}
}
