package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pastenode/pastenode/client"
)

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (c *cli) joinCommand() *cobra.Command {
	return c.callCommand(&cobra.Command{
		Use:   "join SEED [SEED...]",
		Short: "Ask the node at --addr to join the cluster of SEED (gossip host:port)",
		Args:  cobra.MinimumNArgs(1),
	}, func(ctx context.Context, cl *client.Client, args []string) (string, error) {
		return "join requested via " + strings.Join(args, ", "), cl.Join(ctx, args)
	})
}

func (c *cli) removeCommand() *cobra.Command {
	return c.callCommand(&cobra.Command{
		Use:   "remove NODE_ID",
		Short: "Remove a node from the cluster",
		Args:  cobra.ExactArgs(1),
	}, func(ctx context.Context, cl *client.Client, args []string) (string, error) {
		return "removed " + args[0], cl.Remove(ctx, args[0])
	})
}

func (c *cli) snapshotCommand() *cobra.Command {
	return c.callCommand(&cobra.Command{
		Use:   "snapshot",
		Short: "Force a Raft snapshot",
		Args:  cobra.NoArgs,
	}, func(ctx context.Context, cl *client.Client, args []string) (string, error) {
		return "snapshot taken", cl.Snapshot(ctx)
	})
}

func (c *cli) healthCommand() *cobra.Command {
	return c.callCommand(&cobra.Command{
		Use:   "health",
		Short: "Exit 0 when the node is ready (GET /readyz), else 1 with the reason",
		Args:  cobra.NoArgs,
	}, func(ctx context.Context, cl *client.Client, args []string) (string, error) {
		return "", cl.Ready(ctx) // quiet: it is a container health check
	})
}

// callCommand completes cmd for one API call whose only output is a
// confirmation line in text mode; -o json stays silent because the exit
// code is the whole answer.
func (c *cli) callCommand(cmd *cobra.Command, call func(context.Context, *client.Client, []string) (string, error)) *cobra.Command {
	cmd.RunE = c.action(func(ctx context.Context, cl *client.Client, args []string) error {
		done, err := call(ctx, cl, args)
		if err == nil && done != "" && c.output == "text" {
			fmt.Fprintln(c.stdout, done)
		}
		return err
	})
	return cmd
}
