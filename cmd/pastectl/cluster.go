package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/client"
)

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (c *cli) joinCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "join SEED [SEED...]",
		Short: "Ask the node at --addr to join the cluster of SEED (gossip host:port), and wait until it is a voter",
		Long: "Ask the node at --addr to join the cluster of SEED (gossip host:port), and wait, at most --timeout,\n" +
			"until the cluster's leader has made it a voter. A node that holds state of another cluster is refused.",
		Args: cobra.MinimumNArgs(1),
	}
	cmd.RunE = c.action(func(ctx context.Context, cl *client.Client, args []string) error {
		if err := cl.Join(ctx, args); err != nil {
			return err
		}
		if c.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.timeout)
			defer cancel()
		}
		st, err := waitVoter(ctx, cl)
		if err != nil {
			return err
		}
		return c.print(map[string]string{"node": st.Node.ID, "cluster_id": st.Node.ClusterID, "suffrage": "voter", "leader": st.Node.LeaderID},
			func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "%s is a voter of cluster %s (leader %s)\n", st.Node.ID, orDash(st.Node.ClusterID), st.Node.LeaderID)
				return err
			})
	})
	return cmd
}

// waitVoter polls the node's status until it lists itself as a voter of a
// cluster with a leader, or ctx ends.
func waitVoter(ctx context.Context, cl *client.Client) (*pastenode.Status, error) {
	var last string
	for {
		st, err := cl.Status(ctx)
		switch {
		case err != nil:
			last = err.Error()
		case st.Node.LeaderID == "":
			last = "it knows no leader yet"
		default:
			last = "it is not in the cluster's configuration yet"
			for _, m := range st.Members {
				if m.ID == st.Node.ID {
					last = "its suffrage is " + m.Suffrage
					if m.Suffrage == "voter" {
						return st, nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("join requested, but the node is no voter yet: %s (pastectl status shows where it stands)", last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (c *cli) removeCommand() *cobra.Command {
	return c.callCommand(&cobra.Command{
		Use:   "remove NODE_ID",
		Short: "Remove a node from the cluster",
		Args:  cobra.ExactArgs(1),
	}, func(ctx context.Context, cl *client.Client, args []string) (string, any, error) {
		return "removed " + args[0], map[string]string{"removed": args[0]}, cl.Remove(ctx, args[0])
	})
}

func (c *cli) rotateTokenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rotate-admin-token",
		Short: "Give the cluster a new admin token and print it; the old one stops working",
		Long: "Give the cluster a new admin token and print it. The old token stops working on every node at\n" +
			"once; each node's data dir gets the new one within seconds. A node started with --admin-token\n" +
			"keeps accepting that token too, until it is restarted without it.",
		Args: cobra.NoArgs,
	}
	cmd.RunE = c.action(func(ctx context.Context, cl *client.Client, args []string) error {
		token, err := cl.RotateAdminToken(ctx)
		if err != nil {
			return err
		}
		return c.print(pastenode.AdminToken{Token: token}, func(w io.Writer) error {
			_, err := fmt.Fprintln(w, token)
			return err
		})
	})
	return cmd
}

func (c *cli) snapshotCommand() *cobra.Command {
	return c.callCommand(&cobra.Command{
		Use:   "snapshot",
		Short: "Force a Raft snapshot",
		Args:  cobra.NoArgs,
	}, func(ctx context.Context, cl *client.Client, args []string) (string, any, error) {
		return "snapshot taken", map[string]bool{"snapshot": true}, cl.Snapshot(ctx)
	})
}

func (c *cli) healthCommand() *cobra.Command {
	return c.callCommand(&cobra.Command{
		Use:   "health",
		Short: "Exit 0 when the node is ready (GET /readyz), else 1 with the reason",
		Args:  cobra.NoArgs,
	}, func(ctx context.Context, cl *client.Client, args []string) (string, any, error) {
		return "", map[string]bool{"ready": true}, cl.Ready(ctx) // quiet in text: it is a container health check
	})
}

// callCommand completes cmd for one API call whose output is a
// confirmation: a line done in text ("" for none), result with -o json.
func (c *cli) callCommand(cmd *cobra.Command, call func(context.Context, *client.Client, []string) (done string, result any, err error)) *cobra.Command {
	cmd.RunE = c.action(func(ctx context.Context, cl *client.Client, args []string) error {
		done, result, err := call(ctx, cl, args)
		if err != nil {
			return err
		}
		return c.print(result, func(w io.Writer) error {
			if done == "" {
				return nil
			}
			_, err := fmt.Fprintln(w, done)
			return err
		})
	})
	return cmd
}
