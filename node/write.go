package node

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/fsm"
)

// Paste ids are IDLen characters (Config.IDLength, when set) drawn from
// IDAlphabet, which leaves out the characters that look alike (l, 1, I, O,
// 0).
const (
	IDLen      = 10
	MaxIDLen   = 64
	IDAlphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"

	// idAttempts is how many fresh ids Create draws before it gives up.
	idAttempts = 5
)

// CreateRequest is a new paste as the API accepted it. The node chooses
// its id and times.
type CreateRequest struct {
	Content   []byte
	Title     string
	Lang      string
	Expire    time.Duration // 0: never
	Burn      bool
	Encrypted bool
	// DeleteToken is the secret that deletes the paste later. Only its
	// hash is replicated.
	DeleteToken string
}

// Create replicates a new paste under a random id and returns it. The id
// and the clock are read once, before the proposal, so every node applies
// the same values, and a retry through an election carries the same request
// id, so the paste is created at most once. When the id is taken, Create
// draws another, with a new request id.
//
// While the data dir is (nearly) full, Create returns an error wrapping
// ErrStorageFull at once, without proposing anything.
func (n *Node) Create(ctx context.Context, req CreateRequest) (*fsm.Paste, error) {
	if err := n.storage.admit(int64(len(req.Content))); err != nil {
		return nil, err
	}
	now := time.Now()
	p := fsm.Paste{
		Content:   req.Content,
		Title:     req.Title,
		Lang:      req.Lang,
		CreatedAt: now.UnixNano(),
		Burn:      req.Burn,
		Encrypted: req.Encrypted,
		TokenHash: fsm.HashToken(req.DeleteToken),
	}
	if req.Expire > 0 {
		p.ExpiresAt = now.Add(req.Expire).UnixNano()
	}
	for range idAttempts {
		attempt := p
		attempt.ID = n.drawID()
		created, err := n.proposeCreate(ctx, now, &attempt)
		if errors.Is(err, fsm.ErrExists) {
			continue
		}
		return created, err
	}
	return nil, errors.New("could not find a free paste id")
}

// ImportRequest is a paste moved from another pastebin: unlike a
// CreateRequest, it names its id and its times.
type ImportRequest struct {
	ID        string
	Content   []byte
	Title     string
	Lang      string
	CreatedAt time.Time // zero: now
	ExpiresAt time.Time // zero: never
	Burn      bool
	Encrypted bool
	// DeleteToken is the secret that deletes the paste later. Only its
	// hash is replicated.
	DeleteToken string
}

// Import replicates a paste under the id and times req gives, so that a
// migration keeps the old links working. It returns an error wrapping
// ErrBadID for an id CheckID refuses, and fsm.ErrExists when the id is
// taken, or was within fsm.TombstoneTTL; it never draws another id.
//
// It needs no command type of its own: a create has always carried its
// paste's id and times, and the FSM stores them as they come, so every
// protocol version applies an import the same and a rolling upgrade
// needs no gate. The command's Now is still this node's clock, the one
// the FSM's expiry and tombstones run on.
func (n *Node) Import(ctx context.Context, req ImportRequest) (*fsm.Paste, error) {
	if err := CheckID(req.ID); err != nil {
		return nil, err
	}
	if err := n.storage.admit(int64(len(req.Content))); err != nil {
		return nil, err
	}
	now := time.Now()
	p := fsm.Paste{
		ID:        req.ID,
		Content:   req.Content,
		Title:     req.Title,
		Lang:      req.Lang,
		CreatedAt: now.UnixNano(),
		Burn:      req.Burn,
		Encrypted: req.Encrypted,
		TokenHash: fsm.HashToken(req.DeleteToken),
	}
	if !req.CreatedAt.IsZero() {
		p.CreatedAt = req.CreatedAt.UnixNano()
	}
	if !req.ExpiresAt.IsZero() {
		p.ExpiresAt = req.ExpiresAt.UnixNano()
	}
	return n.proposeCreate(ctx, now, &p)
}

// proposeCreate replicates the create of p, stamped with now. A log that
// had no room for it is ErrStorageFull, as a create the guard refused.
func (n *Node) proposeCreate(ctx context.Context, now time.Time, p *fsm.Paste) (*fsm.Paste, error) {
	created, err := n.run(ctx, &fsm.Command{Type: fsm.TypeCreate, Now: now.UnixNano(), Paste: p})
	if err != nil && !errors.Is(err, ErrStorageFull) && noSpace(err) {
		err = fmt.Errorf("%w: the Raft log could not store the paste: %v", ErrStorageFull, err)
	}
	return created, err
}

// Delete removes paste id if token is its delete token, or whatever the
// token when admin is set (the caller checked the admin token). It returns
// fsm.ErrNotFound or fsm.ErrForbidden when the paste stays.
func (n *Node) Delete(ctx context.Context, id, token string, admin bool) error {
	_, err := n.run(ctx, &fsm.Command{Type: fsm.TypeDelete, ID: id, TokenHash: fsm.HashToken(token), Admin: admin})
	return err
}

// Consume hands out a burn paste exactly once, cluster-wide: the decision is
// a replicated command, never a local read. A paste that does not burn is
// returned as it is.
func (n *Node) Consume(ctx context.Context, id string) (*fsm.Paste, error) {
	return n.run(ctx, &fsm.Command{Type: fsm.TypeConsume, ID: id})
}

// RemoveNode records node id as removed by an operator. The leader then
// takes it out of Raft, and gossip never adds it back.
func (n *Node) RemoveNode(ctx context.Context, id string) error {
	_, err := n.run(ctx, &fsm.Command{Type: fsm.TypeRemoveNode, ID: id})
	return err
}

// Removed reports whether an operator removed node id from the cluster.
func (n *Node) Removed(id string) bool { return n.fsm.Removed(id) }

// run proposes cmd and folds the command's own error into the returned one.
func (n *Node) run(ctx context.Context, cmd *fsm.Command) (*fsm.Paste, error) {
	res, err := n.propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, res.Err
	}
	return res.Paste, nil
}

// CheckIDLength reports whether n is a paste id length Config accepts: 0
// (IDLen) or from IDLen to MaxIDLen. Shorter ids would be guessable.
func CheckIDLength(n int) error {
	if n != 0 && (n < IDLen || n > MaxIDLen) {
		return fmt.Errorf("paste id length %d: want %d to %d characters", n, IDLen, MaxIDLen)
	}
	return nil
}

// ErrBadID means a paste id given from outside (Import) is not one that
// CheckID accepts.
var ErrBadID = errors.New("bad paste id")

// CheckID reports whether id may name a paste that keeps the id it had
// elsewhere: IDLen to MaxIDLen characters (CheckIDLength) that a URL path
// keeps as they are, letters, digits, "-" and "_". The ids a node draws
// are a subset; an old pastebin's may hold the look-alikes IDAlphabet
// leaves out, or a UUID's dashes. The length floor keeps an imported id
// as hard to guess as a drawn one, and keeps it from naming a route such
// as /new, /pastes or /healthz.
func CheckID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: the id is empty", ErrBadID)
	}
	if err := CheckIDLength(len(id)); err != nil {
		return fmt.Errorf("%w: %v", ErrBadID, err)
	}
	if !pastenode.URLSafeID(id) {
		return fmt.Errorf("%w: %q: want letters, digits, - and _ only", ErrBadID, id)
	}
	return nil
}

// newPasteID draws a paste id: n characters (IDLen when n is 0) of
// IDAlphabet, each equally likely.
func newPasteID(n int) string {
	if n == 0 {
		n = IDLen
	}
	out := make([]byte, n)
	buf := make([]byte, 2*n)
	// Bytes past the largest multiple of len(IDAlphabet) are rejected, so
	// that the modulo favours no character.
	limit := 256 - 256%len(IDAlphabet)
	for i := 0; i < n; {
		_, _ = rand.Read(buf)
		for _, c := range buf {
			if int(c) >= limit {
				continue
			}
			out[i] = IDAlphabet[int(c)%len(IDAlphabet)]
			if i++; i == n {
				break
			}
		}
	}
	return string(out)
}
