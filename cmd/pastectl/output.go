package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pastenode/pastenode/client"
)

// print shows a command's answer: v as JSON with -o json, else what text
// writes.
func (c *cli) print(v any, text func(w io.Writer) error) error {
	if c.output == "json" {
		return c.printJSON(v)
	}
	return text(c.stdout)
}

// printJSON writes v as indented JSON on stdout.
func (c *cli) printJSON(v any) error {
	return jsonEncoder(c.stdout).Encode(v)
}

// shownError is the error of a command that has printed its answer,
// which says it already (status, degraded): -o json adds no error object
// after it, so that stdout stays one object.
type shownError struct{ error }

func (e shownError) Unwrap() error { return e.error }

// errorJSON is a failure as -o json prints it.
type errorJSON struct {
	Error string `json:"error"`
	// Status is the HTTP status of the server's answer; 0 when none came
	// (unreachable, a usage error, a local failure).
	Status int `json:"status"`
	// OutcomeUnknown is set when a write may have been applied although
	// it failed: it was not sent again (client.ErrOutcomeUnknown).
	OutcomeUnknown bool `json:"outcome_unknown,omitempty"`
}

// report tells of err, which cmd ended with and which exits with code: a
// JSON object on stdout with -o json, else lines on stderr, and for a
// usage error where cmd's help is.
func (c *cli) report(cmd *cobra.Command, err error, code int) {
	if c.output == "json" {
		if errors.As(err, new(shownError)) {
			return
		}
		e := errorJSON{Error: oneLine(err), OutcomeUnknown: errors.Is(err, client.ErrOutcomeUnknown)}
		var ce *client.Error
		if errors.As(err, &ce) {
			e.Status = ce.StatusCode
		}
		c.printJSON(e)
		return
	}
	// One line, but for cobra's suggestions, which it puts on lines of
	// their own ("Did you mean this?").
	var lines []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimRight(l, " "); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if code != exitUsage {
		lines = []string{oneLine(err)}
	}
	fmt.Fprintf(c.stderr, "pastectl: %s\n", strings.Join(lines, "\n"))
	if code == exitUsage {
		fmt.Fprintf(c.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
}

// outputOf reads -o from args, for an error that cobra meets before it
// parses the flags (an unknown command), so that it is reported in the
// format asked for.
func outputOf(args []string) string {
	fs := pflag.NewFlagSet("pastectl", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	output := fs.StringP("output", "o", "text", "")
	if fs.Parse(args) != nil || *output != "json" {
		return "text"
	}
	return "json"
}

// oneLine is err's message on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\t", " ")), " ")
}

// namedArgs has an argument check's error name the command and its
// usage: "get takes ID_OR_URL" rather than cobra's count alone.
func namedArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usagef("%s: %v (usage: %s)", cmd.Name(), err, cmd.UseLine())
		}
		return nil
	}
}
