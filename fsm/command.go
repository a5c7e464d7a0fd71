package fsm

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
)

// Errors returned in Result.Err and by the read methods.
var (
	// ErrNotFound means the paste does not exist, has expired, was deleted,
	// or was already burned.
	ErrNotFound = errors.New("paste not found")
	// ErrExists means a create used an id that another request already took.
	// The proposer draws a new id and tries again.
	ErrExists = errors.New("paste id already taken")
	// ErrForbidden means a delete carried the wrong token.
	ErrForbidden = errors.New("wrong delete token")
	// ErrBadCommand means a log entry could not be decoded or names a command
	// type this version does not know.
	ErrBadCommand = errors.New("bad command")
)

// Type names a command.
type Type uint8

// The command types. Values are part of the log format: never renumber.
const (
	TypeCreate     Type = 1 // store Command.Paste if its id is free
	TypeDelete     Type = 2 // delete Command.ID if Command.TokenHash matches
	TypeConsume    Type = 3 // hand out a burn paste once, then drop it
	TypeExpire     Type = 4 // delete everything due at or before Command.Now
	TypeRemoveNode Type = 5 // record Command.ID as removed by an operator
	TypeAllowNode  Type = 6 // forget that Command.ID was removed
	TypeBatch      Type = 7 // apply each of Command.Batch in order
	// TypeInitCluster gives the cluster its identity: Command.ID becomes
	// the cluster id and Command.TokenHash the admin token's hash, unless
	// the cluster has an id already (the first one applied wins).
	TypeInitCluster Type = 8
	// TypeAdminToken replaces the cluster admin token's hash with
	// Command.TokenHash (a rotation).
	TypeAdminToken Type = 9
)

// lastType is the newest command type this version knows.
const lastType = TypeAdminToken

func (t Type) String() string {
	switch t {
	case TypeCreate:
		return "create"
	case TypeDelete:
		return "delete"
	case TypeConsume:
		return "consume"
	case TypeExpire:
		return "expire"
	case TypeRemoveNode:
		return "remove-node"
	case TypeAllowNode:
		return "allow-node"
	case TypeBatch:
		return "batch"
	case TypeInitCluster:
		return "init-cluster"
	case TypeAdminToken:
		return "admin-token"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Command is the envelope of every log entry.
type Command struct {
	Type Type `msgpack:"t"`
	// RequestID makes retries idempotent: a command applied again with the
	// same RequestID returns the first result instead of an error.
	RequestID string `msgpack:"r,omitempty"`
	// Now is the proposer's wall clock in Unix nanoseconds. It is the only
	// clock the FSM knows.
	Now int64 `msgpack:"n,omitempty"`
	// Paste is the paste to create.
	Paste *Paste `msgpack:"p,omitempty"`
	// ID is the paste (delete, consume) or node (remove, allow) concerned,
	// or the new cluster's id (init-cluster).
	ID string `msgpack:"i,omitempty"`
	// TokenHash is HashToken of the delete token offered, or of the
	// cluster's admin token (init-cluster, admin-token).
	TokenHash []byte `msgpack:"h,omitempty"`
	// Admin lets a delete skip the token check. Only the API sets it, after
	// checking the admin token.
	Admin bool `msgpack:"a,omitempty"`
	// Batch holds the encoded commands of a TypeBatch entry: the leader
	// appends the commands forwarded together as one entry, which each
	// node applies as if each command were an entry of its own at the
	// batch's index.
	Batch [][]byte `msgpack:"b,omitempty"`
}

// Paste is one stored paste.
type Paste struct {
	ID        string `msgpack:"id"`
	Content   []byte `msgpack:"c"`
	Title     string `msgpack:"ti,omitempty"`
	Lang      string `msgpack:"l,omitempty"`
	CreatedAt int64  `msgpack:"ca"`           // Unix nanoseconds
	ExpiresAt int64  `msgpack:"ea,omitempty"` // Unix nanoseconds; 0: never
	Burn      bool   `msgpack:"b,omitempty"`
	Encrypted bool   `msgpack:"e,omitempty"`
	TokenHash []byte `msgpack:"th"`
	RequestID string `msgpack:"r,omitempty"`

	// Text reports whether Content is valid UTF-8. The store sets it on
	// the pastes it hands out (and Seal on one built by hand); it is never
	// encoded.
	Text bool `msgpack:"-"`
}

// Seal sets what the store derives of a paste when it stores it: whether
// its content is text. A paste built by hand, as in a test, gets it so.
func (p *Paste) Seal() { p.Text = utf8.Valid(p.Content) }

// Expired reports whether p is past its expiry at now (Unix nanoseconds).
func (p *Paste) Expired(now int64) bool {
	return p.ExpiresAt != 0 && p.ExpiresAt <= now
}

// Result is what applying a command returns to the proposer.
type Result struct {
	// Paste is the created paste, or the consumed one with its content.
	Paste *Paste
	// Err is the command's application error, if any.
	Err error
	// Batch holds a TypeBatch entry's results, one per command, in order.
	Batch []*Result
}

// Encode returns the log entry for c: the bytes msgpack.Marshal makes of
// it (codec.go). Its error is always nil.
func Encode(c *Command) ([]byte, error) {
	return appendCommand(make([]byte, 0, c.sizeHint()), c), nil
}

// sizeHint is at least the bytes c encodes to, short of very long field
// names: its variable-length fields, and a bound on the rest.
func (c *Command) sizeHint() int {
	n := 64 + len(c.RequestID) + len(c.ID) + len(c.TokenHash)
	if p := c.Paste; p != nil {
		n += 128 + len(p.ID) + len(p.Content) + len(p.Title) + len(p.Lang) + len(p.TokenHash) + len(p.RequestID)
	}
	if c.Batch != nil {
		n += BatchSize(c.Batch)
	}
	return n
}

// BatchSize is the most bytes a batch of encoded commands encodes to as a
// msgpack array (EncodeBatch): theirs, and a header for each and for the
// array.
func BatchSize(batch [][]byte) int {
	n := 5
	for _, b := range batch {
		n += 5 + len(b)
	}
	return n
}

// Decode parses a log entry and checks that it is a command this version
// knows, with the fields its type needs. Garbage is an error wrapping
// ErrBadCommand. The leader decodes every command before it proposes it,
// so garbage never reaches the log through pastenode's own paths.
//
// The Command's byte slices may be slices of b, which must not change
// while they are in use.
func Decode(b []byte) (*Command, error) {
	c, ok := decodeCommand(b)
	if !ok {
		c = new(Command)
		if err := msgpack.Unmarshal(b, c); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadCommand, err)
		}
	}
	if c.Type < TypeCreate || c.Type > lastType {
		return nil, fmt.Errorf("%w: unknown %s", ErrBadCommand, c.Type)
	}
	switch {
	case c.Type == TypeCreate && (c.Paste == nil || c.Paste.ID == ""):
		return nil, fmt.Errorf("%w: create without a paste", ErrBadCommand)
	case c.Type == TypeBatch && len(c.Batch) == 0:
		return nil, fmt.Errorf("%w: empty batch", ErrBadCommand)
	case (c.Type == TypeInitCluster || c.Type == TypeAdminToken) && len(c.TokenHash) != sha256.Size:
		return nil, fmt.Errorf("%w: %s without a token hash", ErrBadCommand, c.Type)
	case c.Type != TypeCreate && c.Type != TypeExpire && c.Type != TypeBatch && c.Type != TypeAdminToken && c.ID == "":
		return nil, fmt.Errorf("%w: %s without an id", ErrBadCommand, c.Type)
	}
	return c, nil
}

// Removes reports whether a command of type t may remove a paste, so that
// its acknowledgement must wait for the read leases (see package node).
func (t Type) Removes() bool {
	return t == TypeDelete || t == TypeConsume || t == TypeExpire
}
