// Command pastenode runs one node of a pastenode cluster: the Raft-replicated
// paste store, its HTTP API and web UI. `pastenode mirror` serves an
// exported CDB file read-only instead; `pastenode restore` prepares a data
// dir from a backup, and `pastenode keygen` prints a fresh cluster key.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
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
	if errors.Is(err, errRemoved) {
		fmt.Fprintln(os.Stderr, "pastenode:", err)
		os.Exit(exitRemoved)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pastenode:", err)
		os.Exit(1)
	}
}

// exitRemoved is the exit status of a node that stopped because an
// operator removed it from its cluster: a service manager should not
// restart it (systemd's RestartPreventExitStatus).
const exitRemoved = 3

// usageError is a bad command line or configuration: exit code 2.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// run parses args and runs a node, or the mirror, until ctx ends.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "keygen" {
		return keygen(args[1:], os.Stdout)
	}
	if len(args) > 0 && args[0] == "mirror" {
		cfg, err := parseMirrorFlags(args[1:], os.LookupEnv, stderr)
		if err != nil {
			return err
		}
		return runMirror(ctx, cfg, cfg.log.logger(stderr))
	}
	if len(args) > 0 && args[0] == "restore" {
		cfg, err := parseRestoreFlags(args[1:], os.LookupEnv, stderr)
		if err != nil {
			return err
		}
		return runRestore(cfg, os.Stdout)
	}
	cfg, err := parseFlags(args, os.LookupEnv, stderr)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, cfg.Log.logger(stderr))
}

// keygen prints a fresh random cluster key: base64 of 32 bytes, for
// --cluster-key.
func keygen(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("keygen takes no arguments, got %q", args[0])}
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	_, err := fmt.Fprintln(stdout, base64.StdEncoding.EncodeToString(key))
	return err
}

// logConfig is what --log-level and --log-format say; both commands take
// them.
type logConfig struct {
	Level  slog.Level
	Format string // text or json
}

// addFlags defines the log flags on fs. The returned check reads and checks
// their values once fs is parsed.
func (l *logConfig) addFlags(fs *flag.FlagSet) (check func() error) {
	var level string
	fs.StringVar(&level, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&l.Format, "log-format", "text", "text or json")
	return func() error {
		if err := l.Level.UnmarshalText([]byte(level)); err != nil {
			return usageError{fmt.Errorf("--log-level: %w", err)}
		}
		if l.Format != "text" && l.Format != "json" {
			return usageError{fmt.Errorf("--log-format: %q is neither text nor json", l.Format)}
		}
		return nil
	}
}

// logger returns the logger the flags describe, writing to w.
func (l logConfig) logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: l.Level}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
