// Command pastenode runs one node of a pastenode cluster: the Raft-replicated
// paste store, its HTTP API and web UI. `pastenode mirror` serves an
// exported CDB file read-only instead.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(os.Stderr, "pastenode:", err)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pastenode:", err)
		os.Exit(1)
	}
}

// usageError is a bad command line or configuration: exit code 2.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// run parses args and runs a node, or the mirror, until ctx ends.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "mirror" {
		cfg, err := parseMirrorFlags(args[1:], os.LookupEnv, stderr)
		if err != nil {
			return err
		}
		return runMirror(ctx, cfg, newLogger(stderr, cfg.logLevel, cfg.logFormat))
	}
	cfg, err := parseFlags(args, os.LookupEnv, stderr)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, newLogger(stderr, cfg.LogLevel, cfg.LogFormat))
}

func newLogger(w io.Writer, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
