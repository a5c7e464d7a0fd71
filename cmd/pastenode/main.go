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
	"strings"
	"syscall"

	"github.com/pastenode/pastenode/internal/buildinfo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitRemoved is the exit status of a node that stopped because an
// operator removed it from its cluster: a service manager should not
// restart it (systemd's RestartPreventExitStatus).
const exitRemoved = 3

// usageError is a bad command line or configuration: exit code 2.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// exitCode reports err on stderr, in one line, and returns the exit
// status it means: 0 for none, 2 for a usage error, exitRemoved, else 1.
// A command line that did not parse is followed by where its help is.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "pastenode:", err)
	var ue usageError
	var hint helpHint
	switch {
	case errors.As(err, &hint):
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", hint.command)
		return 2
	case errors.As(err, &ue):
		return 2
	case errors.Is(err, errRemoved):
		return exitRemoved
	}
	return 1
}

// run runs the command args name (a node when they name none) until ctx
// ends. Help and the version go to stdout, logs to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := runCommand(ctx, args, stdout, stderr)
	var help helpError
	switch {
	case errors.As(err, &help):
		return printHelp(stdout, help.command)
	case errors.Is(err, errVersion):
		_, err = fmt.Fprintln(stdout, "pastenode version", buildinfo.Read())
	}
	return err
}

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	name, rest := "", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, rest = args[0], args[1:]
	}
	switch name {
	case "":
		cfg, err := parseFlags(rest, os.LookupEnv)
		if err != nil {
			return err
		}
		return serve(ctx, cfg, cfg.Log.logger(stderr))
	case "keygen":
		return keygen(rest, stdout)
	case "mirror":
		cfg, err := parseMirrorFlags(rest, os.LookupEnv)
		if err != nil {
			return err
		}
		return runMirror(ctx, cfg, cfg.log.logger(stderr))
	case "restore":
		cfg, err := parseRestoreFlags(rest, os.LookupEnv)
		if err != nil {
			return err
		}
		return runRestore(cfg, stdout)
	case "version":
		return noArgs("pastenode version", rest)
	case "help":
		return helpFor(rest)
	}
	return usageError{helpHint{fmt.Errorf("unknown command %q", name), "pastenode"}}
}

// noArgs parses the flags of a command that takes nothing else, and
// returns what asks for its help or the version, or a usage error.
func noArgs(command string, args []string) error {
	fs := newFlagSet(command)
	if err := parseWithEnv(fs, args, noEnv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{helpHint{fmt.Errorf("%s takes no arguments, got %q", command, fs.Arg(0)), command}}
	}
	if command == "pastenode version" {
		return errVersion
	}
	return nil
}

// noEnv is an environment without variables.
func noEnv(string) (string, bool) { return "", false }

// keygen prints a fresh random cluster key: base64 of 32 bytes, for
// --cluster-key.
func keygen(args []string, stdout io.Writer) error {
	if err := noArgs("pastenode keygen", args); err != nil {
		return err
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
