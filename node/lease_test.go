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
	"github.com/pastenode/pastenode/internal/freeport"
)

// testLease is the read lease of the in-process clusters: short, so that
// the tests that wait one out stay quick, and far above the Raft timeouts
// at TimeScale 0.25.
const testLease = time.Second

// openCluster opens size voters on loopback, with the changes to their
// Config, bootstraps them together and waits until every node is ready and
// every follower holds a lease.
func openCluster(t testing.TB, size int, changes ...func(*Config)) []*Node {
	t.Helper()
	nodes := make([]*Node, size)
	servers := make([]raft.Server, size)
	for i := range nodes {
		cfg := Config{ID: fmt.Sprintf("n%d", i+1), DataDir: t.TempDir(), RaftAddr: freeport.Addr(t), TimeScale: 0.25, ReadLease: testLease}
		for _, c := range changes {
			c(&cfg)
		}
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		withHooks(n)
		if err := n.Open(context.Background()); err != nil {
			t.Fatalf("open n%d: %v", i+1, err)
		}
		nodes[i], servers[i] = n, n.self()
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			openGate(n)
			n.Close()
		}
	})
	for _, n := range nodes {
		if err := n.Bootstrap(servers); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 15*time.Second, "cluster ready with leases", func() error {
		for _, n := range nodes {
			if err := n.Ready(); err != nil {
				return fmt.Errorf("%s: %w", n.ID(), err)
			}
			if !n.leaseValid() {
				return fmt.Errorf("%s holds no lease", n.ID())
			}
		}
		return nil
	})
	// Past a new leader's wait for the leases of earlier terms, so that
	// the tests see only the waits they cause.
	waitUntil(t, 5*time.Second, "leader past its first lease", func() error {
		for _, n := range nodes {
			if n.IsLeader() && time.Since(n.leaderSince()) > testLease+leaseMargin(testLease) {
				return nil
			}
		}
		return errors.New("not yet")
	})
	return nodes
}

// leaderSince returns when the lease state saw n take office.
func (n *Node) leaderSince() time.Time {
	n.grants.mu.Lock()
	defer n.grants.mu.Unlock()
	return n.grants.termStart
}

// waitUntil polls cond until it returns nil or timeout passes.
func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func leaderOf(t testing.TB, nodes []*Node) (leader *Node, followers []*Node) {
	t.Helper()
	waitUntil(t, 10*time.Second, "a leader", func() error {
		leader, followers = nil, nil
		for _, n := range nodes {
			if n.closing.Load() {
				continue
			}
			if n.IsLeader() {
				leader = n
			} else {
				followers = append(followers, n)
			}
		}
		if leader == nil {
			return errors.New("none")
		}
		return nil
	})
	return leader, followers
}

// withHooks gives n, not yet open, its test hooks, and returns it.
func withHooks(n *Node) *Node {
	n.hooks = new(testHooks)
	return n
}

// closeGate holds back n's applies until openGate; n has its test hooks.
func closeGate(n *Node) {
	ch := make(chan struct{})
	n.hooks.gate.Store(&ch)
}

func openGate(n *Node) {
	if ch := n.hooks.gate.Swap(nil); ch != nil {
		close(*ch)
	}
}

// createOn creates a paste with delete token "t" and waits until every node
// has applied it.
func createOn(t testing.TB, n *Node, content string, nodes ...*Node) string {
	t.Helper()
	p, err := n.Create(context.Background(), CreateRequest{Content: []byte(content), DeleteToken: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range nodes {
		if err := o.fsm.WaitIndex(context.Background(), n.fsm.Index()); err != nil {
			t.Fatal(err)
		}
	}
	return p.ID
}

type deleteResult struct {
	err error
	at  time.Time
}

func deleteAsync(n *Node, id string) <-chan deleteResult {
	done := make(chan deleteResult, 1)
	go func() {
		err := n.Delete(context.Background(), id, "t", false)
		done <- deleteResult{err, time.Now()}
	}()
	return done
}

// TestDeleteWaitsForTheLeaseHolder: while a follower holding a lease has
// not applied a delete, the 204 waits; once it has, the delete returns at
// once, and at no moment does a node hold both the lease and the content.
func TestDeleteWaitsForTheLeaseHolder(t *testing.T) {
	nodes := openCluster(t, 3)
	leader, followers := leaderOf(t, nodes)
	f := followers[0]
	id := createOn(t, leader, "secret", nodes...)

	closeGate(f)
	done := deleteAsync(leader, id)
	hold := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(hold) {
		select {
		case r := <-done:
			t.Fatalf("delete returned (%v) while a lease holder had not applied it", r.err)
		default:
		}
		time.Sleep(5 * time.Millisecond)
	}
	released := time.Now()
	openGate(f)
	r := <-done
	if r.err != nil {
		t.Fatalf("delete: %v", r.err)
	}
	if _, has := f.fsm.Get(id, time.Now()); has && f.leaseValid() {
		t.Fatal("delete acknowledged while the follower holds a lease and the content")
	}
	if waited := r.at.Sub(released); waited > testLease/2 {
		t.Errorf("delete took %s after the follower could apply it; want well under the lease", waited)
	}
	for _, n := range nodes {
		if p, err := n.Read(context.Background(), id, false); !errors.Is(err, fsm.ErrNotFound) {
			t.Errorf("%s: Read after the 204 = %v, %v; want not found", n.ID(), p, err)
		}
	}
}

// TestMissAfterRemovalWaitsForLeaseHolders: a node that applied a delete
// which is not in effect yet (a lease holder has not applied it) does not
// answer 404 for it: that 404 would come before another node's rightful
// hit. It answers once the delete is in effect, or 503.
func TestMissAfterRemovalWaitsForLeaseHolders(t *testing.T) {
	nodes := openCluster(t, 3)
	leader, followers := leaderOf(t, nodes)
	slow, other := followers[0], followers[1]
	id := createOn(t, leader, "secret", nodes...)

	closeGate(slow)
	done := deleteAsync(leader, id)
	waitUntil(t, 5*time.Second, "the other follower applies the delete", func() error {
		if _, has := other.fsm.Get(id, time.Now()); has {
			return errors.New("not yet")
		}
		return nil
	})
	_, err := other.Read(context.Background(), id, false)
	_, slowHas := slow.fsm.Get(id, time.Now())
	if errors.Is(err, fsm.ErrNotFound) && slowHas && slow.leaseValid() {
		t.Fatal("404 while a lease holder still serves the paste")
	}
	if err != nil && !errors.Is(err, fsm.ErrNotFound) && !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Read = %v; want not found or ErrUnavailable", err)
	}
	openGate(slow)
	if r := <-done; r.err != nil {
		t.Fatalf("delete: %v", r.err)
	}
	if _, err := other.Read(context.Background(), id, false); !errors.Is(err, fsm.ErrNotFound) {
		t.Fatalf("Read after the 204 = %v; want not found", err)
	}
}

// TestDeleteWaitsOutAStuckLeaseHolder: a follower that cannot apply delays
// a delete by at most its lease, and once its lease has run out it serves
// neither the deleted paste (503, not the content) nor a false 404 for a
// paste created meanwhile (503 again); a stale read still answers.
func TestDeleteWaitsOutAStuckLeaseHolder(t *testing.T) {
	nodes := openCluster(t, 3)
	leader, followers := leaderOf(t, nodes)
	f := followers[0]
	id := createOn(t, leader, "secret", nodes...)

	closeGate(f)
	start := time.Now()
	r := <-deleteAsync(leader, id)
	if r.err != nil {
		t.Fatalf("delete: %v", r.err)
	}
	took := r.at.Sub(start)
	if max := testLease + leaseMargin(testLease) + 500*time.Millisecond; took > max {
		t.Errorf("delete took %s; want at most the lease and its margin (%s)", took, max)
	}
	if f.leaseValid() {
		t.Fatal("delete acknowledged while the stuck follower still holds a lease")
	}
	if p, err := f.Read(context.Background(), id, false); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("stuck follower: Read of the deleted paste = %v, %v; want ErrUnavailable", p, err)
	}
	if p, err := f.Read(context.Background(), id, true); err != nil || string(p.Content) != "secret" {
		t.Fatalf("stuck follower: stale Read = %v, %v; want its own copy", p, err)
	}
	p, err := leader.Create(context.Background(), CreateRequest{Content: []byte("new"), DeleteToken: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(context.Background(), p.ID, false); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("stuck follower: Read of a paste it has not applied: err = %v, want ErrUnavailable, never not found", err)
	}
	openGate(f)
	waitUntil(t, 5*time.Second, "follower serves again", func() error {
		_, err := f.Read(context.Background(), p.ID, false)
		return err
	})
}

// TestCutOffFollowerStopsServing: a follower that hears from no one (the
// others are gone, as after a partition or while it was paused) serves its
// hits only until its lease runs out by its own clock, then answers 503.
func TestCutOffFollowerStopsServing(t *testing.T) {
	nodes := openCluster(t, 3)
	leader, followers := leaderOf(t, nodes)
	f := followers[0]
	id := createOn(t, leader, "kept", nodes...)

	f.hooks.leaseHold.Store(true) // no renewal from here on
	cut := time.Now()
	for _, n := range nodes {
		if n != f {
			n.Raft().Shutdown() // as a crash: no hand-over
		}
	}
	var lastHit time.Time
	for {
		p, err := f.Read(context.Background(), id, false)
		if err == nil {
			if string(p.Content) != "kept" {
				t.Fatalf("Read = %q", p.Content)
			}
			lastHit = time.Now()
		} else if errors.Is(err, ErrUnavailable) {
			break
		} else {
			t.Fatalf("cut-off follower: Read = %v; want the content or ErrUnavailable", err)
		}
		if time.Since(cut) > 3*testLease {
			t.Fatalf("cut-off follower still serves %s after it was cut off", time.Since(cut))
		}
	}
	if served := lastHit.Sub(cut); served > testLease {
		t.Errorf("cut-off follower served hits for %s; want at most the lease %s", served, testLease)
	}
	if p, err := f.Read(context.Background(), id, false); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("after the lease: Read = %v, %v; want ErrUnavailable", p, err)
	}
	if _, err := f.Read(context.Background(), "nosuchpaste", false); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("after the lease: a miss = %v; want ErrUnavailable, never not found", err)
	}
}

// TestPausedFollowerAsksBeforeServing: a follower whose lease ran out while
// it was not renewing (paused: its monotonic clock ran on) does not serve a
// hit from its copy; it takes the read index first.
func TestPausedFollowerAsksBeforeServing(t *testing.T) {
	nodes := openCluster(t, 3)
	leader, followers := leaderOf(t, nodes)
	f := followers[0]
	id := createOn(t, leader, "kept", nodes...)

	f.hooks.leaseHold.Store(true)
	waitUntil(t, 2*testLease, "lease runs out", func() error {
		if f.leaseValid() {
			return errors.New("still valid")
		}
		return nil
	})
	before := f.hooks.readRounds.Load()
	if p, err := f.Read(context.Background(), id, false); err != nil || string(p.Content) != "kept" {
		t.Fatalf("Read = %v, %v", p, err)
	}
	if f.hooks.readRounds.Load() == before {
		t.Fatal("a hit without a lease was served without a read index")
	}
	f.hooks.leaseHold.Store(false)
	waitUntil(t, 2*testLease, "lease renewed", func() error {
		if !f.leaseValid() {
			return errors.New("no lease")
		}
		return nil
	})
	before = f.hooks.readRounds.Load()
	if _, err := f.Read(context.Background(), id, false); err != nil {
		t.Fatal(err)
	}
	if f.hooks.readRounds.Load() != before {
		t.Fatal("a hit under a lease took a read index round trip")
	}
}

// TestNewLeaderWaitsOutOldLeases: after an election, the new leader
// acknowledges no removal before a lease length and its margin have passed
// since it took office.
func TestNewLeaderWaitsOutOldLeases(t *testing.T) {
	nodes := openCluster(t, 3)
	old, _ := leaderOf(t, nodes)
	id := createOn(t, old, "secret", nodes...)
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	leader, _ := leaderOf(t, nodes)
	r := <-deleteAsync(leader, id)
	if r.err != nil {
		t.Fatalf("delete on the new leader: %v", r.err)
	}
	if since := r.at.Sub(leader.leaderSince()); since < testLease+leaseMargin(testLease) {
		t.Fatalf("new leader acknowledged a delete %s after taking office; want at least %s",
			since, testLease+leaseMargin(testLease))
	}
}

// TestMissesShareOneReadIndex: concurrent misses on a follower are served
// by a few read-index round trips, not one each, and all answer not found.
func TestMissesShareOneReadIndex(t *testing.T) {
	nodes := openCluster(t, 3)
	_, followers := leaderOf(t, nodes)
	f := followers[0]
	const misses = 64
	before := f.hooks.readRounds.Load()
	var wg sync.WaitGroup
	errs := make(chan error, misses)
	for i := range misses {
		wg.Go(func() {
			if _, err := f.Read(context.Background(), fmt.Sprintf("missing%03d", i), false); !errors.Is(err, fsm.ErrNotFound) {
				errs <- fmt.Errorf("miss %d: %v, want not found", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if rounds := f.hooks.readRounds.Load() - before; rounds > misses/4 {
		t.Errorf("%d misses took %d read-index round trips; want them batched", misses, rounds)
	}
}

// TestReadyWaitsForReplay: a restarted node is not ready until it has
// applied what the cluster had committed when it started (G5), and
// CaughtUp, which ends the start's extra collector headroom, closes then.
func TestReadyWaitsForReplay(t *testing.T) {
	n := openNode(t)
	var ids []string
	for i := range 20 {
		p, err := n.Create(context.Background(), CreateRequest{Content: []byte(fmt.Sprint(i)), DeleteToken: "t"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	// Stopped as a crash would, without the snapshot of a clean stop, so
	// that the restart replays the log.
	cfg := n.cfg
	if err := n.raft.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	n.Close()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	closeGate(withHooks(m))
	if err := m.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { openGate(m); m.Close() })
	hold := time.Now().Add(time.Second)
	for time.Now().Before(hold) {
		if err := m.Ready(); err == nil {
			t.Fatalf("ready with %d pastes applied of %d", func() int64 { c, _ := m.Stats(); return c }(), len(ids))
		}
		select {
		case <-m.CaughtUp():
			t.Fatal("CaughtUp closed before the replay")
		default:
		}
		time.Sleep(20 * time.Millisecond)
	}
	openGate(m)
	waitUntil(t, 10*time.Second, "ready after replay", m.Ready)
	select {
	case <-m.CaughtUp():
	default:
		t.Fatal("ready, but CaughtUp is still open")
	}
	for _, id := range ids {
		if _, has := m.fsm.Get(id, time.Now()); !has {
			t.Fatalf("ready, but %s is not applied", id)
		}
	}
}

// TestReadIndexSkipsEntriesTheFSMNeverSees: a barrier at the end of the log
// never reaches the FSM, so the read index is the last command below the
// commit index, and a read index round does not hang on it.
func TestReadIndexSkipsEntriesTheFSMNeverSees(t *testing.T) {
	n := openNode(t)
	createOn(t, n, "x")
	if err := n.raft.Barrier(time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	commit, applied := n.raft.CommitIndex(), n.fsm.Index()
	if commit <= applied {
		t.Fatalf("commit index %d, FSM index %d: want the barrier above the FSM", commit, applied)
	}
	if got := n.fsmIndexAt(commit); got != applied {
		t.Fatalf("fsmIndexAt(%d) = %d, want the last command %d", commit, got, applied)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if got, err := n.readIndex(ctx); err != nil || got != applied {
		t.Fatalf("readIndex = %d, %v; want %d", got, err, applied)
	}
}

// BenchmarkFollowerHit reads one paste on a follower under its lease: the
// cost of the lease check on the hot path, and proof that no hit takes a
// read-index round trip.
func BenchmarkFollowerHit(b *testing.B) {
	nodes := openCluster(b, 3)
	leader, followers := leaderOf(b, nodes)
	f := followers[0]
	id := createOn(b, leader, "kept", nodes...)
	before := f.hooks.readRounds.Load()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Read(ctx, id, false); err != nil {
			b.Fatal(err)
		}
	}
	if rounds := f.hooks.readRounds.Load() - before; rounds != 0 {
		b.Fatalf("%d read-index round trips for hits under a lease", rounds)
	}
}
