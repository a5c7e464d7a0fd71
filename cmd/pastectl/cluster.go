package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/client"
)

func (c *cli) statusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the cluster's members, leader and store totals",
		Long: "status shows the cluster as the node at --addr sees it, one row per member;\n" +
			"the leader's row is marked with *. It exits 1 when there is no leader.",
		Args: cobra.NoArgs,
	}
	cmd.RunE = c.action(func(ctx context.Context, cl *client.Client, args []string) error {
		st, err := cl.Status(ctx)
		if err != nil {
			return err
		}
		if c.output == "json" {
			err = c.printJSON(st)
		} else {
			err = printStatus(c.stdout, st)
		}
		if err != nil {
			return err
		}
		if st.Node.LeaderID == "" {
			return errors.New("no leader")
		}
		return nil
	})
	return cmd
}

// printStatus writes st as a table. Only the answering node knows its own
// applied index and its last contact with the leader; other cells are "-".
func printStatus(w io.Writer, st *pastenode.Status) error {
	node := st.Node
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tID\tADDRESS\tROLE\tSUFFRAGE\tGOSSIP\tAPPLIED\tLAST CONTACT")
	for _, m := range st.Members {
		leader := m.Leader || (node.LeaderID != "" && m.ID == node.LeaderID)
		mark, role := "", "follower"
		switch {
		case leader:
			mark, role = "*", "leader"
		case m.ID == node.ID && node.State != "":
			role = strings.ToLower(node.State) // e.g. candidate
		case m.Suffrage == "none":
			role = "-"
		}
		applied, contact := "-", "-"
		if m.ID == node.ID {
			applied = strconv.FormatUint(node.AppliedIndex, 10)
		}
		if leader && m.ID != node.ID && node.LeaderID != "" {
			contact = (time.Duration(node.LastContactMs) * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			mark, m.ID, orDash(m.APIAddr), role, orDash(m.Suffrage), orDash(m.Gossip), applied, contact)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	leader := node.LeaderID
	if leader == "" {
		leader = "none"
	}
	_, err := fmt.Fprintf(w, "\npastes: %d, bytes: %d (%s)\nterm: %d, commit index: %d, leader: %s (asked %s)\n",
		st.Store.Pastes, st.Store.Bytes, pastenode.FormatSize(st.Store.Bytes), node.Term, node.CommitIndex, leader, node.ID)
	return err
}

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
