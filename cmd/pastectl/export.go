package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pastenode/pastenode/client"
)

func (c *cli) exportCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "export --out FILE.cdb",
		Short: "Write a CDB export of every live paste",
		Long: "export streams the cluster's CDB export into FILE.tmp next to FILE, syncs it\n" +
			"and renames it to FILE, so FILE is either the old file or a complete export.\n" +
			"A progress bar is shown on stderr when it is a terminal.",
		Args: cobra.NoArgs,
	}
	cmd.RunE = c.action(func(ctx context.Context, cl *client.Client, args []string) error {
		return c.export(ctx, cl, out)
	})
	cmd.Flags().StringVar(&out, "out", "", "the file to write (required)")
	cmd.MarkFlagRequired("out")
	return cmd
}

func (c *cli) export(ctx context.Context, cl *client.Client, out string) (err error) {
	tmp := out + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()

	var bar *progressbar.ProgressBar
	var progress func(done, total int64)
	if isTerminal(c.stderr) {
		progress = func(done, total int64) {
			if bar == nil {
				bar = c.newProgressBar(total)
			}
			bar.Set64(done)
		}
	}
	w := &exportFile{File: f, pastes: -1}
	start := time.Now()
	n, err := cl.Export(ctx, w, progress)
	if bar != nil {
		bar.Clear()
	}
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	// Make the rename itself durable; where directories cannot be synced
	// the file is still complete, so this is best effort.
	if d, err := os.Open(filepath.Dir(out)); err == nil {
		d.Sync()
		d.Close()
	}

	took := time.Since(start).Seconds()
	if w.pastes >= 0 {
		fmt.Fprintf(c.stdout, "exported %d pastes, %d bytes in %.2fs to %s\n", w.pastes, n, took, out)
	} else {
		fmt.Fprintf(c.stdout, "exported %d bytes in %.2fs to %s\n", n, took, out)
	}
	return nil
}

// exportFile is the export's temporary file; it records the paste count
// that client.Client.Export reports when the server sends one.
type exportFile struct {
	*os.File
	pastes int64 // -1: unknown
}

func (f *exportFile) SetExportPastes(n int64) { f.pastes = n }

func (c *cli) newProgressBar(total int64) *progressbar.ProgressBar {
	if total <= 0 {
		total = -1 // a spinner: the size is unknown
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(c.stderr),
		progressbar.OptionSetDescription("exporting"),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		// No ticker goroutine: writes drive the spinner.
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionClearOnFinish(),
	)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
