package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

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

// batchRPC sends cmds to n's batch call as a peer would and decodes the
// replies; it fails the test unless n answers 200.
func batchRPC(t *testing.T, n *Node, cmds ...[]byte) []applyReply {
	t.Helper()
	return batchCall(t, n, "/internal/v1/apply-batch", cmds...)
}

func batchCall(t *testing.T, n *Node, path string, cmds ...[]byte) []applyReply {
	t.Helper()
	body, err := msgpack.Marshal(cmds)
	if err != nil {
		t.Fatal(err)
	}
	resp := rawRPC(t, n, http.MethodPost, path, body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("batch call: %s", resp.Status)
	}
	var replies []applyReply
	if err := msgpack.NewDecoder(resp.Body).Decode(&replies); err != nil {
		t.Fatalf("batch reply: %v", err)
	}
	if len(replies) != len(cmds) {
		t.Fatalf("%d replies to %d commands", len(replies), len(cmds))
	}
	return replies
}

func encodeCommand(t *testing.T, c *fsm.Command) []byte {
	t.Helper()
	b, err := fsm.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBatchCallChecksEachCommand: the leader checks every command of a
// batch as it checks a single forwarded one, applies the good ones as one
// log entry (as one entry each while a member runs protocol 1) and answers
// each in order; a body it cannot take reaches nothing.
func TestBatchCallChecksEachCommand(t *testing.T) {
	tests := []struct {
		name     string
		protocol int
		entries  int
		nested   string // the error code for a batch inside the batch
	}{
		{"current members", fsm.ProtocolVersion, 1, "bad_command"},
		{"a member at protocol 1", 1, 2, "old_peer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := openNode(t, func(c *Config) { c.MaxCommandBytes = 64 << 10 })
			n.SetPeerProtocol(func() int { return tt.protocol })
			before := lastIndex(n)
			now := time.Now().UnixNano()
			create := func(id string) []byte {
				return encodeCommand(t, &fsm.Command{Type: fsm.TypeCreate, Now: now, RequestID: "r-" + id,
					Paste: &fsm.Paste{ID: id, Content: []byte(id), CreatedAt: now}})
			}
			replies := batchRPC(t, n,
				create("first-paste"),
				[]byte("not msgpack"),
				encodeCommand(t, &fsm.Command{Type: fsm.TypeExpire, Now: now}),
				bytes.Repeat([]byte{'x'}, 64<<10+1),
				encodeCommand(t, &fsm.Command{Type: fsm.TypeBatch, Batch: [][]byte{create("nested")}}),
				create("second-paste"),
			)
			want := []string{"", "bad_command", "bad_command", "bad_command", tt.nested, ""}
			for i, r := range replies {
				if r.Err != want[i] {
					t.Errorf("reply %d = %+v, want error code %q", i, r, want[i])
				}
			}
			first, second := replies[0], replies[5]
			if first.Paste == nil || first.Paste.ID != "first-paste" || second.Paste == nil || second.Paste.ID != "second-paste" {
				t.Fatalf("the creates' replies = %+v and %+v, want their pastes", first, second)
			}
			if first.Index <= before || second.Index < first.Index {
				t.Fatalf("the creates' indexes = %d and %d, want in log order after %d", first.Index, second.Index, before)
			}
			if got := commandsSince(t, n, before); got != tt.entries {
				t.Fatalf("%d log entries for the 2 creates, want %d", got, tt.entries)
			}
			if _, ok := n.fsm.Get("second-paste", time.Now()); !ok {
				t.Fatal("second-paste not in the store")
			}
		})
	}
}

// TestBatchCallLeanReplies: asked with leanReplies, the leader leaves the
// content out of the pastes creates return, and only then.
func TestBatchCallLeanReplies(t *testing.T) {
	n := openNode(t)
	now := time.Now().UnixNano()
	create := func(id string) []byte {
		return encodeCommand(t, &fsm.Command{Type: fsm.TypeCreate, Now: now, RequestID: "r-" + id,
			Paste: &fsm.Paste{ID: id, Content: []byte("content of " + id), CreatedAt: now}})
	}
	full := batchRPC(t, n, create("full-paste"))[0]
	lean := batchCall(t, n, "/internal/v1/apply-batch?"+leanReplies, create("lean-paste"))[0]
	if full.Paste == nil || string(full.Paste.Content) != "content of full-paste" {
		t.Errorf("a plain batch call's create reply %+v, want the paste with its content", full.Paste)
	}
	if lean.Paste == nil || lean.Paste.ID != "lean-paste" || lean.Paste.Content != nil {
		t.Errorf("a lean batch call's create reply %+v, want the paste without content", lean.Paste)
	}
	if p, ok := n.fsm.Get("lean-paste", time.Now()); !ok || string(p.Content) != "content of lean-paste" {
		t.Error("the lean reply changed the stored paste")
	}
}

// TestBatchCallRefusesBadBodies: a batch body the leader cannot take
// answers 400 or 413 and reaches nothing.
func TestBatchCallRefusesBadBodies(t *testing.T) {
	n := openNode(t, func(c *Config) { c.MaxCommandBytes = 64 << 10 })
	before := lastIndex(n)
	big, err := msgpack.Marshal([][]byte{bytes.Repeat([]byte{'x'}, 40<<10), bytes.Repeat([]byte{'y'}, 40<<10)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		body []byte
		want int
	}{
		{"garbage", []byte("not msgpack"), http.StatusBadRequest},
		{"too many commands", msgpackArrayOf(t, maxForwardBatch+1), http.StatusBadRequest},
		{"over the byte limit", big, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		if resp := rawRPC(t, n, http.MethodPost, "/internal/v1/apply-batch", tt.body); resp.StatusCode != tt.want {
			t.Errorf("%s: got %s, want %d", tt.name, resp.Status, tt.want)
		}
	}
	if got := commandsSince(t, n, before); got != 0 {
		t.Fatalf("%d commands reached the log", got)
	}
}

// msgpackArrayOf encodes n empty byte strings.
func msgpackArrayOf(t *testing.T, n int) []byte {
	t.Helper()
	b, err := msgpack.Marshal(make([][]byte, n))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestForwardedCreatesSurviveALeaderChange: creates forwarded from a
// follower while leadership moves all succeed, each exactly once, and each
// is readable on the forwarding node as soon as it returns.
func TestForwardedCreatesSurviveALeaderChange(t *testing.T) {
	nodes := openCluster(t, 3)
	leader, followers := leaderOf(t, nodes)
	from := followers[0]
	if replies := batchRPC(t, from, []byte("x")); replies[0].Err != "not_leader" {
		t.Fatalf("a batch sent to a follower: reply %+v, want not_leader", replies[0])
	}
	const count = 200
	var wg sync.WaitGroup
	errs := make(chan error, count)
	for i := range count {
		wg.Go(func() {
			p, err := from.Create(context.Background(), CreateRequest{Content: []byte(fmt.Sprint(i))})
			if err == nil {
				// Read, not the store: the create is answered once the
				// leader has applied it, and a read that misses on from
				// waits for from to catch up (G2).
				if _, err = from.Read(context.Background(), p.ID, false); err != nil {
					err = fmt.Errorf("paste %s not readable on %s once created: %w", p.ID, from.ID(), err)
				} else if string(p.Content) != fmt.Sprint(i) {
					err = fmt.Errorf("create %d returned a paste of content %q", i, p.Content)
				}
			}
			errs <- err
		})
	}
	// The creates are in flight, most of them still queued on from.
	if err := leader.raft.LeadershipTransfer().Error(); err != nil {
		t.Fatalf("leadership transfer: %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		waitUntil(t, 5*time.Second, n.ID()+" has every paste", func() error {
			if got, _ := n.Stats(); got != count {
				return fmt.Errorf("%d pastes, want %d", got, count)
			}
			return nil
		})
	}
}

// TestForwardedCreateReturnsItsPaste: a create through a follower returns
// the paste with its content, which the leader's lean reply left out.
func TestForwardedCreateReturnsItsPaste(t *testing.T) {
	nodes := openCluster(t, 3)
	_, followers := leaderOf(t, nodes)
	for i := range 3 {
		content := fmt.Sprintf("forwarded %d", i)
		p, err := followers[0].Create(context.Background(), CreateRequest{Content: []byte(content), Title: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if string(p.Content) != content || p.Title != "t" || p.ID == "" {
			t.Fatalf("create %d returned %+v, want its content %q and title", i, p, content)
		}
	}
}

// TestForwardingFallsBackForAnOldLeader: a leader that does not serve the
// batch call (404, an older version) still gets every write, one call each.
func TestForwardingFallsBackForAnOldLeader(t *testing.T) {
	nodes := openCluster(t, 3)
	_, followers := leaderOf(t, nodes)
	from := followers[0]
	if err := from.roundTrip(context.Background(), http.MethodPost, "/internal/v1/no-such-call", nil, 1<<10, nil); !errors.Is(err, errNotServed) {
		t.Fatalf("a call the leader does not serve: err = %v, want errNotServed", err)
	}
	batches := 0
	from.forwards.send = func(context.Context, [][]byte) ([]applyReply, error) {
		batches++ // one sender at a time here: creates run one after another
		return nil, errNotServed
	}
	for i := range 3 {
		p, err := from.Create(context.Background(), CreateRequest{Content: []byte(fmt.Sprint(i))})
		if err != nil {
			t.Fatalf("create %d through an old leader: %v", i, err)
		}
		if got, err := from.Read(context.Background(), p.ID, false); err != nil || string(got.Content) != fmt.Sprint(i) {
			t.Fatalf("paste %s on %s once created: %v, %v", p.ID, from.ID(), got, err)
		}
	}
	if batches != 3 {
		t.Fatalf("%d batch calls tried, want 3", batches)
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

// TestForwarderSendsOneCallAtATime: commands of ordinary size, however
// many come at once, go in one call at a time (maxForwardCalls).
func TestForwarderSendsOneCallAtATime(t *testing.T) {
	leader := &heavyLeader{heavyIn: make(chan struct{}, 1), heavyDone: make(chan struct{})}
	f := &forwarder[applyReply]{send: leader.send, limit: 1 << 20, hold: time.Minute}
	var cmds []string
	for i := range 200 {
		cmds = append(cmds, fmt.Sprintf("cmd-%d", i))
	}
	results := forwardAsync(context.Background(), f, cmds...)
	for range cmds {
		if r := <-results; r.err != nil || r.reply.Msg != r.data {
			t.Fatalf("forward(%q) = %+v, %v", r.data, r.reply, r.err)
		}
	}
	if most := leader.mostInFlight(); most != 1 {
		t.Errorf("%d calls in flight at once, want 1", most)
	}
}

// TestForwarderHeavyCommandTravelsAlone: a heavy command goes in a call of
// its own, and while that call is in flight a second call carries the
// small commands, queued before or after it, rather than hold them behind
// it; once it is answered, calls go one at a time again.
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
	if most := leader.mostInFlight(); most != 1 {
		t.Errorf("after the heavy call, %d calls in flight at once, want 1", most)
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
	sizes := leader.callSizes()
	if len(sizes) != 3 || sizes[1] != 1 || sizes[2] != 2 {
		t.Fatalf("calls carried %v commands, want the first, the heavy one alone, then the two small ones", sizes)
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
