package fsm

import "math"

// ProtocolVersion is the newest command protocol this version applies.
// Nodes advertise it in gossip, and a leader proposes a command only when
// every live member's protocol knows the command's type (Since), so that a
// rolling upgrade never hands an old follower a command it cannot apply.
// Raise it, and give the new types their Since, whenever a command type is
// added or changes meaning.
//
// Protocol 2 adds the batch entry (TypeBatch) and reads snapshots of
// version 2 (S2); a node writes those snapshots only once every member
// does (FSM.SetPeerProtocol), since a leader sends its snapshot to a
// follower that lags too far behind. Protocol 3 adds no command: it reads
// snapshots of version 3 (records), written on the same terms. Protocol 4
// adds the cluster's identity and admin token (TypeInitCluster,
// TypeAdminToken); its snapshots carry them in header fields that older
// versions skip. Protocol 5 adds no command: it keeps pastes in segments
// and reads snapshots of version 4, which refer to them.
const ProtocolVersion = 5

// s2Protocol and segmentsProtocol are the protocols that read snapshots of
// versions 2 and 4.
const (
	s2Protocol       = 2
	segmentsProtocol = 5
)

// Since returns the protocol version that introduced command type t, or
// math.MaxInt for a type this version does not know.
func Since(t Type) int {
	switch t {
	case TypeCreate, TypeDelete, TypeConsume, TypeExpire, TypeRemoveNode, TypeAllowNode:
		return 1
	case TypeBatch:
		return 2
	case TypeInitCluster, TypeAdminToken:
		return 4
	}
	return math.MaxInt
}
