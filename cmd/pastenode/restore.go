package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/node"
)

// restoreConfig is what the flags of `pastenode restore` say.
type restoreConfig struct {
	From          string
	DataDir       string
	NodeID        string
	RaftAddr      string
	AdvertiseHost string
	advertise     string // host:port peers dial
}

// parseRestoreFlags reads the flags of `pastenode restore`, then the
// PASTE_* environment for every flag the command line did not set. The
// node flags mean what they mean to the node that will start on the dir.
func parseRestoreFlags(args []string, env func(string) (string, bool)) (*restoreConfig, error) {
	var c restoreConfig
	fs := c.flagSet()
	if err := parseWithEnv(fs, args, env); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageError{helpHint{fmt.Errorf("unexpected argument %q", fs.Arg(0)), fs.Name()}}
	}
	if c.From == "" {
		return nil, usageError{errors.New("--from is required: the backup file to restore")}
	}
	host, port, err := net.SplitHostPort(c.RaftAddr)
	if err != nil {
		return nil, badFlag("raft-addr", err)
	}
	if c.AdvertiseHost == "" {
		c.AdvertiseHost = host
	}
	c.advertise = net.JoinHostPort(c.AdvertiseHost, port)
	return &c, nil
}

// flagSet returns the flags of `pastenode restore`, into c.
func (c *restoreConfig) flagSet() *flag.FlagSet {
	fs := newFlagSet("pastenode restore")
	host, _ := os.Hostname()
	fs.StringVar(&c.From, "from", "", "the backup file written by pastectl backup (required)")
	fs.StringVar(&c.DataDir, "data-dir", "./pastenode-data", "the data dir to prepare: must not exist or be empty")
	fs.StringVar(&c.NodeID, "node-id", host, "the id the restored node will run with")
	fs.StringVar(&c.RaftAddr, "raft-addr", "127.0.0.1:7000", "the Raft address the restored node will listen on")
	fs.StringVar(&c.AdvertiseHost, "advertise-host", "", "host peers dial (default: host of --raft-addr)")
	return fs
}

// runRestore prepares a data dir from a backup, checking the whole file
// before it writes anything.
func runRestore(c *restoreConfig, stdout io.Writer) error {
	info, err := node.Restore(node.RestoreConfig{
		From: c.From, DataDir: c.DataDir, ID: c.NodeID, AdvertiseAddr: c.advertise,
	})
	if err != nil {
		if errors.Is(err, pastenode.ErrBackupVersion) || errors.Is(err, pastenode.ErrBackupCorrupt) {
			return fmt.Errorf("refusing %s, nothing was written: %w", c.From, err)
		}
		return fmt.Errorf("restore: %w", err)
	}
	fmt.Fprintf(stdout, "restored %d pastes (%s) at log index %d into %s as node %q.\n",
		info.Pastes, pastenode.FormatSize(info.Bytes), info.Index, c.DataDir, c.NodeID)
	fmt.Fprintf(stdout, "Start it with: pastenode --data-dir %s --node-id %s --raft-addr %s --bootstrap-expect 1\n",
		c.DataDir, c.NodeID, c.RaftAddr)
	fmt.Fprintln(stdout, "then start the other nodes on empty data dirs with --bootstrap-expect 0 --join HOST:GOSSIP_PORT.")
	return nil
}
