// Package fsm is pastenode's replicated state machine: the pastes, their
// expiry index, the tombstones of pastes that are gone, and the set of nodes
// an operator removed. Every change arrives as a Command in the Raft log;
// package node builds them.
//
// The FSM is deterministic. It reads no clock and draws no random numbers:
// every time value travels inside the command (Command.Now), stamped by the
// node that proposed it. Two FSMs fed the same log hold the same pastes,
// tombstones and removed nodes. The one I/O of an apply is appending a new
// paste's record to a segment file; where records sit in which segment is
// each node's own (compaction), and snapshots say so in their manifest.
//
// Expiry: a paste past its ExpiresAt is invisible to reads at once, but it
// is dropped only when the leader proposes a TypeExpire command, which removes
// everything due at or before the command's time. NextDue tells the leader
// when the next one has work to do.
//
// Tombstones: a deleted, burned or expired paste leaves a Tombstone under
// its id for TombstoneTTL. Meanwhile the id cannot be created again, and a
// command retried with the same request id (after an answer was lost in an
// election) gets its first result rather than an error: a retried create
// still succeeds after the paste is gone, a retried delete still succeeds.
// TypeExpire commands collect tombstones once they are older than TombstoneTTL.
//
// Burn grace: the tombstone of a consumed burn paste keeps the paste,
// content included, for ConsumeGrace, so that a retry of the same consume
// still hands it out instead of a 404. Any other request gets ErrNotFound.
//
// Removed nodes: a TypeRemoveNode command records a node id an operator took
// out of the cluster, and TypeAllowNode forgets it. The cluster package reads Removed to
// keep gossip from adding such a node back as a voter.
//
// Reads never take a lock. The state is a set of copy-on-write B-trees
// behind an atomic pointer: an apply clones them (which copies nothing),
// builds the next version, copying only the nodes it changes, and swaps it
// in; a snapshot keeps a reference to the current one. The index is all
// that memory holds of a paste: its record, content included, is in a
// segment file, written once and never changed (segment.go), and a read
// copies it from the file's mapping. A snapshot refers to the segments by hard links
// (manifest.go).
//
// Log entries: a Command is the msgpack map that msgpack.Marshal makes of
// it by reflection; Encode and Decode make and read those bytes by hand
// (codec.go), and anything else goes to msgpack.Unmarshal.
package fsm
