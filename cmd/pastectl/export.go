package main

import (
	"context"
	"fmt"
	"io"
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
			"The server sends the file as it builds it (its first 2 KiB, which it knows last,\n" +
			"come at the end and are written in their place); an older server builds the\n" +
			"whole file first and reports its progress meanwhile. --timeout bounds each\n" +
			"silence of the server, not the whole export.\n" +
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
	f, err := createOut(out, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.abort()
		}
	}()

	w := &exportFile{outFile: f, pastes: -1}
	var progress func(done, total int64)
	if isTerminal(c.stderr) {
		progress = func(done, total int64) {
			if w.bar == nil || w.building {
				w.clearBar()
				w.bar = c.newProgressBar("exporting", total, true)
			}
			w.bar.Set64(done)
		}
		w.newBar = func(total int64) *progressbar.ProgressBar {
			return c.newProgressBar("building", total, false)
		}
	}
	start := time.Now()
	n, err := cl.Export(ctx, w, progress)
	w.clearBar()
	if err != nil {
		return err
	}
	if err := f.commit(); err != nil {
		return err
	}

	took := time.Since(start).Seconds()
	summary := transferJSON{File: out, Bytes: n, Seconds: took}
	if w.pastes >= 0 {
		summary.Pastes = &w.pastes
	}
	return c.print(summary, func(out io.Writer) error {
		if w.pastes >= 0 {
			_, err := fmt.Fprintf(out, "exported %d pastes, %d bytes in %.2fs to %s\n", w.pastes, n, took, summary.File)
			return err
		}
		_, err := fmt.Fprintf(out, "exported %d bytes in %.2fs to %s\n", n, took, summary.File)
		return err
	})
}

// transferJSON is what export and backup print with -o json once done:
// the progress bar is for terminals only.
type transferJSON struct {
	File    string  `json:"file"`
	Bytes   int64   `json:"bytes"`
	Pastes  *int64  `json:"pastes,omitempty"` // export only, when the server says
	Seconds float64 `json:"seconds"`
}

// exportFile is the export's temporary file; it records the paste count
// that client.Client.Export reports when the server sends one, and shows
// the server's progress while it builds the export.
type exportFile struct {
	*outFile
	pastes int64 // -1: unknown

	newBar   func(total int64) *progressbar.ProgressBar // nil: no bar
	bar      *progressbar.ProgressBar
	building bool // bar counts the pastes the server has built
}

func (f *exportFile) SetExportPastes(n int64) { f.pastes = n }

// ExportProgress shows how many pastes the server has put in the export.
func (f *exportFile) ExportProgress(pastes, total int64) {
	if f.newBar == nil {
		return
	}
	if f.bar == nil {
		f.bar, f.building = f.newBar(total), true
	}
	f.bar.Set64(pastes)
}

func (f *exportFile) clearBar() {
	if f.bar != nil {
		f.bar.Clear()
		f.bar, f.building = nil, false
	}
}

func (c *cli) newProgressBar(what string, total int64, bytes bool) *progressbar.ProgressBar {
	if total <= 0 {
		total = -1 // a spinner: the size is unknown
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(c.stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(bytes),
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
