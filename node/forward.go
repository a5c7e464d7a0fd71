package node

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/pastenode/pastenode/fsm"
)

// A follower forwards its writes to the leader through a forwarder, which
// coalesces them: a command that comes while a call is in flight waits,
// and leaves with every other waiting command in the next call (or in a
// second call, once enough wait: see maxForwardCalls). Under load
// the leader then gets a few calls carrying many commands, over the few
// connections those calls keep open, and appends each call's commands to
// its log together; when idle, a command leaves at once, alone.
const (
	// maxForwardBatch is the most commands one call carries.
	maxForwardBatch = 256
	// maxForwardCalls is how many calls may be in flight at once. A
	// second call starts only once pileUp commands wait behind the one in
	// flight, or while one carries a heavy command, which travels alone,
	// so that sending and writing it does not hold up every small command
	// queued behind it. Under load, fewer calls in flight make larger
	// batches, and so fewer appends and fsyncs on every node and less CPU
	// per command; but with one call the leader's log append, the
	// followers' and the reply run one after another, and the cores can
	// idle in between. A second call once commands pile up keeps the
	// batches large and the pipeline busy; a third bought nothing more.
	maxForwardCalls = 2
	// pileUp is how many commands waiting behind a call in flight start a
	// second one. Values from 12 to 48 made no difference beyond one
	// run's spread: the value is not tuned beyond that.
	pileUp = 24
	// heavyCommand is the size from which a command is heavy: at 64 KiB,
	// sending it and writing it to the log take longer than the leader's
	// commit of a batch of small ones.
	heavyCommand = 64 << 10
	// batchFraming bounds the bytes a batch's msgpack framing adds to its
	// commands: an array header and a bin header for each.
	batchFraming = 5 + 5*maxForwardBatch
)

// forwarder coalesces forwarded commands into calls to the leader, which
// answers one R per command. Its calls run on goroutines of their own, at
// most maxForwardCalls (see there), which end when nothing waits. The
// leader batches its own writes with one too (Node.local): a call is then
// an apply here.
type forwarder[R any] struct {
	// send delivers one batch to the leader and returns one reply per
	// command, in order.
	send func(ctx context.Context, batch [][]byte) ([]R, error)
	// limit bounds one command, and the commands of a call together
	// unless it carries only one.
	limit int64
	// hold bounds a call whose commands have no deadline.
	hold time.Duration

	mu      sync.Mutex
	queue   []*forwarded[R]
	senders int // goroutines sending calls
	heavy   int // calls in flight that carry a heavy command
	// calls is the context of the calls in flight, cancelled when the
	// leader changes (leaderChanged); nil until the next call makes one.
	calls  context.Context
	cancel context.CancelFunc
	closed bool // by close: nothing more is forwarded
}

// leaderChanged ends the calls in flight: they went to a leader that is no
// longer one, and one that is cut off would otherwise hold every command
// queued behind it until its deadline. Their commands fail as unreachable,
// and their callers retry them, with the same request ids, at the new
// leader.
func (f *forwarder[R]) leaderChanged() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancel != nil {
		f.cancel()
		f.calls, f.cancel = nil, nil
	}
}

// close ends the calls in flight and fails the commands still queued, and
// every command forwarded from now on, with ErrClosed: the node is
// closing, and a call to the leader must not outlive it by up to the
// commands' deadlines. A command whose call is ended may still be applied,
// as when the leader changes.
func (f *forwarder[R]) close() {
	f.mu.Lock()
	f.closed = true
	queued := f.queue
	f.queue = nil
	if f.cancel != nil {
		f.cancel()
		f.calls, f.cancel = nil, nil
	}
	f.mu.Unlock()
	for _, c := range queued {
		c.err = ErrClosed
		close(c.done)
	}
}

// callContext returns the context the next call derives from: one
// already ended once the forwarder is closed, for a batch taken just
// before.
func (f *forwarder[R]) callContext() context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	if f.calls == nil {
		f.calls, f.cancel = context.WithCancel(context.Background())
	}
	return f.calls
}

// forwarded is one command waiting for the leader's reply.
type forwarded[R any] struct {
	ctx   context.Context
	data  []byte
	done  chan struct{} // closed once reply or err is set
	reply R
	err   error
}

// forward sends data to the leader with the commands forwarded at the same
// time, and returns the leader's reply. It fails when ctx ends first: the
// command may then still be applied, as when a single call's answer is
// lost, and a retry with the same request id is applied at most once.
func (f *forwarder[R]) forward(ctx context.Context, data []byte) (R, error) {
	var none R
	if int64(len(data)) > f.limit {
		return none, fmt.Errorf("%w: %d bytes, the limit is %d", fsm.ErrBadCommand, len(data), f.limit)
	}
	c := &forwarded[R]{ctx: ctx, data: data, done: make(chan struct{})}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return none, ErrClosed
	}
	f.queue = append(f.queue, c)
	start := f.mayStart()
	f.mu.Unlock()
	if start {
		go f.run()
	}
	select {
	case <-c.done:
		return c.reply, c.err
	case <-ctx.Done():
		return none, fmt.Errorf("%w: %w", errUnreachable, ctx.Err())
	}
}

// mayStart counts in a new sender and reports true when one may start:
// when none runs, or a second while a heavy call is in flight or once
// pileUp commands wait. f.mu is held.
func (f *forwarder[R]) mayStart() bool {
	if f.senders == 0 || f.senders < maxForwardCalls && (f.heavy > 0 || len(f.queue) >= pileUp) {
		f.senders++
		return true
	}
	return false
}

// run sends calls until no command waits.
func (f *forwarder[R]) run() {
	for {
		batch, heavy := f.take()
		if batch == nil {
			return
		}
		f.deliver(batch)
		if heavy {
			f.mu.Lock()
			f.heavy--
			f.mu.Unlock()
		}
	}
}

// take removes the next batch from the queue: the commands that waited
// longest, up to maxForwardBatch and f.limit bytes, or a heavy command
// alone, and reports whether it is one. A heavy batch lets a second sender
// start for the commands left queued. With an empty queue, or when the
// calling goroutine is a second sender, no heavy call is in flight any
// more and fewer than pileUp commands wait, it returns nil, and the
// calling goroutine counts itself out: the other sender takes what is
// queued.
func (f *forwarder[R]) take() ([]*forwarded[R], bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.senders > 1 && f.heavy == 0 && len(f.queue) < pileUp {
		f.senders--
		return nil, false
	}
	var n int
	var size int64
	heavy := len(f.queue) > 0 && len(f.queue[0].data) >= heavyCommand
	if heavy {
		n = 1
	} else {
		for _, c := range f.queue {
			if n == maxForwardBatch || len(c.data) >= heavyCommand || (n > 0 && size+int64(len(c.data)) > f.limit) {
				break
			}
			size += int64(len(c.data))
			n++
		}
	}
	if n == 0 {
		f.senders--
		return nil, false
	}
	batch := make([]*forwarded[R], n)
	copy(batch, f.queue)
	// Delete clears the slots it vacates, so that no command's bytes stay
	// reachable from the queue once sent.
	f.queue = slices.Delete(f.queue, 0, n)
	if heavy {
		f.heavy++
		if len(f.queue) > 0 && f.mayStart() {
			go f.run()
		}
	}
	return batch, heavy
}

// deliver sends the commands of batch whose callers still wait in one
// call, and hands each its reply, or the call's error.
func (f *forwarder[R]) deliver(batch []*forwarded[R]) {
	live := batch[:0]
	for _, c := range batch {
		if c.ctx.Err() == nil {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return
	}
	// The call lasts as long as the caller that may wait longest.
	data := make([][]byte, len(live))
	var deadline time.Time
	for i, c := range live {
		data[i] = c.data
		dl, ok := c.ctx.Deadline()
		if !ok {
			dl = time.Now().Add(f.hold)
		}
		if dl.After(deadline) {
			deadline = dl
		}
	}
	ctx, cancel := context.WithDeadline(f.callContext(), deadline)
	replies, err := f.send(ctx, data)
	cancel()
	if err == nil && len(replies) != len(live) {
		err = fmt.Errorf("%w: %d replies to %d commands", errUnreachable, len(replies), len(live))
	}
	for i, c := range live {
		if err != nil {
			c.err = err
		} else {
			c.reply = replies[i]
		}
		close(c.done)
	}
}

// handleApplyBatch applies the commands a follower's forwarder sent in one
// call (applyBatch) and answers one applyReply each, in order.
func (n *Node) handleApplyBatch(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r.Body, r.ContentLength, n.cfg.MaxCommandBytes+batchFraming) // as limited in rpcServer
	if err != nil {
		http.Error(w, "body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	batch, err := fsm.DecodeBatch(body)
	if err != nil || len(batch) > maxForwardBatch {
		http.Error(w, "not a batch of commands", http.StatusBadRequest)
		return
	}
	outcomes, admitted := n.applyBatch(r.Context(), batch, true)
	replies := make([]applyReply, len(batch))
	for i, o := range outcomes {
		replies[i] = o.reply()
	}
	if r.URL.Query().Has(leanReplies) {
		for _, c := range admitted {
			if p := replies[c.at].Paste; p != nil && c.cmd.Type == fsm.TypeCreate {
				lean := *p
				lean.Content = nil
				replies[c.at].Paste = &lean
			}
		}
	}
	writeMsgpack(w, replies)
}

// leanReplies, a query parameter of the batch call, asks the leader to
// leave the content out of the pastes that creates return: the caller
// has it in the commands it sent (Node.propose puts it back). A leader
// that does not know the parameter sends the content, as before.
const leanReplies = "lean"

// applied is the outcome of one command of a batch on the leader: the
// result and index of its entry, or why it was not applied.
type applied struct {
	res   *fsm.Result
	index uint64
	err   error
}

// reply is o as the batch call answers it.
func (o applied) reply() applyReply { return resultReply(o.res, o.index, o.err) }

// applyLocalBatch is the send of the leader's own forwarder (Node.local):
// the creates this node's clients sent at the same time, applied together.
func (n *Node) applyLocalBatch(ctx context.Context, batch [][]byte) ([]applied, error) {
	outcomes, _ := n.applyBatch(ctx, batch, false)
	return outcomes, nil
}

// applyBatch applies the commands of a batch, which came from a follower's
// forwarder or, when forwarded is false, from this leader's own, and
// returns one outcome each, in order, and the commands it admitted. Each
// command is checked on its own as a single forwarded one is
// (admitCommand), and the ones admitted are appended to the log together:
// as one TypeBatch entry once every live member knows that type, else as
// entries handed to Raft before any is waited for, so that they share one
// append and one fsync on every node either way.
func (n *Node) applyBatch(ctx context.Context, batch [][]byte, forwarded bool) ([]applied, []admittedCommand) {
	// The members' protocol, asked once for the whole call: each ask
	// reads the Raft configuration and walks the gossip members.
	proto := n.peerProtocol()
	outcomes := make([]applied, len(batch))
	var admitted []admittedCommand
	for i, data := range batch {
		cmd, err := n.admitCommand(data, proto, forwarded)
		if err != nil {
			outcomes[i].err = err
			continue
		}
		admitted = append(admitted, admittedCommand{i, data, cmd})
	}
	if len(admitted) > 1 && proto >= fsm.Since(fsm.TypeBatch) {
		n.applyAsOne(ctx, admitted, outcomes, forwarded)
	} else {
		n.applyEach(ctx, admitted, outcomes, forwarded)
	}
	return outcomes, admitted
}

// admittedCommand is a command of a batch that admitCommand let in.
type admittedCommand struct {
	at   int // its place in the batch and the outcomes
	data []byte
	cmd  *fsm.Command
}

// applyEach proposes each command as an entry of its own, all before any
// is waited for, and sets their outcomes.
func (n *Node) applyEach(ctx context.Context, cmds []admittedCommand, outcomes []applied, forwarded bool) {
	futures := make([]raft.ApplyFuture, len(cmds))
	for i, c := range cmds {
		futures[i] = n.startApply(ctx, c.data)
	}
	for i, c := range cmds {
		o := &outcomes[c.at]
		o.res, o.index, o.err = n.awaitApply(ctx, futures[i], c.cmd.Type.Removes(), announces(c.cmd.Type, forwarded))
	}
}

// applyAsOne proposes the commands as one TypeBatch entry and sets their
// outcomes from its results.
func (n *Node) applyAsOne(ctx context.Context, cmds []admittedCommand, outcomes []applied, forwarded bool) {
	entry := &fsm.Command{Type: fsm.TypeBatch, Batch: make([][]byte, len(cmds))}
	removes, announce := false, false
	for i, c := range cmds {
		entry.Batch[i] = c.data
		removes = removes || c.cmd.Type.Removes()
		announce = announce || announces(c.cmd.Type, forwarded)
	}
	data, err := fsm.Encode(entry)
	var res *fsm.Result
	var index uint64
	if err == nil {
		res, index, err = n.awaitApply(ctx, n.startApply(ctx, data), removes, announce)
	}
	if err == nil && len(res.Batch) != len(cmds) {
		err = fmt.Errorf("%w: %d results to a batch of %d: %v", fsm.ErrBadCommand, len(res.Batch), len(cmds), res.Err)
	}
	for i, c := range cmds {
		if err != nil {
			outcomes[c.at] = applied{err: err}
		} else {
			outcomes[c.at] = applied{res: res.Batch[i], index: index}
		}
	}
}
