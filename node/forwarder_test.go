package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pastenode/pastenode/fsm"
)

// fakeLeader is the forwarder's send for tests: it records every call,
// holds each until release (when set), and answers each command with a
// reply whose Msg is the command itself, or fails the call with err.
type fakeLeader struct {
	mu      sync.Mutex
	calls   [][][]byte
	started chan struct{} // receives once per call, if set
	release chan struct{} // a call returns once it can receive, if set
	err     error
}

func (l *fakeLeader) send(ctx context.Context, batch [][]byte) ([]applyReply, error) {
	l.mu.Lock()
	l.calls = append(l.calls, batch)
	l.mu.Unlock()
	if l.started != nil {
		l.started <- struct{}{}
	}
	if l.release != nil {
		select {
		case <-l.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if l.err != nil {
		return nil, l.err
	}
	replies := make([]applyReply, len(batch))
	for i, data := range batch {
		replies[i] = applyReply{Index: uint64(i + 1), Msg: string(data)}
	}
	return replies, nil
}

func (l *fakeLeader) callSizes() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sizes []int
	for _, c := range l.calls {
		sizes = append(sizes, len(c))
	}
	return sizes
}

type forwardResult struct {
	data  string
	reply applyReply
	err   error
}

// forwardAsync forwards each of cmds on a goroutine of its own.
func forwardAsync(ctx context.Context, f *forwarder[applyReply], cmds ...string) <-chan forwardResult {
	out := make(chan forwardResult, len(cmds))
	for _, c := range cmds {
		go func() {
			reply, err := f.forward(ctx, []byte(c))
			out <- forwardResult{c, reply, err}
		}()
	}
	return out
}

// busyForwarder returns a forwarder with a call in flight, held until
// close(leader.release): commands of ordinary size forwarded now queue
// behind it. The call's result comes on the channel returned.
func busyForwarder(t *testing.T, leader *fakeLeader, limit int64) (*forwarder[applyReply], <-chan forwardResult) {
	t.Helper()
	leader.started = make(chan struct{}, maxForwardBatch)
	leader.release = make(chan struct{})
	f := &forwarder[applyReply]{send: leader.send, limit: limit, hold: time.Minute}
	first := forwardAsync(context.Background(), f, "first")
	<-leader.started
	return f, first
}

// waitQueued waits until n commands wait in f's queue.
func waitQueued(t *testing.T, f *forwarder[applyReply], n int) {
	t.Helper()
	waitUntil(t, 5*time.Second, "commands queued", func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.queue) != n {
			return fmt.Errorf("%d queued, want %d", len(f.queue), n)
		}
		return nil
	})
}

func TestForwarderCoalescesWhileCallsAreInFlight(t *testing.T) {
	leader := &fakeLeader{}
	f, first := busyForwarder(t, leader, 1<<20)
	var later []string
	for i := range 10 {
		later = append(later, fmt.Sprintf("later-%d", i))
	}
	results := forwardAsync(context.Background(), f, later...)
	waitQueued(t, f, len(later))
	close(leader.release)
	for range 1 + len(later) {
		var r forwardResult
		select {
		case r = <-first:
		case r = <-results:
		}
		if r.err != nil || r.reply.Msg != r.data {
			t.Fatalf("forward(%q) = %+v, %v; want its own reply", r.data, r.reply, r.err)
		}
	}
	sizes := leader.callSizes()
	if len(sizes) != 2 || sizes[1] != len(later) {
		t.Fatalf("calls carried %v commands, want the first alone and one of %d", sizes, len(later))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.senders != 0 {
		t.Fatalf("%d senders left running with nothing queued", f.senders)
	}
}

func TestForwarderSplitsBatchesAtTheByteLimit(t *testing.T) {
	leader := &fakeLeader{}
	const limit = 100
	f, first := busyForwarder(t, leader, limit)
	cmds := []string{string(bytes.Repeat([]byte("a"), 60)), string(bytes.Repeat([]byte("b"), 60)),
		string(bytes.Repeat([]byte("c"), 30))}
	results := forwardAsync(context.Background(), f, cmds[0])
	waitQueued(t, f, 1)
	results2 := forwardAsync(context.Background(), f, cmds[1])
	waitQueued(t, f, 2)
	results3 := forwardAsync(context.Background(), f, cmds[2])
	waitQueued(t, f, 3)

	if _, err := f.forward(context.Background(), bytes.Repeat([]byte("x"), limit+1)); !errors.Is(err, fsm.ErrBadCommand) {
		t.Fatalf("a command over the limit: err = %v, want ErrBadCommand at once", err)
	}
	close(leader.release)
	<-first
	for _, ch := range []<-chan forwardResult{results, results2, results3} {
		if r := <-ch; r.err != nil {
			t.Fatalf("forward(%q): %v", r.data, r.err)
		}
	}
	leader.mu.Lock()
	defer leader.mu.Unlock()
	for _, call := range leader.calls {
		size := 0
		for _, c := range call {
			size += len(c)
		}
		if len(call) > 1 && size > limit {
			t.Fatalf("a call of %d commands carried %d bytes, over the limit %d", len(call), size, limit)
		}
	}
	if got := len(leader.calls); got != 3 {
		t.Fatalf("%d calls, want 3: the first, a, then b+c", got)
	}
}

func TestForwarderDropsCancelledCommands(t *testing.T) {
	leader := &fakeLeader{}
	f, first := busyForwarder(t, leader, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	gone := forwardAsync(ctx, f, "gone")
	waitQueued(t, f, 1)
	kept := forwardAsync(context.Background(), f, "kept")
	waitQueued(t, f, 2)
	cancel()
	if r := <-gone; !errors.Is(r.err, errUnreachable) || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled forward: err = %v, want errUnreachable wrapping context.Canceled", r.err)
	}
	close(leader.release)
	<-first
	if r := <-kept; r.err != nil || r.reply.Msg != "kept" {
		t.Fatalf("forward(kept) = %+v, %v", r.reply, r.err)
	}
	leader.mu.Lock()
	defer leader.mu.Unlock()
	for _, call := range leader.calls {
		for _, c := range call {
			if string(c) == "gone" {
				t.Fatal("a command whose caller left was sent to the leader")
			}
		}
	}
}

// TestForwarderEndsCallsWhenTheLeaderChanges: calls stuck at a leader that
// no longer is one end at the change, and the commands queued behind them
// go out in a new call, instead of all waiting for the stuck calls'
// deadlines.
func TestForwarderEndsCallsWhenTheLeaderChanges(t *testing.T) {
	leader := &fakeLeader{}
	f, first := busyForwarder(t, leader, 1<<20)
	queued := forwardAsync(context.Background(), f, "queued")
	waitQueued(t, f, 1)
	f.leaderChanged()
	if r := <-first; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the call in flight at the change: err = %v, want it cancelled", r.err)
	}
	<-leader.started // the queued command's call, at the new leader
	close(leader.release)
	if r := <-queued; r.err != nil || r.reply.Msg != "queued" {
		t.Fatalf("forward(queued) = %+v, %v", r.reply, r.err)
	}
}

// TestForwarderCloseEndsEverything: closing the node's forwarder ends the
// calls in flight at once, rather than at their commands' deadlines, and
// fails the commands queued behind them and every later one.
func TestForwarderCloseEndsEverything(t *testing.T) {
	leader := &fakeLeader{}
	f, first := busyForwarder(t, leader, 1<<20)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	queued := forwardAsync(ctx, f, "queued")
	waitQueued(t, f, 1)
	f.close()
	// The fake leader holds its calls until they are cancelled.
	recv := func(results <-chan forwardResult) forwardResult {
		select {
		case r := <-results:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("a command still waits 10s after close")
			return forwardResult{}
		}
	}
	if r := recv(first); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the call in flight at close: err = %v, want it cancelled", r.err)
	}
	if r := recv(queued); !errors.Is(r.err, ErrClosed) {
		t.Fatalf("a command queued at close: err = %v, want ErrClosed", r.err)
	}
	if _, err := f.forward(ctx, []byte("later")); !errors.Is(err, ErrClosed) {
		t.Fatalf("a command after close: err = %v, want ErrClosed", err)
	}
	// A batch taken just before close and sent after it is ended too.
	if f.callContext().Err() == nil {
		t.Fatal("a call that starts after close is not ended")
	}
	if sizes := leader.callSizes(); len(sizes) != 1 {
		t.Fatalf("calls made: %v, want only the one in flight at close", sizes)
	}
}

func TestForwarderFailsEveryCommandOfAFailedCall(t *testing.T) {
	tests := []struct {
		name string
		send func(context.Context, [][]byte) ([]applyReply, error)
		want error
	}{
		{"call fails", (&fakeLeader{err: errNotLeader}).send, errNotLeader},
		{"no replies", func(context.Context, [][]byte) ([]applyReply, error) { return nil, nil }, errUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &forwarder[applyReply]{send: tt.send, limit: 1 << 20, hold: time.Minute}
			results := forwardAsync(context.Background(), f, "a", "b", "c", "d", "e", "f")
			for range 6 {
				if r := <-results; !errors.Is(r.err, tt.want) {
					t.Fatalf("forward(%q): err = %v, want %v", r.data, r.err, tt.want)
				}
			}
		})
	}
}

// heavyLeader is a send that holds the calls carrying a heavy command
// until heavyDone is closed, answers the others at once, and records the
// most calls it had in flight at once and every call's commands.
type heavyLeader struct {
	heavyDone chan struct{}
	heavyIn   chan struct{} // receives when a heavy call arrives

	mu       sync.Mutex
	inFlight int
	most     int
	calls    [][]string
}

func (l *heavyLeader) send(ctx context.Context, batch [][]byte) ([]applyReply, error) {
	l.mu.Lock()
	l.inFlight++
	l.most = max(l.most, l.inFlight)
	var call []string
	heavy := false
	for _, c := range batch {
		heavy = heavy || len(c) >= heavyCommand
		call = append(call, string(c[:min(len(c), 8)]))
	}
	l.calls = append(l.calls, call)
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.inFlight--
		l.mu.Unlock()
	}()
	if heavy {
		l.heavyIn <- struct{}{}
		select {
		case <-l.heavyDone:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	} else {
		time.Sleep(time.Millisecond) // long enough for commands to pile up
	}
	replies := make([]applyReply, len(batch))
	for i, data := range batch {
		replies[i] = applyReply{Index: uint64(i + 1), Msg: string(data)}
	}
	return replies, nil
}

func (l *heavyLeader) mostInFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.most
}

// TestForwarderCallsInFlight: commands of ordinary size, however many
// come at once, go in at most maxForwardCalls calls at a time.
func TestForwarderCallsInFlight(t *testing.T) {
	leader := &heavyLeader{heavyIn: make(chan struct{}, 1), heavyDone: make(chan struct{})}
	f := &forwarder[applyReply]{send: leader.send, limit: 1 << 20, hold: time.Minute}
	var cmds []string
	for i := range 1000 {
		cmds = append(cmds, fmt.Sprintf("cmd-%d", i))
	}
	results := forwardAsync(context.Background(), f, cmds...)
	for range cmds {
		if r := <-results; r.err != nil || r.reply.Msg != r.data {
			t.Fatalf("forward(%q) = %+v, %v", r.data, r.reply, r.err)
		}
	}
	if most := leader.mostInFlight(); most > maxForwardCalls {
		t.Errorf("%d calls in flight at once, want at most %d", most, maxForwardCalls)
	}
}

// TestForwarderSecondCallOncePiledUp: behind a call in flight, commands
// wait for it until pileUp of them do; then a second call carries them,
// and no third starts however many more come.
func TestForwarderSecondCallOncePiledUp(t *testing.T) {
	leader := &fakeLeader{}
	f, first := busyForwarder(t, leader, 1<<20)
	var few, more []string
	for i := range pileUp - 1 {
		few = append(few, fmt.Sprintf("few-%d", i))
	}
	for i := range 3 * maxForwardBatch {
		more = append(more, fmt.Sprintf("more-%d", i))
	}
	fewResults := forwardAsync(context.Background(), f, few...)
	waitQueued(t, f, len(few))
	f.mu.Lock()
	senders := f.senders
	f.mu.Unlock()
	if senders != 1 || len(leader.started) != 0 {
		t.Fatalf("with %d queued: %d senders, %d calls started; want the one in flight alone", len(few), senders, len(leader.started))
	}
	moreResults := forwardAsync(context.Background(), f, more[:1]...)
	select {
	case <-leader.started:
	case <-time.After(10 * time.Second):
		t.Fatalf("no second call within 10s with %d queued", pileUp)
	}
	if sizes := leader.callSizes(); len(sizes) != 2 || sizes[1] != pileUp {
		t.Fatalf("calls carried %v commands, want the first, then the %d piled up", sizes, pileUp)
	}
	rest := forwardAsync(context.Background(), f, more[1:]...)
	waitQueued(t, f, len(more)-1)
	f.mu.Lock()
	senders = f.senders
	f.mu.Unlock()
	if senders != maxForwardCalls || len(leader.started) != 0 {
		t.Fatalf("with two calls held and %d queued: %d senders, %d more calls; want %d and none", len(more)-1, senders, len(leader.started), maxForwardCalls)
	}
	close(leader.release)
	for _, c := range []<-chan forwardResult{first, fewResults, moreResults, rest} {
		for range cap(c) {
			if r := <-c; r.err != nil || r.reply.Msg != r.data {
				t.Fatalf("forward(%q) = %+v, %v", r.data, r.reply, r.err)
			}
		}
	}
	waitUntil(t, 5*time.Second, "senders to end", func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.senders != 0 {
			return fmt.Errorf("%d senders left running with nothing queued", f.senders)
		}
		return nil
	})
}

// TestForwarderHeavyCommandTravelsAlone: a heavy command goes in a call of
// its own, and while that call is in flight a second call carries the
// small commands, queued before or after it, rather than hold them behind
// it; once it is answered, no more than maxForwardCalls go at a time.
func TestForwarderHeavyCommandTravelsAlone(t *testing.T) {
	leader := &heavyLeader{heavyIn: make(chan struct{}, 1), heavyDone: make(chan struct{})}
	f := &forwarder[applyReply]{send: leader.send, limit: 1 << 20, hold: time.Minute}
	heavy := "heavy---" + string(bytes.Repeat([]byte("h"), heavyCommand))
	heavyResult := forwardAsync(context.Background(), f, heavy)
	<-leader.heavyIn
	// Small commands while the heavy call is held: they are answered.
	small := forwardAsync(context.Background(), f, "small-1", "small-2", "small-3")
	for range 3 {
		select {
		case r := <-small:
			if r.err != nil || r.reply.Msg != r.data {
				t.Fatalf("forward(%q) behind a heavy call = %+v, %v", r.data, r.reply, r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("small commands still wait 10s behind a heavy call in flight")
		}
	}
	close(leader.heavyDone)
	if r := <-heavyResult; r.err != nil || r.reply.Msg != heavy {
		t.Fatalf("the heavy forward: %v", r.err)
	}
	for _, call := range leader.calls {
		if len(call) > 1 && slices.Contains(call, "heavy---") {
			t.Errorf("the heavy command shared a call: %v", call)
		}
	}
	waitUntil(t, 5*time.Second, "the second sender gone", func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.senders != 0 || f.heavy != 0 {
			return fmt.Errorf("%d senders, %d heavy calls", f.senders, f.heavy)
		}
		return nil
	})
	leader.mu.Lock()
	leader.most = 0
	leader.mu.Unlock()
	var cmds []string
	for i := range 100 {
		cmds = append(cmds, fmt.Sprintf("after-%d", i))
	}
	results := forwardAsync(context.Background(), f, cmds...)
	for range cmds {
		if r := <-results; r.err != nil {
			t.Fatal(r.err)
		}
	}
	if most := leader.mostInFlight(); most > maxForwardCalls {
		t.Errorf("after the heavy call, %d calls in flight at once, want at most %d", most, maxForwardCalls)
	}
}

// TestForwarderSmallCommandsQueuedBehindAHeavyOne: commands queued behind
// a heavy one, which leaves in a call of its own, go out in a second call
// at once, not after it.
func TestForwarderSmallCommandsQueuedBehindAHeavyOne(t *testing.T) {
	leader := &fakeLeader{}
	f, first := busyForwarder(t, leader, 1<<20)
	heavy := string(bytes.Repeat([]byte("h"), heavyCommand))
	heavyResult := forwardAsync(context.Background(), f, heavy)
	waitQueued(t, f, 1)
	small := forwardAsync(context.Background(), f, "small-1", "small-2")
	waitQueued(t, f, 3)
	// The first call returns; the heavy command leaves alone, and the
	// small ones in a second call while it is still held.
	leader.release <- struct{}{}
	<-first
	for _, call := range []string{"the heavy one's", "the small ones'"} {
		select {
		case <-leader.started:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s call did not start within 10s; calls so far carried %v", call, leader.callSizes())
		}
	}
	// The two calls run on senders of their own, so either may reach the
	// leader first.
	leader.mu.Lock()
	calls := slices.Clone(leader.calls)
	leader.mu.Unlock()
	if len(calls) == 3 && len(calls[1]) == 2 {
		calls[1], calls[2] = calls[2], calls[1]
	}
	if len(calls) != 3 || len(calls[1]) != 1 || string(calls[1][0]) != heavy || len(calls[2]) != 2 {
		t.Fatalf("calls carried %v commands, want the first, the heavy one alone, and the two small ones together", leader.callSizes())
	}
	close(leader.release)
	for range 2 {
		if r := <-small; r.err != nil {
			t.Fatal(r.err)
		}
	}
	if r := <-heavyResult; r.err != nil {
		t.Fatal(r.err)
	}
}
