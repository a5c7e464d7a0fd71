package mirror

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
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
	Cached  int    // exported pastes whose page came from the PageCache
}

// exportMaxAge caps how long, in seconds, a client or cache may keep what
// a mirror serves: a static server cannot revalidate, and an export is
// replaced by the next one.
const exportMaxAge = 3600

// exportAssets are the ui's static files, stored under /static/; the
// pages link them with a ?v= query that kawipiko ignores.
var exportAssets = []string{"app.css", "app.js"}

// ExportOptions are the optional parts of an export.
type ExportOptions struct {
	// Done, when not nil, counts the pastes written so far, for a caller
	// that reports progress from another goroutine.
	Done *atomic.Int64
	// Cache, when not nil, keeps the pastes' pages for the next export
	// and gives those the last one kept.
	Cache *PageCache
}

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
// same view and time give the same file, with or without a cache. On
// error the content of w is incomplete and should be discarded.
func WriteExport(ctx context.Context, w io.WriteSeeker, view fsm.View, pages *ui.UI, now time.Time) (ExportStats, error) {
	return WriteExportWith(ctx, w, view, pages, now, ExportOptions{})
}

// WriteExportWith is WriteExport with options.
func WriteExportWith(ctx context.Context, w io.WriteSeeker, view fsm.View, pages *ui.UI, now time.Time, opts ExportOptions) (ExportStats, error) {
	aw, err := cdb.NewArchive(w)
	if err != nil {
		return ExportStats{Index: view.Index()}, fmt.Errorf("export: %w", err)
	}
	return writeArchive(ctx, aw, view, pages, now, opts)
}

// WriteExportTail is WriteExportWith to a writer that cannot seek, such
// as an HTTP answer, in tail order (cdb.NewTailWriter): the archive from
// its byte cdb.TailSize on, then its first cdb.TailSize bytes. The
// archive's bytes go out as they are made, 64 KiB at a time, rather than
// after the whole of it is built.
func WriteExportTail(ctx context.Context, w io.Writer, view fsm.View, pages *ui.UI, now time.Time, opts ExportOptions) (ExportStats, error) {
	aw, err := cdb.NewTailArchive(w)
	if err != nil {
		return ExportStats{Index: view.Index()}, fmt.Errorf("export: %w", err)
	}
	return writeArchive(ctx, aw, view, pages, now, opts)
}

func writeArchive(ctx context.Context, aw *cdb.ArchiveWriter, view fsm.View, pages *ui.UI, now time.Time, opts ExportOptions) (ExportStats, error) {
	st := ExportStats{Index: view.Index()}
	e := newExporter(pages, now, opts.Done)
	if opts.Cache != nil {
		e.cache = opts.Cache.begin(pages)
	}
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
	if e.cache != nil {
		st.Cached = e.cache.hits
		e.cache.finish(err == nil)
	}
	if err != nil {
		return st, fmt.Errorf("export: %w", err)
	}
	return st, nil
}

// addPastes adds the pastes of view that may be exported to aw, counting
// them in st. They are rendered, compressed and fingerprinted on every CPU
// but added in the view's order: a walker queues each paste both to the
// workers and to a bounded queue in order, and the caller's goroutine
// takes them off that queue, waiting for each to be ready.
func (e exporter) addPastes(ctx context.Context, aw *cdb.ArchiveWriter, view fsm.View, st *ExportStats) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// One worker more than CPUs: this goroutine, which writes, and the
	// walker often wait, and with a worker per CPU the CPUs idled 15% of
	// an export.
	workers := runtime.GOMAXPROCS(0) + 1
	jobs := make(chan *exportJob)
	order := make(chan *exportJob, 4*workers) // bounds the pastes held in memory
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			zc := cdb.NewCompressor()
			for j := range jobs {
				j.err = e.paste(j, zc)
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
		if j.hit {
			e.cache.hits++
		}
		if j.value != nil {
			e.cache.put(&j.key, j.value)
		}
		exportBufPool.Put(j.bufs)
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
		j := &exportJob{p: p, bufs: exportBufPool.Get().(*exportBuffers), ready: make(chan struct{})}
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
	bufs  *exportBuffers // what files point into
	files []cdb.Entry
	key   [sha256.Size]byte // the paste's in the page cache
	value []byte            // to keep under key in the next cache file; nil: nothing
	hit   bool              // the page came from the cache
	err   error
	ready chan struct{} // closed when files or err is set
}

// exportBuffers hold the bytes of one paste's files until they are in the
// archive; they are reused from paste to paste, so that an export leaves
// little garbage behind: on a node, every collection it causes scans the
// whole store's index.
type exportBuffers struct {
	page, meta bytes.Buffer
	metaJSON   *json.Encoder // writes into meta; keeps its indent buffer
	gzip       []byte        // the gzip bytes of the files that have them
	cached     []byte        // the paste's value in the next page cache file
}

var exportBufPool = sync.Pool{New: func() any {
	b := new(exportBuffers)
	b.metaJSON = json.NewEncoder(&b.meta)
	b.metaJSON.SetIndent("", "  ")
	return b
}}

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
	cache *cacheRun     // may be nil
	// pageHeaders and metaHeaders are what every paste's page and
	// metadata document send, ordered by name, besides their cache
	// headers and Content-Encoding.
	pageHeaders, metaHeaders []cdb.Header
}

// newExporter returns the exporter of one archive rendered at now.
func newExporter(pages *ui.UI, now time.Time, done *atomic.Int64) exporter {
	h := http.Header{}
	ui.SetPageHeaders(h)
	return exporter{pages: pages, now: now, done: done, pageHeaders: sortedHeaders(h),
		metaHeaders: []cdb.Header{{Name: "Content-Type", Value: "application/json"}}}
}

// site renders the files that are not pastes.
func (e exporter) site() ([]cdb.Entry, error) {
	var files []cdb.Entry
	zip := packer{zc: cdb.NewCompressor()}
	for _, name := range exportAssets {
		body, ctype, ok := e.pages.Asset(name)
		if !ok {
			return nil, fmt.Errorf("ui has no asset %s", name)
		}
		h := []cdb.Header{{Name: "Content-Type", Value: ctype}, {Name: "X-Content-Type-Options", Value: "nosniff"}}
		cache := []cdb.Header{{Name: "Cache-Control", Value: maxAge(exportMaxAge * time.Second)}}
		f, err := zip.file("/static/"+name, http.StatusOK, h, cache, body)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}

	var index bytes.Buffer
	if err := e.pages.Index(&index, ui.IndexData{}); err != nil {
		return nil, err
	}
	f, err := zip.file("/", http.StatusOK, e.pageHeaders, []cdb.Header{{Name: "Cache-Control", Value: "no-cache"}}, index.Bytes())
	if err != nil {
		return nil, err
	}
	files = append(files, f)

	var notFound bytes.Buffer
	if err := e.pages.Error(&notFound, http.StatusNotFound, ""); err != nil {
		return nil, err
	}
	f, err = zip.file("/*", http.StatusNotFound, e.pageHeaders, []cdb.Header{{Name: "Cache-Control", Value: "no-store"}}, notFound.Bytes())
	if err != nil {
		return nil, err
	}
	return append(files, f), nil
}

// paste makes the files of j's paste: its raw bytes, page and metadata,
// rendered into j.bufs and compressed with zc, or with the page and raw
// bytes from the cache. It sets j's files, and what to keep in the next
// cache file.
func (e exporter) paste(j *exportJob, zc *cdb.Compressor) error {
	p, bufs := j.p, j.bufs
	files := make([]cdb.Entry, 3)
	zip := packer{zc: zc, buf: bufs.gzip[:0]}
	defer func() { bufs.gzip = zip.buf }()
	up := ui.PasteOf(p, true)
	var c cached
	if e.cache != nil {
		j.key = cacheKey(&up)
		c, j.value, j.hit = e.cache.get(&j.key)
	}
	if !j.hit {
		bufs.page.Reset()
		final, err := e.pages.RenderPaste(&bufs.page, up, e.now)
		if err != nil {
			return err
		}
		c.page, c.pageGzip = zip.compress(bufs.page.Bytes())
		if c.raw, c.rawGzip = zip.compress(p.Content); !c.rawGzip {
			c.raw = nil
		}
		if final && e.cache.writes() {
			bufs.cached = appendCached(bufs.cached[:0], c)
			j.value = bufs.cached
		}
	}

	cache := e.cacheHeaders(p)
	h := http.Header{}
	ui.SetRawHeaders(h, p)
	for _, c := range cache { // in place of a live read's
		h.Set(c.Name, c.Value)
	}
	raw := p.Content
	if c.rawGzip {
		raw = c.raw
	}
	var err error
	if files[0], err = zip.stored(cdb.NewFile, "/raw/"+p.ID, http.StatusOK, sortedHeaders(h), nil, raw, c.rawGzip); err != nil {
		return err
	}
	if files[1], err = zip.stored(cdb.NewUniqueFile, "/"+p.ID, http.StatusOK, e.pageHeaders, cache, c.page, c.pageGzip); err != nil {
		return err
	}

	// The Encoder ends the document with the newline the API's has too.
	bufs.meta.Reset()
	if err := bufs.metaJSON.Encode(ui.MetaOf(p, "")); err != nil {
		return err
	}
	if files[2], err = zip.uniqueFile("/api/v1/pastes/"+p.ID, http.StatusOK, e.metaHeaders, cache, bufs.meta.Bytes()); err != nil {
		return err
	}
	j.files = files
	return nil
}

// cacheHeaders lets a paste be cached for at most exportMaxAge, and never
// past its expiry. The Expires header also tells a mirror when to stop
// serving it.
func (e exporter) cacheHeaders(p *fsm.Paste) []cdb.Header {
	if p.ExpiresAt == 0 {
		return []cdb.Header{{Name: "Cache-Control", Value: maxAge(exportMaxAge * time.Second)}}
	}
	expires := time.Unix(0, p.ExpiresAt)
	return []cdb.Header{
		{Name: "Cache-Control", Value: maxAge(expires.Sub(e.now))},
		{Name: "Expires", Value: expires.UTC().Format(http.TimeFormat)},
	}
}

// maxAge is the Cache-Control of something that stays valid for left.
func maxAge(left time.Duration) string {
	secs := min(max(int64(left/time.Second), 0), exportMaxAge)
	return "public, max-age=" + strconv.FormatInt(secs, 10)
}

// packer makes the entries of files, their gzip bytes appended to buf.
type packer struct {
	zc  *cdb.Compressor
	buf []byte
}

// file makes the entry of a file: body compressed when that saves enough,
// and the headers of base and extra with Content-Encoding, ordered by
// name. base and extra must not name the same header, nor
// Content-Encoding.
func (z *packer) file(path string, status int, base, extra []cdb.Header, body []byte) (cdb.Entry, error) {
	return z.entry(cdb.NewFile, path, status, base, extra, body)
}

// uniqueFile is file for a body no other file has: a paste's page or
// metadata, which name the paste (cdb.NewUniqueFile).
func (z *packer) uniqueFile(path string, status int, base, extra []cdb.Header, body []byte) (cdb.Entry, error) {
	return z.entry(cdb.NewUniqueFile, path, status, base, extra, body)
}

func (z *packer) entry(newFile func(string, int, []cdb.Header, []byte) (cdb.Entry, error),
	path string, status int, base, extra []cdb.Header, body []byte) (cdb.Entry, error) {
	body, gzipped := z.compress(body)
	return z.stored(newFile, path, status, base, extra, body, gzipped)
}

// compress returns body compressed, when that saves enough, and whether
// it is.
func (z *packer) compress(body []byte) (out []byte, gzipped bool) {
	out, enc := z.zc.Compress(&z.buf, body)
	return out, enc == "gzip"
}

// stored makes the entry of a file whose body is as stored: gzipped or
// not.
func (z *packer) stored(newFile func(string, int, []cdb.Header, []byte) (cdb.Entry, error),
	path string, status int, base, extra []cdb.Header, body []byte, gzipped bool) (cdb.Entry, error) {
	enc := "identity"
	if gzipped {
		enc = "gzip"
	}
	headers := make([]cdb.Header, 0, len(base)+len(extra)+1)
	headers = append(append(append(headers, base...), extra...), cdb.Header{Name: "Content-Encoding", Value: enc})
	// Stable, so that the values of one header keep their order.
	slices.SortStableFunc(headers, func(a, b cdb.Header) int { return strings.Compare(a.Name, b.Name) })
	return newFile(path, status, headers, body)
}

// sortedHeaders lists the headers of h ordered by name.
func sortedHeaders(h http.Header) []cdb.Header {
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
	return headers
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
