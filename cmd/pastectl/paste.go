package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/pastenode/pastenode/client"
)

func (c *cli) putCommand() *cobra.Command {
	var opts client.PutOptions
	cmd := &cobra.Command{
		Use:   "put [FILE]",
		Short: "Create a paste from FILE, or from stdin",
		Long: "put creates a paste from FILE, or from stdin when FILE is absent or \"-\".\n" +
			"It prints the paste's URL on stdout and the delete token on stderr;\n" +
			"with -o json it prints the whole answer, token included, on stdout.",
		Args: cobra.MaximumNArgs(1),
	}
	cmd.RunE = c.action(func(ctx context.Context, cl *client.Client, args []string) error {
		in := c.stdin
		if len(args) == 1 && args[0] != "-" {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		created, err := cl.Put(ctx, in, opts)
		if err != nil {
			return err
		}
		if c.output == "json" {
			return c.printJSON(created)
		}
		fmt.Fprintln(c.stdout, created.URL)
		fmt.Fprintf(c.stderr, "delete token: %s\n", created.DeleteToken)
		return nil
	})
	f := cmd.Flags()
	f.StringVar(&opts.Lang, "lang", "", "syntax-highlighting language, e.g. go (default plain text)")
	f.StringVar(&opts.Expire, "expire", "", "expiry: never, or a duration like 10m, 1h, 1d, 1w (default the server's)")
	f.BoolVar(&opts.Burn, "burn", false, "destroy the paste after its first read")
	f.StringVar(&opts.Title, "title", "", "title shown on the paste's page")
	return cmd
}

func (c *cli) getCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get ID_OR_URL",
		Short: "Print a paste's raw content",
		Long: "get writes the exact bytes of a paste to stdout. ID_OR_URL is an id or a\n" +
			"paste URL; the paste is fetched from --addr. Reading a burn paste destroys it.",
		Args: cobra.ExactArgs(1),
	}
	cmd.RunE = c.action(func(ctx context.Context, cl *client.Client, args []string) error {
		content, err := cl.Get(ctx, args[0])
		if err != nil {
			return err
		}
		_, err = c.stdout.Write(content)
		return err
	})
	return cmd
}

func (c *cli) deleteCommand() *cobra.Command {
	var token string
	cmd := c.callCommand(&cobra.Command{
		Use:   "delete ID --token TOKEN",
		Short: "Delete a paste",
		Long:  "delete deletes a paste with its delete token; with --admin-token the token may be omitted.",
		Args:  cobra.ExactArgs(1),
	}, func(ctx context.Context, cl *client.Client, args []string) (string, error) {
		if token == "" && c.adminToken == "" {
			return "", usagef("delete needs --token (or --admin-token)")
		}
		return "deleted " + args[0], cl.Delete(ctx, args[0], token)
	})
	cmd.Flags().StringVar(&token, "token", "", "the delete token that put printed")
	return cmd
}
