package node

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		return Config{ID: "n1", DataDir: t.TempDir(), RaftAddr: "127.0.0.1:7000"}
	}
	tests := []struct {
		name    string
		change  func(*Config)
		wantErr string
	}{
		{"valid", func(*Config) {}, ""},
		{"no id", func(c *Config) { c.ID = "" }, "node id is empty"},
		{"id with a slash", func(c *Config) { c.ID = "a/b" }, "no spaces or slashes"},
		{"no data dir", func(c *Config) { c.DataDir = "" }, "data dir is empty"},
		{"bad raft addr", func(c *Config) { c.RaftAddr = "nope" }, "raft addr"},
		{"unspecified advertise", func(c *Config) { c.RaftAddr = "0.0.0.0:7000" }, "set --advertise-host"},
		{"port zero", func(c *Config) { c.RaftAddr = "127.0.0.1:0" }, "a fixed port"},
		{"short key", func(c *Config) { c.ClusterKey = make([]byte, 5) }, "want 16, 24 or 32"},
		{"negative expect", func(c *Config) { c.BootstrapExpect = -1 }, "must be 0 or more"},
		{"public without a key", func(c *Config) { c.RaftAddr = "10.1.2.3:7000" }, "pastenode keygen"},
		{"public with a key", func(c *Config) { c.RaftAddr, c.ClusterKey = "10.1.2.3:7000", make([]byte, 32) }, ""},
		{"public and insecure", func(c *Config) { c.RaftAddr, c.InsecureCluster = "10.1.2.3:7000", true }, ""},
		{"localhost without a key", func(c *Config) { c.RaftAddr = "localhost:7000" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(&c)
			err := c.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				if d := c.withDefaults(); d.AdvertiseAddr != c.RaftAddr || d.WriteHold == 0 || d.Logger == nil {
					t.Fatalf("defaults not filled in: %+v", d)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestDataDirKeepsItsNodeID(t *testing.T) {
	dir := t.TempDir()
	if err := checkNodeID(dir, "n1"); err != nil {
		t.Fatal(err)
	}
	if err := checkNodeID(dir, "n1"); err != nil {
		t.Fatalf("same id again: %v", err)
	}
	if err := checkNodeID(dir, "n2"); !errors.Is(err, ErrIDMismatch) {
		t.Fatalf("another id on the same data dir: err = %v, want ErrIDMismatch", err)
	}
}

// TestClusterTLSAdmitsOnlyTheSameKey checks the Raft port's mutual TLS: a
// peer holding another cluster key fails the handshake either way round.
func TestClusterTLSAdmitsOnlyTheSameKey(t *testing.T) {
	keyA := []byte("0123456789abcdef")
	keyB := []byte("fedcba9876543210")
	tests := []struct {
		name           string
		server, client []byte
		wantOK         bool
	}{
		{"same key", keyA, keyA, true},
		{"client with another key", keyA, keyB, false},
		{"server with another key", keyB, keyA, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := handshake(t, tt.server, tt.client)
			if (got == nil) != tt.wantOK {
				t.Fatalf("handshake error = %v, want success %v", got, tt.wantOK)
			}
		})
	}
}

func handshake(t *testing.T, serverKey, clientKey []byte) error {
	t.Helper()
	serverConf, err := clusterTLS(serverKey)
	if err != nil {
		t.Fatal(err)
	}
	clientConf, err := clusterTLS(clientKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	serverErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			serverErr <- err
			return
		}
		defer c.Close()
		serverErr <- tls.Server(c, serverConf).Handshake()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	clientErr := tls.Client(raw, clientConf).HandshakeContext(ctx)
	if err := <-serverErr; err != nil {
		return err
	}
	return clientErr
}

// TestNoPipelinedReplication: the Raft transport refuses to pipeline
// AppendEntries, so the leader sends each follower one at a time; raft
// 1.7.3's pipeline can deadlock when a follower answers a newer term or a
// failure mid-send (see the transport's config in listen).
func TestNoPipelinedReplication(t *testing.T) {
	n := openNode(t)
	if _, err := n.trans.AppendEntriesPipeline("other", "127.0.0.1:1"); !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		t.Fatalf("AppendEntriesPipeline: err = %v, want %v", err, raft.ErrPipelineReplicationNotSupported)
	}
}
