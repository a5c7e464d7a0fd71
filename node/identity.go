package node

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/pastenode/pastenode/fsm"
)

// A cluster has an identity: a random id that its first leader proposes
// (fsm.TypeInitCluster) and every member keeps in the replicated state and
// in its data dir. A node never merges state of another cluster, and a
// leader never adds a node that holds state of another cluster: the
// cluster package checks the ids in gossip and over the internal RPC.
//
// The same command gives the cluster one admin token. The replicated
// state holds only its hash. The plaintext is written, 0600, to the data
// dir of the leader that made it, and every member fetches it over the
// internal RPC (mutual TLS pinned to the cluster key), so that
// `pastectl --data-dir` of any node works against every node.

// Files of the data dir this part keeps.
const (
	clusterIDFile  = "cluster-id"
	adminTokenFile = "admin-token"
	// removedFile marks a node that an operator removed: a restart does
	// not take it back into its cluster, only an explicit join does.
	removedFile = "removed"
)

// ErrForeignCluster means a node holds Raft state of another cluster than
// the one it was asked to join, or to take in.
var ErrForeignCluster = errors.New("belongs to another cluster")

// ErrRemoved means an operator removed this node from its cluster.
var ErrRemoved = errors.New("this node was removed from its cluster by an operator")

// ForeignClusterError is the one line that refuses to merge a node of
// cluster have into cluster want, with the way out.
func ForeignClusterError(who, have, want string) error {
	if have == "" {
		have = "of unknown id"
	}
	return fmt.Errorf("%s %w: it holds state of cluster %s, not of cluster %s; "+
		"start it with an empty data dir to join as a new member, or `pastenode restore` a backup into one",
		who, ErrForeignCluster, have, want)
}

// checkNodeID records id in the data dir on first use and refuses a data
// dir recorded for another id: Raft state must never change hands.
func checkNodeID(dir, id string) error {
	path := filepath.Join(dir, "node-id")
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
			return fmt.Errorf("record node id: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("read node id: %w", err)
	}
	if got := strings.TrimSpace(string(b)); got != id {
		return fmt.Errorf("%w: %s holds %q, this node is %q", ErrIDMismatch, dir, got, id)
	}
	return nil
}

// Applied returns a channel that is closed after the next apply: the
// cluster's id, among the rest, may have changed by then.
func (n *Node) Applied() <-chan struct{} { return n.fsm.Changed() }

// ClusterID returns the id of this node's cluster, "" while it has none
// (no cluster yet, or one made by a version without ids that has not been
// given one yet).
func (n *Node) ClusterID() string {
	if id := n.fsm.Cluster(); id != "" {
		return id
	}
	if id := n.fileCluster.Load(); id != nil {
		return *id
	}
	return ""
}

// IsAdminToken reports whether token is the cluster's admin token. A node
// whose cluster has none yet (no cluster yet, or one made by an older
// version) accepts the token in its data dir instead.
//
// A node that made a token of its own at this start accepts it until it
// holds the cluster's, a moment after it joined, so that its data dir
// works for pastectl from the moment the node is up. A token it was given
// (the cluster's, maybe since rotated) counts only while it is the
// cluster's.
func (n *Node) IsAdminToken(token string) bool {
	if token == "" {
		return false
	}
	if n.fsm.HasAdminToken() {
		if n.fsm.IsAdminToken(token) {
			return true
		}
		own := n.ownToken.Load()
		return own != nil && n.needsAdminToken() && sameToken(*own, token)
	}
	local := n.adminToken.Load()
	return local != nil && sameToken(*local, token)
}

// sameToken compares two tokens in constant time.
func sameToken(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// AdminTokenFile is where this node keeps the cluster's admin token.
func (n *Node) AdminTokenFile() string { return filepath.Join(n.cfg.DataDir, adminTokenFile) }

// loadIdentity reads what the data dir knows of the cluster before Raft
// starts: its id, this node's copy of the admin token, and whether an
// operator removed this node.
func (n *Node) loadIdentity() error {
	b, err := os.ReadFile(filepath.Join(n.cfg.DataDir, clusterIDFile))
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		n.fileCluster.Store(&id)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("read cluster id: %w", err)
	}
	token, err := readAdminToken(n.AdminTokenFile())
	if errors.Is(err, fs.ErrNotExist) && n.cfg.AdminToken == "" {
		// A node not yet in a cluster needs a token of its own, so that an
		// operator can tell it to join one (pastectl --data-dir DIR join);
		// once it is in a cluster, the cluster's token replaces it.
		if token, err = writeAdminToken(n.AdminTokenFile(), newAdminToken()); err == nil {
			n.ownToken.Store(&token)
		}
	}
	switch {
	case err == nil:
		n.adminToken.Store(&token)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if _, err := os.Stat(filepath.Join(n.cfg.DataDir, removedFile)); err == nil {
		n.removal.Store(int32(removedMarked))
	}
	return nil
}

// Removal states of this node.
const (
	inCluster     = iota
	removedMarked // an operator removed it; the marker file says so
	rejoining     // an operator asked it to join again
)

// RemovedCh is closed when this node learns that an operator removed it
// from its cluster while it ran. The process should then stop: a restart
// finds the marker and stays out until an explicit join.
func (n *Node) RemovedCh() <-chan struct{} { return n.removedCh }

// WasRemoved reports whether this node started, or stays, removed from its
// cluster and waits for an explicit join.
func (n *Node) WasRemoved() bool { return n.removal.Load() == removedMarked }

// Rejoin clears the mark of an operator's removal: an explicit join takes
// the node back. The leader readmits it when gossip shows it asks to.
func (n *Node) Rejoin() error {
	if !n.removal.CompareAndSwap(removedMarked, rejoining) {
		return nil
	}
	if err := os.Remove(filepath.Join(n.cfg.DataDir, removedFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("clear removal mark: %w", err)
	}
	n.log.Info("asked to rejoin the cluster after an operator removed this node")
	return nil
}

// Rejoining reports whether this node asked to be taken back after a
// removal and is not back yet.
func (n *Node) Rejoining() bool { return n.removal.Load() == rejoining }

// Readmit replicates an operator's wish to take node id back after a
// removal (fsm.TypeAllowNode).
func (n *Node) Readmit(ctx context.Context, id string) error {
	_, err := n.run(ctx, &fsm.Command{Type: fsm.TypeAllowNode, ID: id})
	return err
}

// identityLoop keeps the data dir in step with the replicated identity:
// the cluster id file, this node's copy of the admin token, and the mark
// of a removal.
func (n *Node) identityLoop() {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var lastFetch time.Time
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
		}
		n.initCluster()
		if err := n.recordCluster(); err != nil {
			n.log.Warn("record cluster id", "err", err)
		}
		if n.needsAdminToken() && time.Since(lastFetch) > 2*time.Second {
			lastFetch = time.Now()
			n.fetchAdminToken()
		}
		n.checkRemoved()
	}
}

// initCluster gives a cluster without an id its id and admin token, once
// this node leads, has passed its term's barrier (so it has applied an
// earlier leader's init, if any) and every member applies protocol 4.
// The token is --admin-token, else this node's token file of an older
// version, else a new one written to the data dir first.
func (n *Node) initCluster() {
	if n.fsm.Cluster() != "" || n.raft.State() != raft.Leader || n.closing.Load() ||
		n.barrierTerm.Load() != n.raft.CurrentTerm() || n.peerProtocol() < fsm.Since(fsm.TypeInitCluster) {
		return
	}
	token := n.cfg.AdminToken
	if token == "" {
		if t := n.adminToken.Load(); t != nil {
			token = *t
		} else {
			t, err := writeAdminToken(n.AdminTokenFile(), newAdminToken())
			if err != nil {
				n.log.Error("make the cluster's admin token", "err", err)
				return
			}
			token = t
		}
	}
	if err := n.saveAdminToken(token); err != nil {
		n.log.Error("keep the cluster's admin token", "err", err)
		return
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := n.run(ctx, &fsm.Command{Type: fsm.TypeInitCluster, ID: id, TokenHash: fsm.HashToken(token)}); err != nil {
		n.log.Warn("give the cluster its id", "err", err)
		return
	}
	n.log.Info("cluster initialised", "cluster_id", n.fsm.Cluster(), "admin_token_file", n.AdminTokenFile())
}

// RotateAdminToken makes a new admin token for the cluster, keeps it in
// this node's data dir, replicates its hash and returns it. The other
// members fetch it within seconds; the old one stops working at once.
func (n *Node) RotateAdminToken(ctx context.Context) (string, error) {
	if n.fsm.Cluster() == "" {
		return "", errors.New("the cluster has no identity yet: upgrade every node first")
	}
	token := newAdminToken()
	if err := n.saveAdminToken(token); err != nil {
		return "", err
	}
	if _, err := n.run(ctx, &fsm.Command{Type: fsm.TypeAdminToken, TokenHash: fsm.HashToken(token)}); err != nil {
		return "", err
	}
	return token, nil
}

// recordCluster writes the cluster id the state machine holds into the
// data dir, where the next start reads it before Raft runs.
func (n *Node) recordCluster() error {
	id := n.fsm.Cluster()
	if id == "" {
		return nil
	}
	if f := n.fileCluster.Load(); f != nil && *f == id {
		return nil
	}
	if err := writeFileAtomic(filepath.Join(n.cfg.DataDir, clusterIDFile), []byte(id+"\n")); err != nil {
		return err
	}
	n.fileCluster.Store(&id)
	return nil
}

// needsAdminToken reports whether the cluster has an admin token that this
// node's data dir lacks.
func (n *Node) needsAdminToken() bool {
	if !n.fsm.HasAdminToken() {
		return false
	}
	t := n.adminToken.Load()
	return t == nil || !n.fsm.IsAdminToken(*t)
}

// fetchAdminToken asks the leader, then every other server, for the
// cluster's admin token, and keeps the first that matches the replicated
// hash.
func (n *Node) fetchAdminToken() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var addrs []string
	if leader, _ := n.raft.LeaderWithID(); leader != "" {
		addrs = append(addrs, string(leader))
	}
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			if string(s.ID) != n.cfg.ID {
				addrs = append(addrs, string(s.Address))
			}
		}
	}
	for _, addr := range addrs {
		var reply adminTokenReply
		if err := n.getFrom(ctx, addr, "/internal/v1/admin-token", 4<<10, &reply); err != nil {
			continue
		}
		if reply.Token == "" || !n.fsm.IsAdminToken(reply.Token) {
			continue
		}
		if err := n.saveAdminToken(reply.Token); err != nil {
			n.log.Warn("keep the cluster's admin token", "err", err)
			return
		}
		n.log.Info("received the cluster's admin token", "file", n.AdminTokenFile())
		return
	}
}

type adminTokenReply struct {
	Token string `msgpack:"t"`
}

// handleAdminToken hands the cluster's admin token to a member. The
// internal RPC runs over mutual TLS pinned to the cluster key, so only a
// node that holds the key, and could write to the log anyway, gets it.
// Without a key the port is loopback only, unless --insecure-cluster,
// where the token is not handed out at all.
func (n *Node) handleAdminToken(w http.ResponseWriter, r *http.Request) {
	if len(n.cfg.ClusterKey) == 0 && !IsLoopback(n.cfg.RaftAddr) {
		http.Error(w, "no cluster key: the admin token is not handed out", http.StatusForbidden)
		return
	}
	var reply adminTokenReply
	if t := n.adminToken.Load(); t != nil && n.fsm.IsAdminToken(*t) {
		reply.Token = *t
	}
	writeMsgpack(w, &reply)
}

// saveAdminToken writes token to this node's token file (0600) unless it
// holds it already, and remembers it.
//
// From then on the token the node made for itself no longer counts
// (IsAdminToken), even where it was the one that became the cluster's,
// so that a rotation retires it too.
func (n *Node) saveAdminToken(token string) error {
	if t := n.adminToken.Load(); t == nil || *t != token {
		if err := writeFileAtomic(n.AdminTokenFile(), []byte(token+"\n")); err != nil {
			return fmt.Errorf("admin token: %w", err)
		}
		n.adminToken.Store(&token)
	}
	n.ownToken.Store(nil)
	return nil
}

// checkRemoved notices that an operator removed this node: once it has
// applied everything its leader committed and the state says it is
// removed, it marks the data dir and closes RemovedCh. A node that starts
// removed, or asked to rejoin, waits instead for the readmission.
func (n *Node) checkRemoved() {
	removed := n.fsm.Removed(n.cfg.ID)
	switch n.removal.Load() {
	case rejoining:
		if !removed && n.HasState() && n.inConfiguration() {
			n.removal.Store(inCluster)
			n.log.Info("back in the cluster after a removal")
		}
		return
	case removedMarked:
		return
	}
	if !removed || n.raft.State() == raft.Leader || n.fsm.Index() < n.raft.CommitIndex() {
		return
	}
	if err := writeFileAtomic(filepath.Join(n.cfg.DataDir, removedFile), []byte(n.ClusterID()+"\n")); err != nil {
		n.log.Error("mark the removal in the data dir", "err", err)
	}
	if n.removal.CompareAndSwap(inCluster, removedMarked) {
		close(n.removedCh)
	}
}

// inConfiguration reports whether this node is in its latest Raft
// configuration.
func (n *Node) inConfiguration() bool {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == raft.ServerID(n.cfg.ID) {
			return true
		}
	}
	return false
}

// newAdminToken returns a random token of 256 bits.
func newAdminToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// writeAdminToken writes token to path unless a token is there already,
// and returns the token path holds: two starts racing keep one token.
func writeAdminToken(path, token string) (string, error) {
	tmp, err := writeTemp(path, []byte(token+"\n"))
	if err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("admin token: %w", err)
	}
	return readAdminToken(path)
}

// readAdminToken reads a token file, refusing one that others may read.
func readAdminToken(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("admin token file %s is readable by others (mode %s): chmod 600 it", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("admin token file %s is empty: delete it to have a new token made", path)
	}
	return token, nil
}

// writeFileAtomic replaces path with b (0600): written whole to a
// temporary file, synced, then renamed, so a crash leaves the old file or
// the new one.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := writeTemp(path, b)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// writeTemp writes b to a new 0600 file beside path and returns its name.
func writeTemp(path string, b []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// identity is what a node says of itself over the internal RPC: the
// leader checks it before it adds the node.
type identity struct {
	ID       string `msgpack:"id"`
	Protocol int    `msgpack:"pv"`
	Cluster  string `msgpack:"cl,omitempty"`
	HasState bool   `msgpack:"s,omitempty"`
	Rejoin   bool   `msgpack:"rj,omitempty"`
}

// PeerIdentity is what a peer proved of itself over the internal RPC.
type PeerIdentity struct {
	Cluster  string // its cluster's id; "" for none, or a version without ids
	HasState bool   // it holds Raft state
	Rejoin   bool   // an operator asked it to rejoin after a removal
}

func (n *Node) handleIdentity(w http.ResponseWriter, r *http.Request) {
	writeMsgpack(w, &identity{
		ID: n.cfg.ID, Protocol: fsm.ProtocolVersion,
		Cluster: n.ClusterID(), HasState: n.HasState(), Rejoin: n.Rejoining(),
	})
}

// ErrNotVerified means a gossip member could not prove over the internal
// RPC that it is the node it claims to be: the leader does not add it.
var ErrNotVerified = errors.New("member not verified")

// VerifyPeer asks the node at raftAddr who it is, over the internal RPC,
// and checks that it is node id. With a cluster key the call runs over
// mutual TLS pinned to the key, so an answer proves that the peer holds the
// key; without one it proves only that the address answers as id.
func (n *Node) VerifyPeer(ctx context.Context, id, raftAddr string) (PeerIdentity, error) {
	var got identity
	if err := n.getFrom(ctx, raftAddr, "/internal/v1/identity", 4<<10, &got); err != nil {
		return PeerIdentity{}, fmt.Errorf("%w: %s: %v", ErrNotVerified, id, err)
	}
	if got.ID != id {
		return PeerIdentity{}, fmt.Errorf("%w: %s is node %q, gossip says %q", ErrNotVerified, raftAddr, got.ID, id)
	}
	return PeerIdentity{Cluster: got.Cluster, HasState: got.HasState, Rejoin: got.Rejoin}, nil
}

// getFrom GETs path of the internal RPC at addr and decodes its msgpack
// answer, of at most limit bytes, into out.
func (n *Node) getFrom(ctx context.Context, addr, path string, limit int64, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", addr, resp.Status)
	}
	if err := msgpack.NewDecoder(io.LimitReader(resp.Body, limit)).Decode(out); err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	return nil
}
