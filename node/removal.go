package node

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"
)

// removalSafe returns once the leader says a removal at index is in
// effect: no lease lets any node serve what it removed (see waitLeases). A
// miss that a removal caused waits for it before it answers 404, so that no
// read that starts after the 404 can still be served the paste. A leader
// change is waited out within ctx.
func (n *Node) removalSafe(ctx context.Context, index uint64) error {
	for {
		var err error
		if n.raft.State() == raft.Leader {
			err = n.waitLeases(ctx, index)
		} else {
			err = n.askRemovalSafe(ctx, index)
		}
		if err == nil || !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-n.stop:
			return ErrClosed
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// safeRequest asks the leader whether a removal is in effect.
type safeRequest struct {
	Index uint64 `msgpack:"i"`
}

func (n *Node) askRemovalSafe(ctx context.Context, index uint64) error {
	body, err := msgpack.Marshal(&safeRequest{Index: index})
	if err != nil {
		return err
	}
	reply, err := n.call(ctx, http.MethodPost, "/internal/v1/removal-safe", body)
	if err != nil {
		return err
	}
	if err := decodeError(reply.Err, reply.Msg); err != nil {
		if errors.Is(err, errNotLeader) || errors.Is(err, ErrClosed) {
			return errNotLeader
		}
		return err
	}
	return nil
}

// handleRemovalSafe answers once a removal at the asked index is in effect
// on this leader, or with the reason it cannot say.
func (n *Node) handleRemovalSafe(w http.ResponseWriter, r *http.Request) {
	var req safeRequest
	if err := msgpack.NewDecoder(io.LimitReader(r.Body, 1<<10)).Decode(&req); err != nil {
		http.Error(w, "bad removal-safe request", http.StatusBadRequest)
		return
	}
	var reply applyReply
	switch {
	case n.closing.Load():
		reply.Err = "closed"
	case n.raft.State() != raft.Leader:
		reply.Err = "not_leader"
	default:
		if err := n.waitLeases(r.Context(), req.Index); err != nil {
			reply.Err, reply.Msg = errorCode(err), err.Error()
		}
	}
	writeMsgpack(w, &reply)
}
