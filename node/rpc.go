package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/pastenode/pastenode/fsm"
)

// The internal RPC is plain HTTP with msgpack bodies, served on the Raft
// port behind the mux byte, so only peers that can reach (and, with a
// cluster key, authenticate to) the Raft port can call it.

var errUnreachable = errors.New("leader unreachable")

// applyReply is the leader's answer to a forwarded command.
type applyReply struct {
	Index uint64     `msgpack:"i"`
	Paste *fsm.Paste `msgpack:"p,omitempty"`
	Err   string     `msgpack:"e,omitempty"` // an errorCodes key
	Msg   string     `msgpack:"m,omitempty"` // the text of an error without a code
}

// EncodeMsgpack writes r as msgpack.Marshal writes an applyReply by
// reflection, without it: the paste by fsm.AppendPaste. By reflection,
// encoding the replies was about half of the leader's work for a forwarded
// batch. Followers decode them by reflection, as ever.
// TestApplyReplyEncodesAsReflectionDoes holds the bytes to reflection's.
func (r applyReply) EncodeMsgpack(enc *msgpack.Encoder) error {
	n := 1
	for _, set := range []bool{r.Paste != nil, r.Err != "", r.Msg != ""} {
		if set {
			n++
		}
	}
	err := errors.Join(enc.EncodeMapLen(n), enc.EncodeString("i"), enc.EncodeUint64(r.Index))
	if r.Paste != nil {
		err = errors.Join(err, enc.EncodeString("p"), enc.Encode(msgpack.RawMessage(fsm.AppendPaste(nil, r.Paste))))
	}
	if r.Err != "" {
		err = errors.Join(err, enc.EncodeString("e"), enc.EncodeString(r.Err))
	}
	if r.Msg != "" {
		err = errors.Join(err, enc.EncodeString("m"), enc.EncodeString(r.Msg))
	}
	return err
}

// errorCodes carry sentinel errors across the wire.
var errorCodes = map[string]error{
	"not_found":   fsm.ErrNotFound,
	"exists":      fsm.ErrExists,
	"forbidden":   fsm.ErrForbidden,
	"not_leader":  errNotLeader,
	"closed":      ErrClosed,
	"bad_command": fsm.ErrBadCommand,
	"old_peer":    ErrOldPeer,
}

func errorCode(err error) string {
	for code, e := range errorCodes {
		if errors.Is(err, e) {
			return code
		}
	}
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress) {
		return "not_leader"
	}
	return ""
}

func decodeError(code, msg string) error {
	if code == "" && msg == "" {
		return nil
	}
	if code == "storage_full" {
		return fmt.Errorf("%w (on the leader)", remoteStorageFull(msg))
	}
	if err, ok := errorCodes[code]; ok {
		return err
	}
	return errors.New(msg)
}

// rpcServer serves the internal calls. Every body is bounded by
// MaxCommandBytes (a batch's by its commands' framing more), and every
// connection has read, write and idle deadlines.
func (n *Node) rpcServer() *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /internal/v1/apply", n.handleApply)
	mux.HandleFunc("POST /internal/v1/apply-batch", n.handleApplyBatch)
	mux.HandleFunc("GET /internal/v1/read-index", n.handleReadIndex)
	mux.HandleFunc("GET /internal/v1/stats", n.handleStats)
	mux.HandleFunc("POST /internal/v1/lease", n.handleLease)
	mux.HandleFunc("POST /internal/v1/removal-safe", n.handleRemovalSafe)
	mux.HandleFunc("GET /internal/v1/identity", n.handleIdentity)
	mux.HandleFunc("GET /internal/v1/admin-token", n.handleAdminToken)
	return &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			limit := n.cfg.MaxCommandBytes
			if r.URL.Path == "/internal/v1/apply-batch" {
				limit += batchFraming // the forwarder's commands together are at most one's limit
			}
			r.Body = http.MaxBytesReader(w, r.Body, limit)
			mux.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: min(10*time.Second, n.cfg.IdleTimeout),
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      n.cfg.WriteHold + 30*time.Second,
		IdleTimeout:       min(n.cfg.IdleTimeout, 2*time.Minute),
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          nil,
	}
}

// rpcWriteBuffer is the write buffer of each connection to the leader: a
// batch of forwarded creates under load (about 20 KiB of 1 KiB pastes)
// fits, so that it goes out in one write.
const rpcWriteBuffer = 64 << 10

func (n *Node) rpcClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				return n.mux.dial(ctx, addr, muxRPC)
			},
			MaxIdleConnsPerHost: 8,
			IdleConnTimeout:     30 * time.Second,
			// A batch of forwarded commands goes out in one write: with
			// the default 4 KiB, the rest of a larger body went through
			// the connection's ReadFrom, which allocated 32 KiB to copy
			// it, per call.
			WriteBufferSize:       rpcWriteBuffer,
			ResponseHeaderTimeout: n.cfg.WriteHold + 10*time.Second,
		},
	}
}

// handleApply applies a forwarded command if this node leads. It does not
// retry: the forwarding node owns the retry loop. A command that does not
// validate is refused, so a forged body never reaches the log. Followers
// of this version send their commands to handleApplyBatch; this call serves
// older ones.
func (n *Node) handleApply(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	cmd, err := n.admitCommand(data, n.peerProtocol(), true)
	if err != nil {
		reply := resultReply(nil, 0, err)
		writeMsgpack(w, &reply)
		return
	}
	reply := resultReply(n.applyChecked(r.Context(), data, cmd, true))
	writeMsgpack(w, &reply)
}

// admitCommand decodes a command of a batch, or a single forwarded one,
// and returns it, or why it is refused: this node does not lead or is
// closing, or the command does not validate, is not one a follower sends,
// or, when forwarded from a follower, would fill the disk (the leader's
// own creates passed the storage guard in Create). proto is peerProtocol,
// which a batch asks once for all its commands.
func (n *Node) admitCommand(data []byte, proto int, forwarded bool) (*fsm.Command, error) {
	switch {
	case n.closing.Load():
		return nil, ErrClosed
	case n.raft.State() != raft.Leader:
		return nil, errNotLeader
	}
	cmd, err := n.checkCommand(data, proto)
	if err == nil {
		err = checkForwarded(cmd, time.Now())
	}
	if err == nil && forwarded {
		err = n.admitForwarded(cmd)
	}
	if err != nil {
		return nil, err
	}
	return cmd, nil
}

// resultReply is the reply that carries an apply's outcome.
func resultReply(res *fsm.Result, index uint64, err error) applyReply {
	if errors.Is(err, ErrStorageFull) {
		return applyReply{Err: "storage_full", Msg: err.Error()}
	}
	if err != nil {
		return applyReply{Err: errorCode(err), Msg: err.Error()}
	}
	reply := applyReply{Index: index, Paste: res.Paste}
	if res.Err != nil {
		reply.Err, reply.Msg = errorCode(res.Err), res.Err.Error()
	}
	return reply
}

// maxForwardSkew is how far a forwarded command's clock may be from the
// leader's. Nodes keep their clocks in sync with NTP; a command stamped
// years away is forged.
const maxForwardSkew = time.Hour

// checkForwarded refuses what no follower sends: a command that does not
// decode, an Expire (only the leader's reaper proposes those, locally), a
// Batch (the leader makes those of the commands forwarded to it), or
// one whose clock is far from the leader's now.
func checkForwarded(cmd *fsm.Command, now time.Time) error {
	if cmd.Type == fsm.TypeExpire || cmd.Type == fsm.TypeBatch {
		return fmt.Errorf("%w: %s is proposed by the leader only", fsm.ErrBadCommand, cmd.Type)
	}
	if skew := time.Duration(cmd.Now - now.UnixNano()).Abs(); skew > maxForwardSkew {
		return fmt.Errorf("%w: %s stamped %v away from the leader's clock", fsm.ErrBadCommand, cmd.Type, skew.Round(time.Second))
	}
	return nil
}

// handleReadIndex answers a follower's read index (readIndex). The
// follower then applies up to it, which it can do only once it knows that
// much is committed: when the follower's commit index (the query parameter
// knownCommit) is behind the read index, or unknown (an older follower),
// the leader announces its commit (announceCommit), or the read could wait
// for the next AppendEntries, up to CommitTimeout when no write comes.
// The commits of the creates a follower forwarded are announced so, when
// that follower needs them, not each time (announces).
func (n *Node) handleReadIndex(w http.ResponseWriter, r *http.Request) {
	var reply applyReply
	if index, err := n.readIndex(r.Context()); err != nil {
		reply.Err, reply.Msg = errorCode(err), err.Error()
	} else {
		reply.Index = index
		known, err := strconv.ParseUint(r.URL.Query().Get(knownCommit), 10, 64)
		if err != nil || known < index {
			n.announceCommit()
		}
	}
	writeMsgpack(w, &reply)
}

// knownCommit, a query parameter of the read-index call, is the commit
// index the follower asking knows of.
const knownCommit = "commit"

func writeMsgpack(w http.ResponseWriter, v any) {
	b, err := msgpack.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/msgpack")
	w.Header().Set("Content-Length", strconv.Itoa(len(b))) // for readBody
	_, _ = w.Write(b)
}

// readBody reads r, which stops after limit bytes, to its end. With the
// length known (size > 0) and within the limit, it reads into one buffer
// of that size rather than one that doubles from 512 bytes; a body longer
// than it said still reads whole.
func readBody(r io.Reader, size, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	if size > 0 && size <= limit {
		buf.Grow(int(size) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// forwardApply sends data, a command of type t, to the leader. Most go with
// the commands forwarded at the same time (forwarder); a removal goes on
// its own, because the leader answers it only once the read leases allow
// (waitLeases), which must not hold up the writes batched with it. A
// leader that serves no batches gets single calls. Application errors (not
// found, forbidden, ...) come back inside the Result; transport trouble and
// "not the leader" are retryable errors.
func (n *Node) forwardApply(ctx context.Context, data []byte, t fsm.Type) (*fsm.Result, uint64, error) {
	reply, err := n.sendForwarded(ctx, data, t)
	if err != nil {
		return nil, 0, err
	}
	appErr := decodeError(reply.Err, reply.Msg)
	switch {
	case appErr == nil:
	case errors.Is(appErr, errNotLeader), errors.Is(appErr, ErrClosed):
		return nil, 0, errNotLeader
	case reply.Err == "": // an error the leader's Raft gave, not the FSM
		return nil, 0, fmt.Errorf("%w: %v", errUnreachable, appErr)
	}
	return &fsm.Result{Paste: reply.Paste, Err: appErr}, reply.Index, nil
}

// sendForwarded sends data, a command of type t, to the leader: in a batch,
// or alone when it is a removal or the leader serves no batches.
func (n *Node) sendForwarded(ctx context.Context, data []byte, t fsm.Type) (applyReply, error) {
	if !t.Removes() {
		reply, err := n.forwards.forward(ctx, data)
		if !errors.Is(err, errNotServed) {
			return reply, err
		}
	}
	one, err := n.call(ctx, http.MethodPost, "/internal/v1/apply", data)
	if err != nil {
		return applyReply{}, err
	}
	return *one, nil
}

// sendBatch is the forwarder's call: the leader answers one reply per
// command, each at most as large as the answer to a single call.
func (n *Node) sendBatch(ctx context.Context, batch [][]byte) ([]applyReply, error) {
	body := fsm.EncodeBatch(batch)
	var replies []applyReply
	limit := int64(len(batch))*n.cfg.MaxCommandBytes + batchFraming
	if err := n.roundTrip(ctx, http.MethodPost, "/internal/v1/apply-batch?"+leanReplies, body, limit, &replies); err != nil {
		return nil, err
	}
	return replies, nil
}

func (n *Node) forwardReadIndex(ctx context.Context) (uint64, error) {
	path := "/internal/v1/read-index?" + knownCommit + "=" + strconv.FormatUint(n.raft.CommitIndex(), 10)
	reply, err := n.call(ctx, http.MethodGet, path, nil)
	if err != nil {
		return 0, err
	}
	if err := decodeError(reply.Err, reply.Msg); err != nil {
		return 0, err
	}
	return reply.Index, nil
}

// errNotServed means the leader answered an internal call with 404: it runs
// an older version that does not know the call.
var errNotServed = fmt.Errorf("%w: the leader does not serve the call", errUnreachable)

// call makes an internal call to the leader that answers one applyReply.
func (n *Node) call(ctx context.Context, method, path string, body []byte) (*applyReply, error) {
	var reply applyReply
	if err := n.roundTrip(ctx, method, path, body, n.cfg.MaxCommandBytes, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

// roundTrip makes an internal call to the leader and decodes its answer,
// at most limit bytes, into reply.
func (n *Node) roundTrip(ctx context.Context, method, path string, body []byte, limit int64, reply any) error {
	addr, _ := n.raft.LeaderWithID()
	if addr == "" {
		return ErrNoLeader
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+string(addr)+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", errUnreachable, err)
	}
	defer resp.Body.Close()
	b, err := readBody(io.LimitReader(resp.Body, limit), resp.ContentLength, limit)
	if err != nil {
		return fmt.Errorf("%w: %v", errUnreachable, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return errNotServed
	default:
		return fmt.Errorf("%w: leader answered %s", errUnreachable, resp.Status)
	}
	if err := msgpack.Unmarshal(b, reply); err != nil {
		return fmt.Errorf("%w: bad reply: %v", errUnreachable, err)
	}
	return nil
}
