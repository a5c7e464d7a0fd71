package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pastenode/pastenode/internal/freeport"
	"github.com/pastenode/pastenode/node"
)

func TestClusterKeyRequiredBeyondLoopback(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	public := []string{"--raft-addr", "0.0.0.0:7000", "--gossip-addr", "0.0.0.0:7946", "--advertise-host", "node1"}
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		wantUsage string // "" for none
	}{
		{name: "loopback default", args: nil},
		{name: "localhost", args: []string{"--raft-addr", "localhost:7000", "--gossip-addr", "localhost:7946"}},
		{name: "public raft", args: []string{"--raft-addr", "10.0.0.5:7000"}, wantUsage: "--raft-addr 10.0.0.5:7000 is not loopback"},
		{name: "public gossip", args: []string{"--gossip-addr", "0.0.0.0:7946"}, wantUsage: "--gossip-addr 0.0.0.0:7946 is not loopback"},
		{name: "public with a key", args: append([]string{"--cluster-key", key}, public...)},
		{name: "public with the key's twin", args: public, env: map[string]string{"PASTE_CLUSTER_KEY": key}},
		{name: "public and insecure", args: append([]string{"--insecure-cluster"}, public...)},
		{name: "public and the insecure twin", args: public, env: map[string]string{"PASTE_INSECURE_CLUSTER": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			_, err := parseFlags(append([]string{"--node-id", "n1"}, tt.args...), env)
			if tt.wantUsage == "" {
				if err != nil {
					t.Fatalf("parseFlags: %v", err)
				}
				return
			}
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantUsage) ||
				!strings.Contains(err.Error(), "pastenode keygen") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want a one-line usage error about %q that says how to make a key", err, tt.wantUsage)
			}
		})
	}
}

func TestKeygenPrintsAFreshKey(t *testing.T) {
	var keys []string
	for range 2 {
		var out bytes.Buffer
		if err := keygen(nil, &out); err != nil {
			t.Fatal(err)
		}
		k := strings.TrimSpace(out.String())
		raw, err := base64.StdEncoding.DecodeString(k)
		if err != nil || len(raw) != 32 || node.CheckClusterKey(raw) != nil {
			t.Fatalf("keygen printed %q: want base64 of 32 bytes", out.String())
		}
		if _, err := parseFlags([]string{"--node-id", "n1", "--cluster-key", k}, noEnv); err != nil {
			t.Fatalf("--cluster-key refuses keygen's key: %v", err)
		}
		keys = append(keys, k)
	}
	if keys[0] == keys[1] {
		t.Fatal("keygen printed the same key twice")
	}
	var ue usageError
	if err := keygen([]string{"extra"}, io.Discard); !errors.As(err, &ue) {
		t.Fatalf("keygen with an argument: %v, want a usage error", err)
	}
}

func TestInsecureClusterWarnsAtEveryStart(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--node-id", "n1", "--data-dir", dir, "--http-addr", freeport.Addr(t), "--raft-addr", freeport.Addr(t),
		"--gossip-addr", freeport.Addr(t), "--insecure-cluster", "--raft-time-scale", "0.1"}
	for start := range 2 {
		var logs lockedBuffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- run(ctx, args, io.Discard, &logs) }()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(logs.String(), "msg=serving") {
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("start %d: node not serving:\n%s", start, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("start %d: %v", start, err)
		}
		if !strings.Contains(logs.String(), "level=WARN msg=\"--insecure-cluster") {
			t.Fatalf("start %d logged no warning about --insecure-cluster:\n%s", start, logs.String())
		}
	}
}

func TestRunRefusesADamagedRaftDB(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "raft.db")
	if err := os.WriteFile(path, bytes.Repeat([]byte{0xee}, 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"--node-id", "n1", "--data-dir", dir, "--http-addr", freeport.Addr(t),
		"--raft-addr", freeport.Addr(t), "--gossip-addr", freeport.Addr(t)}, io.Discard, io.Discard)
	var ue usageError
	if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "Way out") {
		t.Fatalf("run on a damaged raft.db: %v; want an error (exit 1) naming %s and the way out", err, path)
	}
}
