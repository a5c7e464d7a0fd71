package main

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// rejoinDown is how long the follower is down while writes go on: long
// enough for hashicorp/raft's own backoff from a failing peer to reach
// seconds, which is what the row guards against.
const rejoinDown = 8 * time.Second

// rejoinRow is the seconds from a SIGKILLed follower's new start until it
// is ready and serves the newest paste, after rejoinDown of writes to the
// others, the median of b.rounds restarts (at most 3).
func (b *bench) rejoinRow(ctx context.Context, nodes []*pnode) (row, error) {
	r := row{figure: fmt.Sprintf("restarted follower: s from its start to ready and serving the newest paste, after %s down under writes", rejoinDown),
		peer: "-", ratio: -1, target: "<= 1.5 s"}
	var took []time.Duration
	for round := range min(b.rounds, 3) {
		down, err := b.follower(nodes)
		if err != nil {
			return r, err
		}
		var writer *pnode
		for _, n := range nodes {
			if n != down {
				writer = n
				break
			}
		}
		b.say("restarted follower: round %d, %s down", round+1, down.name)
		b.procs.kill(down.cmd)
		var newest string
		for end := time.Now().Add(rejoinDown); time.Now().Before(end); {
			if newest, err = b.create(writer, b.content); err != nil {
				return r, fmt.Errorf("write while %s is down: %w", down.name, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		start := time.Now()
		if err := b.restart(down); err != nil {
			return r, err
		}
		if err := b.ready(ctx, down, time.Minute); err != nil {
			return r, err
		}
		// stale=true: served from the node's own copy, so that the figure
		// is when the node holds the paste, not a read index's wait.
		if err := waitFor(ctx, time.Minute, "the newest paste on "+down.name, httpOK(b.hc, down.url+"/raw/"+newest+"?stale=true")); err != nil {
			return r, err
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	med := took[len(took)/2]
	r.ours = fmt.Sprintf("%.2f s (runs %s)", med.Seconds(), formatDurations(took))
	r.met = metOrMiss(med <= 1500*time.Millisecond)
	return r, nil
}

func formatDurations(ds []time.Duration) string {
	s := ""
	for i, d := range ds {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.2f", d.Seconds())
	}
	return s
}
