package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/pastenode/pastenode/internal/buildinfo"
)

// runCLI runs pastenode's command line as main does, for commands that
// end at once, and returns what it printed and its exit status.
func runCLI(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = exitCode(run(context.Background(), args, &out, &errOut), &errOut)
	return out.String(), errOut.String(), code
}

func TestHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string // in stdout
	}{
		{[]string{"--help"}, []string{"Usage:\n  pastenode [flags]\n  pastenode COMMAND [flags]",
			"  keygen ", "  mirror ", "  restore ", "  version ", "      --data-dir string ", `(default "./pastenode-data")`,
			"  -h, --help ", "PASTE_DATA_DIR", "PASTE_RAFT_TIME_SCALE", "pastenode help COMMAND"}},
		{[]string{"-h"}, []string{"pastenode COMMAND [flags]"}},
		{[]string{"help"}, []string{"pastenode COMMAND [flags]"}},
		{[]string{"help", "mirror"}, []string{"pastenode mirror --cdb FILE [flags]", "--cdb string", "PASTE_CDB"}},
		{[]string{"mirror", "--help"}, []string{"pastenode mirror --cdb FILE [flags]"}},
		{[]string{"help", "restore"}, []string{"--from string", "PASTE_FROM"}},
		{[]string{"keygen", "-h"}, []string{"Usage:\n  pastenode keygen\n"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			stdout, stderr, code := runCLI(tt.args...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("help lacks %q:\n%s", w, stdout)
				}
			}
			// Flags are shown as the README writes them.
			if strings.Contains(stdout, "\n  -data-dir") || strings.Contains(stdout, "\n  -cdb") {
				t.Errorf("a flag with one dash:\n%s", stdout)
			}
		})
	}
}

// TestUsageErrorsAreOneLine: a command line that does not parse is one
// line and a pointer to the help, exit 2, never the whole usage.
func TestUsageErrorsAreOneLine(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "pastenode: unknown flag --nope\nRun 'pastenode --help' for usage.\n"},
		{[]string{"-nope"}, "pastenode: unknown flag --nope\nRun 'pastenode --help' for usage.\n"},
		{[]string{"--rate-limit", "x"}, "pastenode: invalid value \"x\" for flag --rate-limit: parse error\nRun 'pastenode --help' for usage.\n"},
		{[]string{"mirror", "--cdb"}, "pastenode: flag --cdb needs a value\nRun 'pastenode mirror --help' for usage.\n"},
		{[]string{"restore", "--nope"}, "pastenode: unknown flag --nope\nRun 'pastenode restore --help' for usage.\n"},
		{[]string{"nope"}, "pastenode: unknown command \"nope\"\nRun 'pastenode --help' for usage.\n"},
		{[]string{"help", "nope"}, "pastenode: unknown command \"nope\"\nRun 'pastenode --help' for usage.\n"},
		{[]string{"keygen", "x"}, "pastenode: pastenode keygen takes no arguments, got \"x\"\nRun 'pastenode keygen --help' for usage.\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			stdout, stderr, code := runCLI(tt.args...)
			if code != 2 || stdout != "" || stderr != tt.want {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing and %q", code, stdout, stderr, tt.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	want := "pastenode version " + buildinfo.Read().String() + "\n"
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}, {"mirror", "--version"}} {
		stdout, stderr, code := runCLI(args...)
		if code != 0 || stdout != want || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 0 and %q", args, code, stdout, stderr, want)
		}
	}
	// The environment twin of --version does not exist: PASTE_VERSION
	// must not turn a node into a version printer.
	if _, err := parseFlags([]string{"--node-id", "n1"}, func(k string) (string, bool) {
		if k == "PASTE_VERSION" {
			return "true", true
		}
		return "", false
	}); err != nil {
		t.Errorf("PASTE_VERSION=true: %v, want it ignored", err)
	}
}
