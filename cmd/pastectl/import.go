package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/pastenode/pastenode/client"
)

func (c *cli) importCommand() *cobra.Command {
	var jobs int
	cmd := &cobra.Command{
		Use:   "import DIR",
		Short: "Import pastes that keep their ids, from one file each in DIR",
		Long: "import moves pastes from another pastebin into the cluster under the ids they had,\n" +
			"so that old links keep working (an admin call). DIR holds one file per paste, named\n" +
			"by its id, with its content byte for byte; beside it, ID.json may hold the paste's\n" +
			"metadata, every field optional:\n" +
			"  {\"title\": \"...\", \"lang\": \"go\", \"created\": \"2021-03-14T15:09:26Z\",\n" +
			"   \"expires\": \"2027-01-01T00:00:00Z\", \"burn\": false, \"encrypted\": false}\n" +
			"where created and expires are RFC 3339 times or Unix seconds (no expires: never).\n" +
			"Pastes already in the cluster are skipped, so an import that stopped can be run\n" +
			"again; pastes past their expiry are not sent. It ends with a summary (-o json: as\n" +
			"JSON), and exits 1 if any paste failed. A progress bar is shown on stderr when it\n" +
			"is a terminal. Files whose names start with \".\" are ignored.",
		Args: cobra.ExactArgs(1),
	}
	cmd.RunE = c.action(func(ctx context.Context, cl *client.Client, args []string) error {
		if jobs < 1 {
			return usagef("invalid --jobs %d: want at least 1", jobs)
		}
		return c.importDir(ctx, cl, args[0], jobs)
	})
	cmd.Flags().IntVar(&jobs, "jobs", 4, "pastes sent at the same time")
	return cmd
}

// importMeta is the optional ID.json beside a paste's file.
type importMeta struct {
	Title     string     `json:"title"`
	Lang      string     `json:"lang"`
	Created   importTime `json:"created"`
	Expires   importTime `json:"expires"`
	Burn      bool       `json:"burn"`
	Encrypted bool       `json:"encrypted"`
}

// importTime is a time in metadata: an RFC 3339 string or Unix seconds;
// null or absent is the zero time.
type importTime struct{ time.Time }

func (t *importTime) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var secs json.Number
	if err := json.Unmarshal(b, &secs); err == nil {
		f, err := secs.Float64()
		if err != nil {
			return fmt.Errorf("time %s: %w", b, err)
		}
		t.Time = time.Unix(0, int64(f*1e9)).UTC()
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("time %s: want an RFC 3339 string or Unix seconds", b)
	}
	parsed, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("time %q: want RFC 3339, such as 2006-01-02T15:04:05Z", s)
	}
	t.Time = parsed
	return nil
}

// importItem is one paste of the directory.
type importItem struct {
	id   string
	path string
	meta importMeta
}

// importSummary is what an import did, printed at its end.
type importSummary struct {
	Dir      string        `json:"dir"`
	Pastes   int           `json:"pastes"`   // paste files found
	Imported int           `json:"imported"` // stored now
	Skipped  int           `json:"skipped"`  // already in the cluster
	Expired  int           `json:"expired"`  // past their expiry: not sent
	Failed   int           `json:"failed"`   // refused by the server
	Errors   []importError `json:"errors"`
	Seconds  float64       `json:"seconds"`
	// Error and Status say why a run failed, with -o json: the one
	// object on stdout is this summary.
	Error  string `json:"error,omitempty"`
	Status int    `json:"status,omitempty"`
}

type importError struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

// readImportDir lists the pastes of dir, their metadata read and checked,
// so that a mistake in any of it stops the import before it sends a byte.
func readImportDir(dir string) ([]importItem, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string]bool{}
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			files[e.Name()] = true
		}
	}
	var items []importItem
	for _, e := range entries { // ReadDir sorts by name: the ids in order
		name := e.Name()
		if !files[name] || strings.HasSuffix(name, ".json") {
			continue
		}
		it := importItem{id: name, path: filepath.Join(dir, name)}
		if files[name+".json"] {
			if it.meta, err = readImportMeta(filepath.Join(dir, name+".json")); err != nil {
				return nil, err
			}
		}
		items = append(items, it)
	}
	for name := range files {
		if id, ok := strings.CutSuffix(name, ".json"); ok && !files[id] {
			return nil, fmt.Errorf("%s: metadata without its paste, no file %s beside it", filepath.Join(dir, name), id)
		}
	}
	return items, nil
}

func readImportMeta(path string) (importMeta, error) {
	var m importMeta
	b, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// importer sends the pastes of one import and keeps its summary.
type importer struct {
	cl  *client.Client
	now time.Time
	bar *progressbar.ProgressBar // nil: none

	mu  sync.Mutex
	sum importSummary
}

func (c *cli) importDir(ctx context.Context, cl *client.Client, dir string, jobs int) error {
	items, err := readImportDir(dir)
	if err != nil {
		return err
	}
	start := time.Now()
	imp := &importer{cl: cl, now: start, sum: importSummary{Dir: dir, Pastes: len(items), Errors: []importError{}}}
	if isTerminal(c.stderr) {
		imp.bar = c.newProgressBar("importing", int64(len(items)), false)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(jobs)
	for _, it := range items {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return imp.one(gctx, it) })
	}
	if err = g.Wait(); err == nil {
		err = ctx.Err() // interrupted: what was done is summed up below
	}
	if imp.bar != nil {
		imp.bar.Clear()
	}
	sum := imp.sum
	sum.Seconds = time.Since(start).Seconds()
	if err == nil && sum.Failed > 0 {
		err = fmt.Errorf("%d of %d pastes failed", sum.Failed, sum.Pastes)
	}
	if err != nil && c.output == "json" {
		// One object on stdout: the summary says why the run failed.
		sum.Error = oneLine(err)
		var ce *client.Error
		if errors.As(err, &ce) {
			sum.Status = ce.StatusCode
		}
	}
	if perr := c.printImport(sum); perr != nil && err == nil {
		err = perr
	}
	if err != nil && c.output == "json" {
		err = shownError{err}
	}
	return err
}

// one imports it. It returns an error only when the import cannot go on
// (the node refuses the admin token, no node answers, the store is full):
// a paste the server refuses for itself is counted as failed.
func (imp *importer) one(ctx context.Context, it importItem) error {
	if ctx.Err() != nil {
		return nil // stopped before its turn came
	}
	if exp := it.meta.Expires.Time; !exp.IsZero() && !exp.After(imp.now) {
		imp.done(func(s *importSummary) { s.Expired++ })
		return nil
	}
	content, err := os.ReadFile(it.path)
	if err != nil {
		return err
	}
	_, err = imp.cl.Import(ctx, it.id, content, client.ImportOptions{
		Title:     it.meta.Title,
		Lang:      it.meta.Lang,
		Burn:      it.meta.Burn,
		Encrypted: it.meta.Encrypted,
		CreatedAt: it.meta.Created.Time,
		ExpiresAt: it.meta.Expires.Time,
	})
	switch {
	case err == nil:
		imp.done(func(s *importSummary) { s.Imported++ })
	case errors.Is(err, client.ErrConflict):
		imp.done(func(s *importSummary) { s.Skipped++ })
	case errors.Is(err, client.ErrBadRequest), errors.Is(err, client.ErrTooLarge):
		imp.done(func(s *importSummary) {
			s.Failed++
			s.Errors = append(s.Errors, importError{ID: it.id, Error: err.Error()})
		})
	case ctx.Err() != nil:
		return nil // another paste's error stopped the import
	default:
		return fmt.Errorf("import %s: %w", it.id, err)
	}
	return nil
}

// done counts one paste in the summary and on the progress bar.
func (imp *importer) done(count func(*importSummary)) {
	imp.mu.Lock()
	defer imp.mu.Unlock()
	count(&imp.sum)
	if imp.bar != nil {
		imp.bar.Add(1)
	}
}

func (c *cli) printImport(s importSummary) error {
	if c.output == "json" {
		return c.printJSON(s)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(c.stderr, "pastectl: import %s: %s\n", e.ID, e.Error)
	}
	_, err := fmt.Fprintf(c.stdout, "imported %d of %d pastes from %s in %.2fs: %d already there, %d expired, %d failed\n",
		s.Imported, s.Pastes, s.Dir, s.Seconds, s.Skipped, s.Expired, s.Failed)
	return err
}
