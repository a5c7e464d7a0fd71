package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// A command is one of pastenode's, as its help shows it.
type command struct {
	name  string // the flag set's name: "pastenode mirror"
	usage string // what follows the name on the usage line
	short string // one line for the list of commands
	long  string // what the command does, above its usage
	flags func() *flag.FlagSet
}

// commands are pastenode's commands, the node itself first.
var commands = []command{
	{
		name: "pastenode", usage: "[flags]",
		long: "pastenode runs one node of a pastenode cluster: the Raft-replicated paste\n" +
			"store, its HTTP API and web UI. Nodes find each other by gossip (--join)\n" +
			"and form a cluster of --bootstrap-expect voters.",
		flags: func() *flag.FlagSet {
			var c config
			fs, _ := c.flagSet(new(flagText))
			return fs
		},
	},
	{
		name: "pastenode keygen", short: "Print a new random cluster key, for --cluster-key",
		long:  "keygen prints a fresh random cluster key: base64 of 32 bytes, for --cluster-key.",
		flags: func() *flag.FlagSet { return newFlagSet("pastenode keygen") },
	},
	{
		name: "pastenode mirror", usage: "--cdb FILE [flags]", short: "Serve an exported CDB file read-only",
		long: "mirror serves an export (pastectl export) read-only, under the same read URLs\n" +
			"as a node; a new FILE renamed over it is served without a restart.",
		flags: func() *flag.FlagSet {
			var c mirrorConfig
			fs, _ := c.flagSet()
			return fs
		},
	},
	{
		name: "pastenode restore", usage: "--from FILE [flags]", short: "Prepare a data dir from a backup, to start a cluster on",
		long: "restore prepares an empty data dir from a backup (pastectl backup), checking\n" +
			"the whole file before it writes anything. Start the node on it with the same\n" +
			"--node-id and --raft-addr; the other nodes join it with empty data dirs.",
		flags: func() *flag.FlagSet {
			var c restoreConfig
			return c.flagSet()
		},
	},
	{
		name: "pastenode version", short: "Print the version, the commit and whether it had changes",
		long: "version prints the release version, else the module version, and the commit\n" +
			"the binary was built from, with \"dirty\" when the tree had uncommitted changes.",
	},
	{
		name: "pastenode help", usage: "[command]", short: "Show the help of a command",
		long: "help shows the help of pastenode, or of one of its commands.",
	},
}

// helpHint marks a command line that did not parse: exitCode points to
// the help of command after the error.
type helpHint struct {
	error
	command string
}

func (h helpHint) Unwrap() error { return h.error }

// helpError asks run to print the help of command (flag.ErrHelp, from
// -h or --help, or the help command).
type helpError struct{ command string }

func (h helpError) Error() string { return "help requested" }

// helpFor is the help command: the help of pastenode, or of the command
// args name.
func helpFor(args []string) error {
	switch {
	case len(args) == 0:
		return helpError{"pastenode"}
	case len(args) > 1:
		return usageError{helpHint{fmt.Errorf("help takes one command, got %q", strings.Join(args, " ")), "pastenode help"}}
	}
	for _, c := range commands {
		if c.name == "pastenode "+args[0] {
			return helpError{c.name}
		}
	}
	return usageError{helpHint{fmt.Errorf("unknown command %q", args[0]), "pastenode"}}
}

// printHelp writes the help of the command named name, in the layout of
// the Go tools and Cobra: what it does, its usage, its commands and its
// flags with their environment twins.
func printHelp(w io.Writer, name string) error {
	var cmd command
	for _, c := range commands {
		if c.name == name {
			cmd = c
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nUsage:\n  %s\n", cmd.long, strings.TrimSpace(cmd.name+" "+cmd.usage))
	if cmd.name == "pastenode" {
		b.WriteString("  pastenode COMMAND [flags]\n\nCommands:\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
		for _, c := range commands[1:] {
			fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimPrefix(c.name, "pastenode "), c.short)
		}
		tw.Flush()
	}
	b.WriteString("\nFlags:\n")
	var env []string
	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
	if cmd.flags != nil {
		cmd.flags().VisitAll(func(f *flag.Flag) {
			kind, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(tw, "      %s\t%s%s\n", strings.TrimSpace("--"+f.Name+" "+kind), usage, defaultText(f, kind))
			if f.Name != versionFlag {
				env = append(env, envName(f.Name))
			}
		})
	}
	fmt.Fprintf(tw, "  -h, --help\tshow this help\n")
	tw.Flush()
	if len(env) > 0 {
		b.WriteString("\nEnvironment:\n  Each flag but --version has a twin, PASTE_ and its name in capitals with _\n" +
			"  for -; a flag given on the command line wins. Here:\n")
		b.WriteString(wrap(strings.Join(env, " "), "    ", 78))
	}
	if cmd.name == "pastenode" {
		b.WriteString("\nRun 'pastenode help COMMAND' for the help of a command.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// defaultText is " (default X)" for a flag whose default is not its
// type's zero value, quoted for a string as Cobra does.
func defaultText(f *flag.Flag, kind string) string {
	switch f.DefValue {
	case "", "0", "0s", "false":
		return ""
	}
	if kind == "string" {
		return fmt.Sprintf(" (default %q)", f.DefValue)
	}
	return " (default " + f.DefValue + ")"
}

// wrap breaks the words of s into lines of at most width characters,
// each after indent.
func wrap(s, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(s) {
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	return b.String() + line + "\n"
}

// flagError words an error of the flag package with the flags as the
// help shows them, --name.
func flagError(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag --%s", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("flag --%s needs a value", name)
	}
	return errors.New(strings.Replace(msg, "for flag -", "for flag --", 1))
}
