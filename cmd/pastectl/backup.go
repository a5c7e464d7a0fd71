package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/client"
)

func (c *cli) backupCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "backup --out FILE",
		Short: "Write a backup of the whole cluster state",
		Long: "backup streams a consistent snapshot of the whole state (every paste, burn\n" +
			"pastes, delete tokens, expiry times, tombstones) into FILE.tmp next to FILE,\n" +
			"checks its checksum, syncs it and renames it to FILE, so FILE is either the\n" +
			"old file or a complete backup. --timeout bounds each silence of the server,\n" +
			"not the transfer. `pastenode restore --from FILE` rebuilds a cluster.",
		Args: cobra.NoArgs,
	}
	cmd.RunE = c.action(func(ctx context.Context, cl *client.Client, args []string) error {
		return c.backup(ctx, cl, out)
	})
	cmd.Flags().StringVar(&out, "out", "", "the file to write (required)")
	cmd.MarkFlagRequired("out")
	return cmd
}

func (c *cli) backup(ctx context.Context, cl *client.Client, out string) (err error) {
	f, err := createOut(out, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.abort()
		}
	}()

	var bar *progressbar.ProgressBar
	var progress func(done, total int64)
	if isTerminal(c.stderr) {
		progress = func(done, total int64) {
			if bar == nil {
				bar = c.newProgressBar("backing up", total, true)
			}
			bar.Set64(done)
		}
	}
	start := time.Now()
	n, err := cl.Backup(ctx, f, progress)
	if bar != nil {
		bar.Clear()
	}
	if err != nil {
		return err
	}
	if _, err := pastenode.VerifyBackup(f, n); err != nil {
		return fmt.Errorf("the backup received is not complete: %w", err)
	}
	if err := f.commit(); err != nil {
		return err
	}
	took := time.Since(start).Seconds()
	return c.print(transferJSON{File: out, Bytes: n, Seconds: took}, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "backed up %d bytes in %.2fs to %s\n", n, took, out)
		return err
	})
}
