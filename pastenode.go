// Package pastenode holds the wire types of pastenode's HTTP contract: the JSON
// that a node sends and that its clients read. Server (api, mirror) and client
// (client, pastectl) share them, so both sides agree on one definition; an
// export writes Meta with AppendJSON, encoding/json's bytes made faster. Beside
// them sits FormatSize, the one way both the web pages and pastectl show a
// byte count, the backup file's container (BackupWriter, VerifyBackup),
// which the server writes and pastectl and restore check, and the check of
// an export's tail (CheckExportTail). The package imports
// nothing but the standard library.
package pastenode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// CreateRequest is the JSON body of POST /api/v1/pastes.
type CreateRequest struct {
	Content   string `json:"content"`
	Title     string `json:"title,omitempty"`
	Lang      string `json:"lang,omitempty"`
	Expire    string `json:"expire,omitempty"`
	Burn      bool   `json:"burn,omitempty"`
	Encrypted bool   `json:"encrypted,omitempty"`
}

// Created is the answer to a create: always on /api/v1/pastes, and on POST /
// when the client accepts application/json.
type Created struct {
	ID          string     `json:"id"`
	URL         string     `json:"url"`
	RawURL      string     `json:"raw_url"`
	DeleteToken string     `json:"delete_token"`
	ExpiresAt   *time.Time `json:"expires_at"`
	Burn        bool       `json:"burn"`
	Lang        string     `json:"lang"`
	Title       string     `json:"title"`
	Size        int        `json:"size"`
}

// Meta is the answer to GET /api/v1/pastes/{id}: everything but the content.
type Meta struct {
	ID        string     `json:"id"`
	URL       string     `json:"url"`
	RawURL    string     `json:"raw_url"`
	Title     string     `json:"title"`
	Lang      string     `json:"lang"`
	Size      int        `json:"size"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	Burn      bool       `json:"burn"`
	Encrypted bool       `json:"encrypted"`
}

// Status is the answer to GET /api/v1/status.
type Status struct {
	Node    NodeStatus  `json:"node"`
	Members []Member    `json:"members"`
	Store   StoreStatus `json:"store"`
}

// NodeStatus describes the node that answered.
type NodeStatus struct {
	ID string `json:"id"`
	// ClusterID is the id of the node's cluster, "" while it has none.
	ClusterID     string `json:"cluster_id,omitempty"`
	State         string `json:"state"`
	LeaderID      string `json:"leader_id"`
	Term          uint64 `json:"term"`
	CommitIndex   uint64 `json:"commit_index"`
	AppliedIndex  uint64 `json:"applied_index"`
	LastContactMs int64  `json:"last_contact_ms"`
	Version       string `json:"version"`
	// UptimeS is how long the node has been serving, in seconds.
	UptimeS float64 `json:"uptime_s"`
	// Ready is what /readyz says; ReadyReason why not, when not.
	Ready       bool   `json:"ready"`
	ReadyReason string `json:"ready_reason,omitempty"`
	// StorageFull is set while the node refuses creates with 507;
	// StorageReason says why.
	StorageFull   bool   `json:"storage_full,omitempty"`
	StorageReason string `json:"storage_reason,omitempty"`
}

// Member is one node of the cluster as this node sees it, merged from the
// Raft configuration and gossip.
type Member struct {
	ID         string `json:"id"`
	APIAddr    string `json:"api_addr"`
	RaftAddr   string `json:"raft_addr"`
	GossipAddr string `json:"gossip_addr"`
	Gossip     string `json:"gossip"`   // alive, suspect, dead, left
	Suffrage   string `json:"suffrage"` // voter, nonvoter, none
	Leader     bool   `json:"leader"`
	// Unreachable is set for a member that gossip finds dead or gone, or
	// that the leader's Raft heartbeats fail to reach, which it learns
	// within a heartbeat of the member going down.
	Unreachable bool `json:"unreachable,omitempty"`
}

// StoreStatus holds the store's totals.
type StoreStatus struct {
	Pastes int64 `json:"pastes"`
	Bytes  int64 `json:"bytes"`
}

// AdminToken is the answer of POST /api/v1/admin-token: the cluster's new
// admin token.
type AdminToken struct {
	Token string `json:"admin_token"`
}

// JoinRequest is the body of POST /api/v1/cluster/join.
type JoinRequest struct {
	Addrs []string `json:"addrs"`
}

// ServingFile is the file in a node's data dir where the node records,
// as a Serving, how it serves its API, so that `pastectl --data-dir DIR`
// on the node's host finds it on any port.
const ServingFile = "serving.json"

// Serving is where a node serves its API, as ServingFile holds it.
type Serving struct {
	// URL is the base URL a client on the node's host dials: scheme,
	// host:port (loopback for a node bound to every interface) and base
	// path, as "https://127.0.0.1:8443/paste".
	URL      string `json:"url"`
	Addr     string `json:"addr"` // the address the node listens on
	TLS      bool   `json:"tls"`
	BasePath string `json:"base_path,omitempty"`
}

// OutcomeHeader is set to "unknown" on the error answer of a write that
// may still be applied, or may already be (a cluster too busy to confirm
// it in time): a client must not send such a write again blindly, as a
// create would make a second paste. Error answers without it did nothing.
const OutcomeHeader = "X-Paste-Outcome"

// ErrorBody is the JSON form of every 4xx and 5xx answer.
type ErrorBody struct {
	Error string `json:"error"`
}

// ExportTailType is the media type of an export in tail order: the CDB
// file from its byte ExportTailSize on, then its first ExportTailSize
// bytes, the table directory, which the server knows only once it has
// built the rest. A client that can write its file out of order asks for
// it with Accept: it gets the archive's bytes as the server makes them,
// rather than once the whole archive is made, and the paste count as the
// trailer X-Export-Pastes.
const ExportTailType = "application/vnd.pastenode.cdb-tail"

// ExportTailSize is the length of the tail that an export in tail order
// ends with, which belongs at the front of the file.
const ExportTailSize = 2048

// CheckExportTail reports whether tail is the table directory of a CDB
// file of size bytes, as the tail of a whole export in tail order is: 256
// little-endian (position, slots) pairs whose tables start after the
// directory, follow one another and end at the end of the file. A client
// checks it before it puts the tail in place: an answer cut short where
// the cut cannot be told from its end (HTTP/1.0) leaves bytes that are
// not a directory.
func CheckExportTail(tail []byte, size int64) error {
	if len(tail) != ExportTailSize {
		return fmt.Errorf("export tail of %d bytes, want %d", len(tail), ExportTailSize)
	}
	next := int64(ExportTailSize)
	for t := 0; t < ExportTailSize; t += 8 {
		pos := int64(binary.LittleEndian.Uint32(tail[t:]))
		slots := int64(binary.LittleEndian.Uint32(tail[t+4:]))
		if t == 0 {
			next = pos
		}
		if pos != next || pos < ExportTailSize {
			return errors.New("export tail is not a CDB table directory: the export was cut short")
		}
		next = pos + 8*slots
	}
	if next != size {
		return fmt.Errorf("export tail's tables end at %d, the file at %d: the export was cut short", next, size)
	}
	return nil
}

// URLSafeID reports whether id is made of the characters that a URL path
// keeps as they are: letters, digits, "-" and "_". Every id a node draws
// is; an imported one must be (node.CheckID); the pages may write such an
// id without escaping it, and an export can name a file after it.
func URLSafeID(id string) bool {
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
