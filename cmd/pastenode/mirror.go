package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/debug"

	"github.com/pastenode/pastenode/mirror"
)

// mirrorConfig is everything the flags of `pastenode mirror` say.
type mirrorConfig struct {
	cdb      string
	httpAddr string
	log      logConfig
}

// parseMirrorFlags reads the command line of `pastenode mirror`, then the
// PASTE_* environment for every flag the command line did not set.
func parseMirrorFlags(args []string, env func(string) (string, bool)) (*mirrorConfig, error) {
	var c mirrorConfig
	fs, checkLog := c.flagSet()
	if err := parseWithEnv(fs, args, env); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageError{helpHint{fmt.Errorf("unexpected argument %q", fs.Arg(0)), fs.Name()}}
	}
	if c.cdb == "" {
		return nil, usageError{errors.New("--cdb is required: the file written by pastectl export")}
	}
	if _, _, err := net.SplitHostPort(c.httpAddr); err != nil {
		return nil, badFlag("http-addr", err)
	}
	if err := checkLog(); err != nil {
		return nil, err
	}
	return &c, nil
}

// flagSet returns the flags of `pastenode mirror`, into c; check reads the
// log flags once they are parsed.
func (c *mirrorConfig) flagSet() (fs *flag.FlagSet, check func() error) {
	fs = newFlagSet("pastenode mirror")
	fs.StringVar(&c.cdb, "cdb", "", "the exported archive to serve (required)")
	fs.StringVar(&c.httpAddr, "http-addr", "127.0.0.1:8080", "HTTP address to serve on")
	return fs, c.log.addFlags(fs)
}

// runMirror serves the archive until ctx ends, then drains the HTTP server
// and unmaps the archive.
func runMirror(ctx context.Context, c *mirrorConfig, log *slog.Logger) error {
	m, err := mirror.New(mirror.Config{Path: c.cdb, Logger: log})
	if err != nil {
		return usageError{err}
	}
	if err := m.Start(ctx); err != nil {
		return err
	}
	defer m.Close()

	tuneMirrorGC(os.LookupEnv)
	ln, err := publicLimits.listen(c.httpAddr)
	if err != nil {
		return fmt.Errorf("listen on http addr: %w", err)
	}
	srv := publicLimits.limitFast(m.FastServer(), log)
	log.Info("serving mirror", "http", ln.Addr().String(), "cdb", c.cdb, "pastes", m.Pastes())

	return serveFastUntil(ctx, srv, ln, log)
}

// The mirror's garbage collector settings, unless GOGC says otherwise. Its
// heap is small (the archive is mapped, not read in), so at GOGC=100 the
// collector would run every 4 MB of garbage, dozens of times a second
// under load, a large share of a raw read's CPU. Five times the live
// heap costs a few MB; the memory limit (unless GOMEMLIMIT sets one) keeps
// a heap of many prepared answers from growing five times over.
const (
	mirrorGCPercent   = 400
	mirrorMemoryLimit = 256 << 20
)

// tuneMirrorGC applies the mirror's collector settings where env (the
// environment) leaves them to it.
func tuneMirrorGC(env func(string) (string, bool)) {
	if _, set := env("GOGC"); set {
		return
	}
	debug.SetGCPercent(mirrorGCPercent)
	if _, set := env("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(mirrorMemoryLimit)
	}
}
