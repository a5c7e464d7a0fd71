package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/client"
	"github.com/pastenode/pastenode/pn1"
)

func (c *cli) putCommand() *cobra.Command {
	var opts client.PutOptions
	var sec secret
	cmd := &cobra.Command{
		Use:   "put [FILE]",
		Short: "Create a paste from FILE, or from stdin",
		Long: "put creates a paste from FILE, or from stdin when FILE is absent or \"-\".\n" +
			"It prints the paste's URL on stdout and the delete token on stderr;\n" +
			"with -o json it prints the whole answer, token included, on stdout.\n" +
			"With --encrypt or --password the content is encrypted here, in the web UI's\n" +
			"format, and the server gets only ciphertext; --encrypt prints URL#KEY.",
		Args: cobra.MaximumNArgs(1),
	}
	cmd.RunE = c.action(func(ctx context.Context, cl *client.Client, args []string) error {
		in := c.stdin
		if len(args) == 1 && args[0] != "-" {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		if err := sec.resolve(cmd.Flags().Changed("password"), true); err != nil {
			return err
		}
		key := ""
		if sec.encrypt || sec.password != "" {
			text, k, err := sec.seal(in)
			if err != nil {
				return err
			}
			in, key, opts.Encrypted = strings.NewReader(text), k, true
		}
		created, err := cl.Put(ctx, in, opts)
		if err != nil {
			return err
		}
		if key != "" {
			created.URL += "#" + key
		}
		return c.print(created, func(w io.Writer) error {
			fmt.Fprintln(w, created.URL)
			_, err := fmt.Fprintf(c.stderr, "delete token: %s\n", created.DeleteToken)
			return err
		})
	})
	f := cmd.Flags()
	f.StringVar(&opts.Lang, "lang", "", "syntax-highlighting language, e.g. go (default plain text)")
	f.StringVar(&opts.Expire, "expire", "", "expiry: never, or a duration like 10m, 1h, 1d, 1w (default the server's)")
	f.BoolVar(&opts.Burn, "burn", false, "destroy the paste after its first read")
	f.StringVar(&opts.Title, "title", "", "title shown on the paste's page")
	f.BoolVar(&sec.encrypt, "encrypt", false, "encrypt here with a new random key; the printed URL carries it after #")
	c.passwordFlag(f, &sec, "encrypt with a key derived from a password")
	f.StringVar(&c.createToken, "token", "", "create token, for a node started with --create-tokens (env PASTE_TOKEN)")
	return cmd
}

// passwordFlag defines --password: --password=VALUE, or bare to be asked
// without echo; PASTE_PASSWORD when absent.
func (c *cli) passwordFlag(f *pflag.FlagSet, sec *secret, what string) {
	f.StringVar(&sec.password, "password", "", what+": --password=VALUE, or bare to be asked (env PASTE_PASSWORD)")
	f.Lookup("password").NoOptDefVal = askPassword
}

func (c *cli) getCommand() *cobra.Command {
	var (
		sec         secret
		color, lang string
	)
	cmd := &cobra.Command{
		Use:   "get ID_OR_URL",
		Short: "Print a paste's raw content",
		Long: "get writes the exact bytes of a paste to stdout. ID_OR_URL is an id, fetched\n" +
			"from --addr, or a paste URL, fetched from the node it names (its scheme, host and\n" +
			"base path). Reading a burn paste destroys it.\n" +
			"An encrypted paste is decrypted here with the key after # in URL, or with\n" +
			"--password. --color highlights it for a terminal (not burn or encrypted pastes).",
		Args: cobra.ExactArgs(1),
	}
	cmd.RunE = c.action(func(ctx context.Context, cl *client.Client, args []string) error {
		if color != "auto" && color != "always" && color != "never" {
			return usagef("invalid --color %q: want auto, always or never", color)
		}
		if err := sec.resolve(cmd.Flags().Changed("password"), false); err != nil {
			return err
		}
		cl, _, err := c.clientFor(cl, args[0])
		if err != nil {
			return err
		}
		colour := c.output != "json" && (color == "always" || (color == "auto" && isTerminal(c.stdout)))
		content, err := c.get(ctx, cl, args[0], &sec, colour, lang)
		if err != nil {
			return err
		}
		return c.print(contentJSON(args[0], content), func(w io.Writer) error {
			_, err := w.Write(content)
			return err
		})
	})
	f := cmd.Flags()
	c.passwordFlag(f, &sec, "decrypt with a password")
	f.BoolVar(&c.stale, "stale", false, "accept the node's own copy even when it cannot confirm it is current (cut off from the quorum)")
	f.StringVar(&color, "color", "auto", "highlight with ANSI colours: auto (when stdout is a terminal), always or never")
	f.StringVar(&lang, "lang", "", "the language to highlight as with --color (default the paste's)")
	return cmd
}

// get returns what get prints: the decrypted paste, the paste highlighted
// by the server, or its raw bytes. Highlighting asks for the metadata
// first, which never burns, so that a burn paste is still read once, raw.
// A --password must open the paste; a key in the fragment, or a password
// from PASTE_PASSWORD, is used only on a pn1 paste of its kind, so that a
// line link (#L5) to a plain paste prints it.
func (c *cli) get(ctx context.Context, cl *client.Client, idOrURL string, sec *secret, colour bool, lang string) ([]byte, error) {
	key := fragment(idOrURL)
	explicit := sec.password != "" && !sec.fromEnv
	if !explicit && colour {
		m, err := cl.Meta(ctx, idOrURL)
		if err != nil {
			return nil, err
		}
		if !m.Burn && !m.Encrypted {
			return cl.GetTerminal(ctx, idOrURL, terminalFormat(), lang)
		}
	}
	content, err := cl.Get(ctx, idOrURL)
	if err != nil {
		return nil, err
	}
	box, perr := pn1.Parse(string(content))
	switch {
	case explicit:
		return open(string(content), key, sec.password)
	case perr != nil:
		return content, nil
	case box.Password && sec.password != "":
		return open(string(content), "", sec.password)
	case !box.Password && key != "":
		return open(string(content), key, "")
	}
	fmt.Fprintln(c.stderr, "pastectl: this paste is encrypted and printed as stored: give URL#KEY or --password to decrypt it")
	return content, nil
}

// pasteContent is a paste as get -o json prints it: the content as text
// when it is UTF-8, else in base64.
type pasteContent struct {
	ID            string  `json:"id"`
	Size          int     `json:"size"`
	Content       *string `json:"content,omitempty"`
	ContentBase64 *string `json:"content_base64,omitempty"`
}

func contentJSON(idOrURL string, content []byte) pasteContent {
	_, id, _ := client.SplitPasteURL(idOrURL)
	p := pasteContent{ID: id, Size: len(content)}
	if utf8.Valid(content) {
		s := string(content)
		p.Content = &s
	} else {
		s := base64.StdEncoding.EncodeToString(content)
		p.ContentBase64 = &s
	}
	return p
}

// terminalFormat is 24-bit colour where the terminal says it has it
// (COLORTERM), else 256 colours.
func terminalFormat() string {
	if ct := os.Getenv("COLORTERM"); ct == "truecolor" || ct == "24bit" {
		return client.TrueColor
	}
	return client.ANSI256
}

func (c *cli) deleteCommand() *cobra.Command {
	var token string
	cmd := c.callCommand(&cobra.Command{
		Use:   "delete ID_OR_URL --token TOKEN",
		Short: "Delete a paste",
		Long: "delete deletes a paste with its delete token; with --admin-token the token may be omitted.\n" +
			"A paste URL is deleted on the node it names; the admin token goes only to --addr's nodes.",
		Args: cobra.ExactArgs(1),
	}, func(ctx context.Context, cl *client.Client, args []string) (string, any, error) {
		cl, withheld, err := c.clientFor(cl, args[0])
		switch {
		case err != nil:
			return "", nil, err
		case token == "" && withheld:
			return "", nil, usagef("delete needs --token: %s is not a node of --addr, and the admin token goes only to those", args[0])
		case token == "" && c.adminToken == "":
			return "", nil, usagef("delete needs --token (or --admin-token)")
		}
		_, id, _ := client.SplitPasteURL(args[0])
		return "deleted " + args[0], map[string]string{"deleted": id}, cl.Delete(ctx, args[0], token)
	})
	cmd.Flags().StringVar(&token, "token", "", "the delete token that put printed")
	return cmd
}

func (c *cli) infoCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "info ID_OR_URL",
		Short: "Show a paste's metadata, without reading it (a burn paste stays)",
		Long: "info shows a paste's metadata: title, language, size, creation and expiry, and\n" +
			"whether it burns or is encrypted. It never reads the content, so a burn paste\n" +
			"stays. A paste URL is asked of the node it names, an id of --addr.",
		Args: cobra.ExactArgs(1),
	}
	cmd.RunE = c.action(func(ctx context.Context, cl *client.Client, args []string) error {
		cl, _, err := c.clientFor(cl, args[0])
		if err != nil {
			return err
		}
		m, err := cl.Meta(ctx, args[0])
		if err != nil {
			return err
		}
		return c.print(m, func(w io.Writer) error { return printMeta(w, m) })
	})
	return cmd
}

// printMeta writes a paste's metadata, one field a line.
func printMeta(w io.Writer, m *pastenode.Meta) error {
	expires := "never"
	if m.ExpiresAt != nil {
		expires = m.ExpiresAt.Local().Format(time.RFC3339)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	for _, kv := range [][2]string{
		{"id", m.ID}, {"url", m.URL}, {"title", orDash(m.Title)}, {"lang", orDash(m.Lang)},
		{"size", pastenode.FormatSize(int64(m.Size))}, {"created", m.CreatedAt.Local().Format(time.RFC3339)},
		{"expires", expires}, {"burn", yesNo(m.Burn)}, {"encrypted", yesNo(m.Encrypted)},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	return tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
