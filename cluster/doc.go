// Package cluster owns gossip membership (hashicorp/memberlist): node
// metadata, join and leave events, and the leader-only reconciliation of
// live members into Raft voters.
package cluster
