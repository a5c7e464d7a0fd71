package jepsen

import (
	"context"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The fault kinds, injected in turn. wipe is a node that lost its disk:
// SIGKILLed, its data dir deleted, started again under the same id. It
// must not vote until it has caught up (it could help elect a leader that
// lacks what it acknowledged), nor be ready before.
var faultKinds = []string{"kill", "pause", "term", "partition", "wipe"}

// nemesis injects one fault at a time, the leader and a random node in turn,
// with a quiet gap between faults. Every fault is healed before the next.
type nemesis struct {
	c     *cluster
	rec   *recorder
	rng   *mathrand.Rand
	quiet time.Duration
	logf  func(format string, args ...any)

	mu     sync.Mutex
	counts map[string]int
	errs   []string
}

// run injects faults until ctx ends; the fault under way when it ends is
// still healed.
func (m *nemesis) run(ctx context.Context) {
	for k := 0; ; k++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(m.quiet + time.Duration(m.rng.Int64N(int64(m.quiet)))):
		}
		kind := faultKinds[k%len(faultKinds)]
		target, role := m.c.nodes[m.rng.IntN(len(m.c.nodes))], "random"
		if (k+k/len(faultKinds))%2 == 0 { // every kind hits the leader every other round
			if l := m.c.leader(); l != nil {
				target, role = l, "leader"
			}
		}
		at := time.Duration(m.rec.now())
		err := m.inject(kind, target)
		m.mu.Lock()
		m.counts[kind]++
		if err != nil {
			m.errs = append(m.errs, fmt.Sprintf("%s %s: %v", kind, target.id, err))
		}
		m.mu.Unlock()
		m.logf("nemesis %8.3fs %-9s %s (%s), healed at %.3fs", at.Seconds(), kind, target.id, role,
			time.Duration(m.rec.now()).Seconds())
	}
}

func (m *nemesis) jitter(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(m.rng.Int64N(int64(hi-lo)))
}

// inject applies one fault to nd and heals it.
func (m *nemesis) inject(kind string, nd *node) error {
	switch kind {
	case "kill", "wipe":
		nd.signal(syscall.SIGKILL)
		if !nd.wait(10 * time.Second) {
			return fmt.Errorf("still running 10s after SIGKILL")
		}
		if kind == "wipe" {
			if err := os.RemoveAll(nd.dataDir); err != nil {
				return err
			}
		}
		time.Sleep(m.jitter(0, time.Second)) // down for a moment, as a crash is
		return m.c.start(nd)
	case "pause":
		nd.signal(syscall.SIGSTOP)
		time.Sleep(m.jitter(3*time.Second, 5*time.Second))
		nd.signal(syscall.SIGCONT)
		return nil
	case "term":
		nd.signal(syscall.SIGTERM)
		if !nd.wait(20 * time.Second) {
			// The Go runtime prints every goroutine into the node's log
			// on SIGQUIT: where the stop hung.
			nd.signal(syscall.SIGQUIT)
			nd.wait(3 * time.Second)
			nd.signal(syscall.SIGKILL)
			nd.wait(10 * time.Second)
			m.c.start(nd)
			return fmt.Errorf("no clean stop within 20s of SIGTERM; killed")
		}
		return m.c.start(nd)
	case "partition":
		err := isolate(nd.i, len(m.c.nodes))
		time.Sleep(m.jitter(3*time.Second, 6*time.Second))
		if herr := heal(nd.i); herr != nil {
			return herr
		}
		return err
	}
	return fmt.Errorf("unknown fault %q", kind)
}

// summary is "kill=2 partition=1 ..." in a fixed order.
func (m *nemesis) summary() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var parts []string
	for _, k := range faultKinds {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m.counts[k]))
	}
	sort.Strings(m.errs)
	return strings.Join(parts, " ")
}
