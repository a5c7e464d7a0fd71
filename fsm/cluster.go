package fsm

import "crypto/subtle"

// The cluster's identity: its id and the hash of its admin token, set by
// TypeInitCluster and TypeAdminToken (package node proposes them).

// Cluster returns the cluster's id, "" while it has none: a cluster made
// by a version older than protocol 4 gets one once every member runs
// protocol 4.
func (f *FSM) Cluster() string { return f.cur.Load().cluster }

// IsAdminToken reports whether token is the cluster's admin token. It is
// false while the cluster has none.
func (f *FSM) IsAdminToken(token string) bool {
	want := f.cur.Load().admin
	return len(want) > 0 && subtle.ConstantTimeCompare(HashToken(token), want) == 1
}

// HasAdminToken reports whether the cluster has an admin token.
func (f *FSM) HasAdminToken() bool { return len(f.cur.Load().admin) > 0 }
