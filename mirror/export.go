package mirror

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/cdb"
	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/internal/httpx"
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
func WriteExport(ctx context.Context, w io.WriteSeeker, view fsm.View, pages *ui.UI, now time.Time, opts ExportOptions) (ExportStats, error) {
	aw, err := cdb.NewArchive(w)
	if err != nil {
		return ExportStats{Index: view.Index()}, fmt.Errorf("export: %w", err)
	}
	return writeArchive(ctx, aw, view, pages, now, opts)
}

// WriteExportTail is WriteExport to a writer that cannot seek, such
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
	e, err := newExporter(pages, now, opts.Done)
	if err != nil {
		return st, fmt.Errorf("export: %w", err)
	}
	if opts.Cache != nil {
		e.cache = opts.Cache.begin(pages)
	}
	site, err := e.site()
	if err == nil {
		aw.Reserve(len(site) + filesPerPaste*view.Len())
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

// A batch of pastes goes to a worker once it holds exportBatch pastes or
// exportBatchBytes of content: each batch costs its hand-offs between
// goroutines, a few microseconds that were a large part of a paste whose
// page comes from the cache; large pastes go one or a few at a time, so
// that they still spread over the CPUs and the archive's bytes keep
// coming while they are highlighted.
const (
	exportBatch      = 64
	exportBatchBytes = 64 << 10
)

// filesPerPaste is the files an export makes of each paste: its raw bytes,
// its page and its metadata.
const filesPerPaste = 3

// addPastes adds the pastes of view that may be exported to aw, counting
// them in st. They are rendered, compressed and fingerprinted on every CPU
// but added in the view's order: a walker queues batches of pastes both
// to the workers and to a bounded queue in order, and the caller's
// goroutine takes them off that queue, waiting for each to be ready.
func (e exporter) addPastes(ctx context.Context, aw *cdb.ArchiveWriter, view fsm.View, st *ExportStats) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// One worker more than CPUs: this goroutine, which writes, and the
	// walker often wait, and with a worker per CPU the CPUs idled part of
	// an export.
	workers := runtime.GOMAXPROCS(0) + 1
	jobs := make(chan *exportJob)
	order := make(chan *exportJob, 2*workers) // bounds the pastes held in memory
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			zc := cdb.NewCompressor()
			for j := range jobs {
				j.render(e, zc)
				close(j.ready)
			}
		})
	}
	var walkErr error // like st's counts of pastes left out: read once order is closed
	go func() { walkErr = e.walk(ctx, view, st, jobs, order) }()

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
		for i := 0; err == nil && i < len(j.files); i++ {
			if err = aw.Add(j.files[i]); err != nil {
				err = fmt.Errorf("paste %s: %w", j.pastes[i/filesPerPaste].ID, err)
			}
		}
		if err != nil {
			cancel() // stop the walker
			continue
		}
		if j.hits > 0 {
			e.cache.hits += j.hits
		}
		for i, v := range j.values {
			if v != nil {
				e.cache.put(&j.keys[i], v)
			}
		}
		if e.done != nil {
			e.done.Add(int64(len(j.pastes)))
		}
		st.Pastes += len(j.pastes)
		for _, p := range j.pastes {
			st.Bytes += int64(len(p.Content))
		}
		j.release()
	}
	wg.Wait()
	if err == nil {
		err = walkErr
	}
	if err == nil {
		// The walker also stops early when ctx ends.
		err = ctx.Err()
	}
	return err
}

// walk queues every paste of view that may be exported, in order and in
// batches, to the workers and to order, and counts those left out in st.
// It closes both channels when done, when ctx ends or when a paste cannot
// be read, which it returns.
func (e exporter) walk(ctx context.Context, view fsm.View, st *ExportStats, jobs, order chan<- *exportJob) error {
	defer close(order)
	defer close(jobs)
	j := newExportJob()
	send := func() bool {
		for _, ch := range []chan<- *exportJob{order, jobs} {
			select {
			case ch <- j:
			case <-ctx.Done():
				return false
			}
		}
		return true
	}
	ended, size := false, 0
	err := view.Walk(func(p *fsm.Paste) bool {
		switch {
		case ctx.Err() != nil:
			ended = true
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
		j.pastes = append(j.pastes, p)
		if size += len(p.Content); len(j.pastes) < exportBatch && size < exportBatchBytes {
			return true
		}
		size = 0
		if !send() {
			ended = true
			return false
		}
		j = newExportJob()
		return true
	})
	if !ended && err == nil && len(j.pastes) > 0 {
		send()
	}
	return err
}

// exportJob is a batch of pastes on its way into the archive. Its buffers
// are reused from batch to batch, so that an export leaves little garbage
// behind: on a node, every collection it causes scans the whole store's
// index.
type exportJob struct {
	pastes []*fsm.Paste
	files  []cdb.Entry         // filesPerPaste per paste, in order
	keys   [][sha256.Size]byte // each paste's in the page cache
	values [][]byte            // to keep under keys[i] in the next cache file; nil: nothing
	hits   int                 // pages that came from the cache
	arena  []byte              // the bytes that files and values point into, but for the cache's and the store's
	page   bytes.Buffer        // one page at a time
	err    error
	ready  chan struct{} // closed when files or err is set
}

var exportJobs = sync.Pool{New: func() any { return new(exportJob) }}

func newExportJob() *exportJob {
	j := exportJobs.Get().(*exportJob)
	j.ready = make(chan struct{})
	return j
}

// release returns j to the pool, once nothing points into its buffers.
func (j *exportJob) release() {
	clear(j.pastes)
	clear(j.files)
	clear(j.values)
	j.pastes, j.files, j.keys, j.values = j.pastes[:0], j.files[:0], j.keys[:0], j.values[:0]
	j.arena, j.hits, j.err, j.ready = j.arena[:0], 0, nil, nil
	exportJobs.Put(j)
}

// render makes the files of j's pastes with zc, or sets j.err.
func (j *exportJob) render(e exporter, zc *cdb.Compressor) {
	for _, p := range j.pastes {
		if err := e.paste(j, p, zc); err != nil {
			j.err = fmt.Errorf("paste %s: %w", p.ID, err)
			return
		}
	}
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
	cache *cacheRun     // may be nil
	// pageHeaders and metaHeaders are what every paste's page and
	// metadata document send, ordered by name, besides their cache
	// headers and Content-Encoding.
	pageHeaders, metaHeaders []cdb.Header
	// pageMeta and metaMeta are the encoded headers of the page and the
	// metadata document of a paste that never expires, all of which send
	// the same, by whether the body is gzipped: most pastes' files are
	// made without encoding them again (cdb.NewUniqueFileMeta).
	pageMeta, metaMeta [2]cdb.Meta
}

// newExporter returns the exporter of one archive rendered at now.
func newExporter(pages *ui.UI, now time.Time, done *atomic.Int64) (exporter, error) {
	h := http.Header{}
	ui.SetPageHeaders(h)
	e := exporter{pages: pages, now: now, done: done, pageHeaders: sortedHeaders(h),
		metaHeaders: []cdb.Header{{Name: "Content-Type", Value: "application/json"}}}
	cache := e.cacheHeaders(&fsm.Paste{})
	for i, gzipped := range []bool{false, true} {
		var err error
		if e.pageMeta[i], err = cdb.EncodeMeta(http.StatusOK, fileHeaders(e.pageHeaders, cache, gzipped)); err != nil {
			return exporter{}, err
		}
		if e.metaMeta[i], err = cdb.EncodeMeta(http.StatusOK, fileHeaders(e.metaHeaders, cache, gzipped)); err != nil {
			return exporter{}, err
		}
	}
	return e, nil
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

// paste appends to j the files of p: its raw bytes, page and metadata,
// rendered and compressed with zc, or with the page, the metadata and
// the raw bytes from the cache; and what to keep of them in the next
// cache file.
func (e exporter) paste(j *exportJob, p *fsm.Paste, zc *cdb.Compressor) error {
	zip := packer{zc: zc, buf: j.arena}
	defer func() { j.arena = zip.buf }()
	up := ui.PasteOf(p, true)
	var c cached
	var key [sha256.Size]byte
	var value []byte
	hit := false
	if e.cache != nil {
		key = cacheKey(&up)
		c, value, hit = e.cache.get(&key)
	}
	if hit {
		j.hits++
	} else {
		var err error
		if c, value, err = e.make(j, &zip, p, up); err != nil {
			return err
		}
	}
	j.keys = append(j.keys, key)
	j.values = append(j.values, value)

	cache := e.cacheHeaders(p)
	h := http.Header{}
	httpx.SetRawHeaders(h, p, false) // the mirror counts the bytes it serves
	for _, c := range cache {        // in place of a live read's
		h.Set(c.Name, c.Value)
	}
	raw := p.Content
	if c.rawGzip {
		raw = c.raw
	}
	f, err := cdb.NewFile(httpx.RawPrefix+p.ID, http.StatusOK, fileHeaders(sortedHeaders(h), nil, c.rawGzip), raw)
	if err != nil {
		return err
	}
	j.files = append(j.files, f)
	if f, err = e.pasteFile(p, "/"+p.ID, &e.pageMeta, e.pageHeaders, cache, c.page, c.pageGzip); err != nil {
		return err
	}
	j.files = append(j.files, f)
	meta, metaGzip := zip.compress(c.meta)
	if f, err = e.pasteFile(p, "/api/v1/pastes/"+p.ID, &e.metaMeta, e.metaHeaders, cache, meta, metaGzip); err != nil {
		return err
	}
	j.files = append(j.files, f)
	return nil
}

// pasteFile makes the entry of p's page or metadata document at path,
// whose body is as stored: with the headers encoded once (encoded, by
// whether the body is gzipped) when p never expires, as those of every
// such paste are the same, and otherwise with base and cache.
func (e exporter) pasteFile(p *fsm.Paste, path string, encoded *[2]cdb.Meta, base, cache []cdb.Header, body []byte, gzipped bool) (cdb.Entry, error) {
	if p.ExpiresAt == 0 {
		return cdb.NewUniqueFileMeta(path, encoded[b2i(gzipped)], body)
	}
	return cdb.NewUniqueFile(path, http.StatusOK, fileHeaders(base, cache, gzipped), body)
}

// make renders the page of p (up, as the UI sees it) into j and
// compresses it with zip, with its raw bytes and metadata document, and
// returns them and their value in the next cache file (nil: nothing to
// keep: the cache writes no file, or the page is not final).
func (e exporter) make(j *exportJob, zip *packer, p *fsm.Paste, up ui.Paste) (c cached, value []byte, err error) {
	j.page.Reset()
	final, err := e.pages.RenderPaste(&j.page, up, e.now)
	if err != nil {
		return cached{}, nil, err
	}
	c.page, c.pageGzip = zip.keep(j.page.Bytes())
	if c.raw, c.rawGzip = zip.compress(p.Content); !c.rawGzip {
		c.raw = nil
	}
	// The document is the API's, to its final newline.
	start := len(zip.buf)
	if zip.buf, err = ui.MetaOf(p, "").AppendJSON(zip.buf); err != nil {
		return cached{}, nil, err
	}
	c.meta = zip.buf[start:]
	if final && e.cache.writes() {
		start := len(zip.buf)
		zip.buf = appendCached(zip.buf, c)
		value = zip.buf[start:]
	}
	return c, value, nil
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

// exportable reports whether id can name archive paths: ids the API makes
// always can, but the store takes any id, and a path with a space, a "?"
// or a "/" would not match what the server looks up, while one whose key
// hashes to 0 cannot be found at all.
func exportable(id string) bool {
	if id == "" || len(id) > 128 || !pastenode.URLSafeID(id) {
		return false
	}
	for _, key := range []string{"f:/", "f:/raw/", "f:/api/v1/pastes/"} {
		if cdb.Hash([]byte(key+id)) == 0 {
			return false
		}
	}
	return true
}
