// Command pastectl is the command-line client of a pastenode cluster: it
// creates, reads and deletes pastes and runs the cluster's admin calls,
// all through client.Client.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/client"
	"github.com/pastenode/pastenode/internal/buildinfo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1 // the server said no, or could not be reached
	exitUsage   = 2
	defaultAddr = "http://127.0.0.1:8080"
)

// usageError is a mistake in the command line found by a command itself;
// cobra's own parse and argument errors are usage errors too.
type usageError struct{ error }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// failedError marks an error that happened while a valid command ran.
// Everything that is not one is a usage error.
type failedError struct{ error }

func (e failedError) Unwrap() error { return e.error }

// run executes pastectl with args and returns its exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr}
	root := c.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	code := exitCode(err)
	if err != nil {
		if !c.resolved {
			c.output = outputOf(args)
		}
		c.report(cmd, err, code)
	}
	return code
}

// exitCode is the exit status err means (see the README's table).
func exitCode(err error) int {
	var coded codeError
	var failed failedError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &coded):
		return coded.code
	case errors.As(err, &failed):
		return exitFailed
	}
	return exitUsage
}

// cli holds the global flags and the streams of one run.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	addr        string
	adminToken  string
	createToken string
	dataDir     string
	output      string
	timeout     time.Duration
	stale       bool // get --stale
	resolved    bool // resolveFlags ran: the flags hold the command line
}

func (c *cli) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "pastectl",
		Short: "Command-line client of a pastenode cluster",
		Long: "pastectl creates, reads and deletes pastes and runs the admin calls of a\n" +
			"pastenode cluster. Exit codes: 0 success, 1 the server said no or could\n" +
			"not be reached, 2 usage error, 3 (status only) the cluster is degraded.\n" +
			"With -o json every command prints one JSON object on stdout, and a failure\n" +
			"{\"error\": \"...\", \"status\": N}, N being the HTTP status (0: none came).",
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: c.resolveFlags,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usagef("missing command")
		},
		Version: buildinfo.Read().String(),
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetVersionTemplate("pastectl version {{.Version}}\n")

	f := root.PersistentFlags()
	f.StringVar(&c.addr, "addr", defaultAddr, "node base URLs, comma-separated, tried in order (env PASTE_ADDR)")
	f.StringVar(&c.adminToken, "admin-token", "", "bearer token for admin calls (env PASTE_ADMIN_TOKEN)")
	f.StringVar(&c.dataDir, "data-dir", "", "a node's data dir, on its host: its admin token and, without --addr, its address (env PASTE_DATA_DIR)")
	f.StringVarP(&c.output, "output", "o", "text", "output format: text, table (the same; status and members print tables in both) or json")
	f.DurationVar(&c.timeout, "timeout", 10*time.Second, "how long to wait for each node's answer (for export and backup, each silence), and for the retries of 429 and 503 answers in all (0: no limit, no retries)")

	root.AddCommand(
		c.putCommand(),
		c.getCommand(),
		c.deleteCommand(),
		c.infoCommand(),
		c.statusCommand(),
		c.joinCommand(),
		c.removeCommand(),
		c.exportCommand(),
		c.importCommand(),
		c.snapshotCommand(),
		c.rotateTokenCommand(),
		c.backupCommand(),
		c.healthCommand(),
		c.versionCommand(),
		c.membersCommand(),
	)
	for _, cmd := range root.Commands() {
		if cmd.Args != nil {
			cmd.Args = namedArgs(cmd.Args)
		}
	}
	return root
}

// resolveFlags fills unset flags from the environment (a flag given on the
// command line wins) and from a node's data dir, and checks the global
// flags.
func (c *cli) resolveFlags(cmd *cobra.Command, args []string) error {
	flags := cmd.Flags()
	addrGiven := flags.Changed("addr")
	if v := os.Getenv("PASTE_ADDR"); v != "" && !addrGiven {
		c.addr, addrGiven = v, true
	}
	if v := os.Getenv("PASTE_ADMIN_TOKEN"); v != "" && !flags.Changed("admin-token") {
		c.adminToken = v
	}
	if err := c.fromDataDir(flags.Changed("data-dir"), addrGiven); err != nil {
		return err
	}
	c.resolved = true
	switch c.output {
	case "text", "json":
	case "table":
		c.output = "text"
	default:
		return usagef("invalid -o %q: want text, table or json", c.output)
	}
	if c.timeout < 0 {
		return usagef("invalid --timeout %s: must not be negative", c.timeout)
	}
	return nil
}

// fromDataDir reads what a node keeps in its data dir for the clients on
// its host: the admin token, when none is given, and where the node
// serves (pastenode.ServingFile), when no address is given. A missing
// token file is an error only when --data-dir was given on the command
// line: PASTE_DATA_DIR is also the node's own setting, and may be set
// where no token was generated. A data dir without the address (a node
// that has not served yet, or an older one) leaves the default address.
func (c *cli) fromDataDir(explicit, addrGiven bool) error {
	dir := c.dataDir
	if !explicit {
		dir = os.Getenv("PASTE_DATA_DIR")
	}
	if dir == "" {
		return nil
	}
	if !addrGiven {
		if b, err := os.ReadFile(filepath.Join(dir, pastenode.ServingFile)); err == nil {
			var s pastenode.Serving
			switch err := json.Unmarshal(b, &s); {
			case err == nil && s.URL != "":
				c.addr = s.URL
			case explicit:
				return usagef("--data-dir: %s does not say where the node serves", filepath.Join(dir, pastenode.ServingFile))
			}
		}
	}
	if c.adminToken != "" {
		return nil
	}
	path := filepath.Join(dir, "admin-token")
	b, err := os.ReadFile(path)
	if err != nil {
		if explicit {
			return usagef("--data-dir: %v (the node writes it on its first start without --admin-token)", err)
		}
		return nil
	}
	c.adminToken = strings.TrimSpace(string(b))
	return nil
}

// newClient returns the Client for the global flags.
func (c *cli) newClient() (*client.Client, error) {
	cl, err := c.clientAt(c.addrs(), c.adminToken)
	if err != nil {
		return nil, usagef("--addr: %w", err)
	}
	return cl, nil
}

// addrs are the node addresses of --addr.
func (c *cli) addrs() []string {
	var addrs []string
	for _, a := range strings.Split(c.addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// clientAt returns a Client for addrs with the global flags' options and
// adminToken.
func (c *cli) clientAt(addrs []string, adminToken string) (*client.Client, error) {
	token := c.createToken
	if token == "" {
		token = os.Getenv("PASTE_TOKEN")
	}
	return client.New(addrs, client.Options{AdminToken: adminToken, CreateToken: token, Timeout: c.timeout, Stale: c.stale,
		RetryWithin: c.timeout, OnRetry: c.sayRetry})
}

// sayRetry tells stderr that a call is made again, and why.
func (c *cli) sayRetry(err error, wait time.Duration) {
	fmt.Fprintf(c.stderr, "pastectl: %s; retrying in %s\n", oneLine(err), wait)
}

// clientFor returns the Client that asks about idOrURL: for a paste URL,
// one for the node the URL names (its scheme, host and base path), so
// that a URL means what it says; for a bare id, cl, the Client of --addr.
// The admin token goes to the URL's node only when that is a node of
// --addr: a URL may come from anywhere, and must not collect it.
// withheld reports that it did not.
func (c *cli) clientFor(cl *client.Client, idOrURL string) (_ *client.Client, withheld bool, err error) {
	base, _, err := client.SplitPasteURL(idOrURL)
	if err != nil {
		return nil, false, usageError{err}
	}
	if base == "" {
		return cl, false, nil
	}
	token := ""
	if c.adminToken != "" {
		if c.isAddr(base) {
			token = c.adminToken
		} else {
			withheld = true
		}
	}
	cl, err = c.clientAt([]string{base}, token)
	return cl, withheld, err
}

// isAddr reports whether base has the scheme and host of one of --addr's
// nodes.
func (c *cli) isAddr(base string) bool {
	b, err := url.Parse(base)
	if err != nil {
		return false
	}
	for _, a := range c.addrs() {
		if !strings.Contains(a, "://") {
			a = "http://" + a
		}
		if u, err := url.Parse(a); err == nil && u.Scheme == b.Scheme && u.Host == b.Host {
			return true
		}
	}
	return false
}

// action adapts a command's work to cobra: it builds the client, and marks
// every error but a usageError as a failure (exit 1).
func (c *cli) action(do func(ctx context.Context, cl *client.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		cl, err := c.newClient()
		if err == nil {
			err = do(cmd.Context(), cl, args)
		}
		var usage usageError
		if err == nil || errors.As(err, &usage) {
			return err
		}
		return failedError{err}
	}
}

func (c *cli) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print pastectl's version, the commit and whether it had changes (as --version)",
		Long: "version prints the release version, else the module version, and the commit pastectl\n" +
			"was built from, with \"dirty\" when the tree had uncommitted changes. A node's version\n" +
			"is in pastectl status.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			in := buildinfo.Read()
			if c.output == "json" {
				return c.printJSON(struct {
					Build string `json:"build"` // as --version and status show it
					buildinfo.Info
				}{in.String(), in})
			}
			_, err := fmt.Fprintln(c.stdout, "pastectl version", in)
			return err
		},
	}
}
