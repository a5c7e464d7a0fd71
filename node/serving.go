package node

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"

	"github.com/pastenode/pastenode"
)

// RecordServing records in the data dir (pastenode.ServingFile, 0600,
// replaced whole) where the node serves its API: addr is the address its
// listener is bound to. A client on this host that knows only the data
// dir then needs nothing else, on any port. A bind to every interface is
// recorded as 127.0.0.1, which such a client can dial: Go's listeners on
// every interface take IPv4 too.
func (n *Node) RecordServing(addr net.Addr, tls bool, basePath string) error {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return fmt.Errorf("record serving address: %w", err)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	s := pastenode.Serving{
		URL:  scheme + "://" + net.JoinHostPort(host, port) + basePath,
		Addr: addr.String(), TLS: tls, BasePath: basePath,
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(n.cfg.DataDir, pastenode.ServingFile), append(b, '\n')); err != nil {
		return fmt.Errorf("record serving address: %w", err)
	}
	return nil
}
