package node

import (
	"errors"
	"net"
	"strings"
)

// ErrNeedKey means a node would listen beyond loopback without a cluster
// key. The text says how to make one.
var ErrNeedKey = errors.New("a cluster key is required: make one with `pastenode keygen` and give every node the same --cluster-key, " +
	"or pass --insecure-cluster to let anyone who reaches the port write to the cluster")

// IsLoopback reports whether the listen address addr (host:port) binds only
// loopback: an IP literal in 127.0.0.0/8 or ::1, or "localhost". An empty
// or unspecified host binds every interface.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
