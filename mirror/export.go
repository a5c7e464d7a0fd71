package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pastenode/pastenode/cdb"
	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/ui"
)

// ExportStats describes one export.
type ExportStats struct {
	Index   uint64 // the Raft log index of the state exported
	Pastes  int    // pastes in the archive
	Burn    int    // burn-after-reading pastes, never exported
	Expired int    // pastes already expired, left out
	Skipped int    // pastes whose id cannot be an archive path, left out
	Bytes   int64  // content bytes of the exported pastes
}

// exportMaxAge caps how long, in seconds, a client or cache may keep what
// a mirror serves: a static server cannot revalidate, and an export is
// replaced by the next one.
const exportMaxAge = 3600

// exportAssets are the ui's static files, stored under /static/; the
// pages link them with a ?v= query that kawipiko ignores.
var exportAssets = []string{"app.css", "app.js"}

// WriteExport writes a kawipiko-2022a archive of view to w: for every live
// paste that may be mirrored, its raw bytes at /raw/{id}, its page at
// /{id} and its metadata at /api/v1/pastes/{id}; and the site around them:
// the mirror's index page at /, the stylesheet and script under /static/,
// and the 404 page as the /* wildcard. Burn-after-reading pastes are never
// exported, nor pastes expired at now; encrypted pastes are, as the
// ciphertext and the page that decrypts it in the browser.
//
// pages renders the HTML and should be a mirror UI (ui.Options{Mirror:
// true}). The view is one consistent state, so the archive is too, however
// long the export takes and whatever is written meanwhile. Pastes are
// rendered and compressed on every CPU but written in id order, so the
// same view and time give the same file. On error the content of w is
// incomplete and should be discarded.
func WriteExport(ctx context.Context, w io.WriteSeeker, view fsm.View, pages *ui.UI, now time.Time) (ExportStats, error) {
	return WriteExportProgress(ctx, w, view, pages, now, nil)
}

// WriteExportProgress is WriteExport that also counts, in done when it is
// not nil, the pastes written so far, for a caller that reports progress
// from another goroutine.
func WriteExportProgress(ctx context.Context, w io.WriteSeeker, view fsm.View, pages *ui.UI, now time.Time, done *atomic.Int64) (ExportStats, error) {
	st := ExportStats{Index: view.Index()}
	aw, err := cdb.NewArchive(w)
	if err != nil {
		return st, fmt.Errorf("export: %w", err)
	}
	e := exporter{pages: pages, now: now, done: done}
	site, err := e.site()
	if err == nil {
		err = addFiles(aw, site)
	}
	if err == nil {
		err = e.addPastes(ctx, aw, view, &st)
	}
	if err == nil {
		err = aw.Close()
	}
	if err != nil {
		return st, fmt.Errorf("export: %w", err)
	}
	return st, nil
}

// addPastes adds the pastes of view that may be exported to aw, counting
// them in st. They are rendered, compressed and fingerprinted on every CPU but added in
// the view's order: a walker queues each paste both to the workers and to
// a bounded queue in order, and the caller's goroutine takes them off that
// queue, waiting for each to be ready.
func (e exporter) addPastes(ctx context.Context, aw *cdb.ArchiveWriter, view fsm.View, st *ExportStats) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *exportJob)
	order := make(chan *exportJob, 4*workers) // bounds the pastes held in memory
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				j.files, j.err = e.paste(j.p, j.buf)
				close(j.ready)
			}
		})
	}
	// The walker writes only st's counts of pastes left out, and they are
	// read once order is closed.
	go e.walk(ctx, view, st, jobs, order)

	var err error
	for j := range order {
		if err != nil {
			continue // drain what the walker queued before it stopped
		}
		select {
		case <-j.ready:
			err = j.err
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err == nil {
			err = addFiles(aw, j.files)
		}
		if err != nil {
			err = fmt.Errorf("paste %s: %w", j.p.ID, err)
			cancel() // stop the walker
			continue
		}
		bufPool.Put(j.buf)
		if e.done != nil {
			e.done.Add(1)
		}
		st.Pastes++
		st.Bytes += int64(len(j.p.Content))
	}
	wg.Wait()
	if err == nil {
		// The walker also stops early when ctx ends.
		err = ctx.Err()
	}
	return err
}

// walk queues every paste of view that may be exported, in order, to the
// workers and to order, and counts those left out in st. It closes both
// channels when done or when ctx ends.
func (e exporter) walk(ctx context.Context, view fsm.View, st *ExportStats, jobs, order chan<- *exportJob) {
	defer close(order)
	defer close(jobs)
	view.Walk(func(p *fsm.Paste) bool {
		switch {
		case ctx.Err() != nil:
			return false
		case p.Burn:
			st.Burn++
			return true
		case p.Expired(e.now.UnixNano()):
			st.Expired++
			return true
		case !exportable(p.ID):
			st.Skipped++
			return true
		}
		j := &exportJob{p: p, buf: bufPool.Get().(*bytes.Buffer), ready: make(chan struct{})}
		for _, ch := range []chan<- *exportJob{order, jobs} {
			select {
			case ch <- j:
			case <-ctx.Done():
				return false
			}
		}
		return true
	})
}

// exportJob is one paste on its way into the archive.
type exportJob struct {
	p     *fsm.Paste
	buf   *bytes.Buffer // holds the page, which files may point into
	files []cdb.Entry
	err   error
	ready chan struct{} // closed when files or err is set
}

func addFiles(aw *cdb.ArchiveWriter, files []cdb.Entry) error {
	for _, f := range files {
		if err := aw.Add(f); err != nil {
			return err
		}
	}
	return nil
}

// exporter renders the files of one archive. It is safe for concurrent
// use.
type exporter struct {
	pages *ui.UI
	now   time.Time
	done  *atomic.Int64 // pastes added so far; may be nil
}

// site renders the files that are not pastes.
func (e exporter) site() ([]cdb.Entry, error) {
	var files []cdb.Entry
	for _, name := range exportAssets {
		body, ctype, ok := e.pages.Asset(name)
		if !ok {
			return nil, fmt.Errorf("ui has no asset %s", name)
		}
		h := http.Header{}
		h.Set("Content-Type", ctype)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "public, max-age="+strconv.Itoa(exportMaxAge))
		f, err := newExportFile("/static/"+name, http.StatusOK, h, body)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}

	var index bytes.Buffer
	if err := e.pages.Index(&index, ui.IndexData{}); err != nil {
		return nil, err
	}
	h := http.Header{}
	ui.SetPageHeaders(h)
	h.Set("Cache-Control", "no-cache")
	f, err := newExportFile("/", http.StatusOK, h, index.Bytes())
	if err != nil {
		return nil, err
	}
	files = append(files, f)

	var notFound bytes.Buffer
	if err := e.pages.Error(&notFound, http.StatusNotFound, ""); err != nil {
		return nil, err
	}
	h = http.Header{}
	ui.SetPageHeaders(h)
	h.Set("Cache-Control", "no-store")
	f, err = newExportFile("/*", http.StatusNotFound, h, notFound.Bytes())
	return append(files, f), err
}

// paste renders the raw bytes, the page and the metadata of p; the page
// goes into buf.
func (e exporter) paste(p *fsm.Paste, buf *bytes.Buffer) ([]cdb.Entry, error) {
	files := make([]cdb.Entry, 3)
	h := http.Header{}
	ui.SetRawHeaders(h, p)
	e.cacheHeaders(h, p)
	var err error
	if files[0], err = newExportFile("/raw/"+p.ID, http.StatusOK, h, p.Content); err != nil {
		return nil, err
	}

	buf.Reset()
	if err := e.pages.Paste(buf, ui.PasteOf(p, true), e.now); err != nil {
		return nil, err
	}
	h = http.Header{}
	ui.SetPageHeaders(h)
	e.cacheHeaders(h, p)
	if files[1], err = newExportFile("/"+p.ID, http.StatusOK, h, buf.Bytes()); err != nil {
		return nil, err
	}

	meta, err := json.MarshalIndent(ui.MetaOf(p, ""), "", "  ")
	if err != nil {
		return nil, err
	}
	h = http.Header{}
	h.Set("Content-Type", "application/json")
	e.cacheHeaders(h, p)
	files[2], err = newExportFile("/api/v1/pastes/"+p.ID, http.StatusOK, h, append(meta, '\n'))
	return files, err
}

// cacheHeaders lets a paste be cached for at most exportMaxAge, and never
// past its expiry. The Expires header also tells a mirror when to stop
// serving it.
func (e exporter) cacheHeaders(h http.Header, p *fsm.Paste) {
	if p.ExpiresAt == 0 {
		h.Set("Cache-Control", "public, max-age="+strconv.Itoa(exportMaxAge))
		return
	}
	expires := time.Unix(0, p.ExpiresAt)
	h.Set("Cache-Control", maxAge(expires.Sub(e.now)))
	h.Set("Expires", expires.UTC().Format(http.TimeFormat))
}

// maxAge is the Cache-Control of something that stays valid for left.
func maxAge(left time.Duration) string {
	secs := min(max(int64(left/time.Second), 0), exportMaxAge)
	return "public, max-age=" + strconv.FormatInt(secs, 10)
}

// newExportFile makes the entry of a file: body compressed when that saves
// enough, and the headers ordered by name.
func newExportFile(path string, status int, h http.Header, body []byte) (cdb.Entry, error) {
	body, enc := cdb.Compress(body)
	h.Set("Content-Encoding", enc)
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	headers := make([]cdb.Header, 0, len(names))
	for _, name := range names {
		for _, v := range h[name] {
			headers = append(headers, cdb.Header{Name: name, Value: v})
		}
	}
	return cdb.NewFile(path, status, headers, body)
}

// exportable reports whether id can name archive paths: ids the API makes
// always can, but the store takes any id, and a path with a space, a "?"
// or a "/" would not match what the server looks up, while one whose key
// hashes to 0 cannot be found at all.
func exportable(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	for _, key := range []string{"f:/", "f:/raw/", "f:/api/v1/pastes/"} {
		if cdb.Hash([]byte(key+id)) == 0 {
			return false
		}
	}
	return true
}
