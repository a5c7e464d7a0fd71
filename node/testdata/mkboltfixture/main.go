// Command mkboltfixture writes the data dir of TestMigrateBoltFixture: a
// single node, as the pastenode of its commit writes it, that took a
// snapshot and then more writes, so that its log holds entries both
// covered by the snapshot and after it.
//
// It drives package node as it is where it runs, so it makes a fixture of
// the old layout (the Raft log in raft.db) only at a commit from before
// the log moved to wal/, such as 8fb1ff5:
//
//	git archive 8fb1ff5 | tar -x -C /tmp/old
//	cp -r node/testdata/mkboltfixture /tmp/old/node/testdata/
//	(cd /tmp/old && go run ./node/testdata/mkboltfixture -out "$PWD/node/testdata/boltlog")
//
// Next to the data dir it writes pastes.json: every live paste's id and
// content, and the ids deleted, for the test to check.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"

	"github.com/pastenode/pastenode/node"
)

func main() {
	out := flag.String("out", "", "directory to write the data dir and pastes.json into; must not exist")
	flag.Parse()
	if *out == "" {
		log.Fatal("-out is required")
	}
	if err := run(*out); err != nil {
		log.Fatal(err)
	}
}

// fixture is pastes.json.
type fixture struct {
	Pastes  map[string]string `json:"pastes"`  // id: content
	Deleted []string          `json:"deleted"` // ids deleted after the snapshot
}

func run(out string) error {
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("%s exists", out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	n, err := node.New(node.Config{
		ID: "n1", DataDir: filepath.Join(out, "data"), RaftAddr: addr, BootstrapExpect: 1, TimeScale: 0.1,
		// Few trailing entries, so that the snapshot compacts the log and
		// it no longer starts at entry 1.
		TrailingLogs: 4,
	})
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := n.Open(ctx); err != nil {
		return err
	}
	defer n.Close()
	<-n.CaughtUp()
	f := fixture{Pastes: map[string]string{}}
	create := func(i int) (string, error) {
		content := fmt.Sprintf("paste %d of the bolt-log fixture\n", i)
		p, err := n.Create(ctx, node.CreateRequest{Content: []byte(content), DeleteToken: "token"})
		if err != nil {
			return "", err
		}
		f.Pastes[p.ID] = content
		return p.ID, nil
	}
	for i := range 60 {
		if _, err := create(i); err != nil {
			return err
		}
	}
	if _, err := n.Snapshot(); err != nil {
		return err
	}
	// A tail short enough that Close takes no snapshot of it: the new
	// version must replay it from the log it migrated.
	var last string
	for i := 60; i < 66; i++ {
		if last, err = create(i); err != nil {
			return err
		}
	}
	if err := n.Delete(ctx, last, "token", false); err != nil {
		return err
	}
	delete(f.Pastes, last)
	f.Deleted = append(f.Deleted, last)
	if err := n.Close(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(f, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "pastes.json"), append(b, '\n'), 0o644)
}
