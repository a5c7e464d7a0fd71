package api

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pastenode/pastenode/cdb"
)

// MirrorConfig configures a Mirror.
type MirrorConfig struct {
	// Path is the archive, as WriteExport writes it. A file renamed over
	// it replaces the archive served, once it opens and reads correctly.
	Path   string
	Logger *slog.Logger
	// Poll is how often Path is checked for a new file; 0 means 200ms.
	Poll time.Duration
}

// Validate checks c and fills in defaults.
func (c *MirrorConfig) Validate() error {
	if c.Path == "" {
		return errors.New("api: mirror: no archive file")
	}
	if c.Poll < 0 {
		return fmt.Errorf("api: mirror: poll interval %s must not be negative", c.Poll)
	}
	if c.Poll == 0 {
		c.Poll = 200 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Mirror serves an exported archive read-only under the live node's read
// URLs: /{id}, /raw/{id}, /api/v1/pastes/{id}, /static/ and /. It watches
// the archive's path and swaps in a new file atomically; requests that
// started on the old one finish on it, and its mapping is released after
// the last of them.
type Mirror struct {
	cfg     MirrorConfig
	log     *slog.Logger
	cur     atomic.Pointer[mirrorArchive]
	metrics *mirrorMetrics

	started   atomic.Bool   // Start succeeded: a watcher runs
	stop      chan struct{} // closed by Close: the watcher ends
	done      chan struct{} // closed by the watcher when it ends
	closeOnce sync.Once
}

// NewMirror returns a mirror of cfg.Path. It opens nothing before Start.
func NewMirror(cfg MirrorConfig) (*Mirror, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Mirror{
		cfg:  cfg,
		log:  cfg.Logger.With("component", "mirror"),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	m.metrics = newMirrorMetrics(m)
	return m, nil
}

// Start opens the archive, which must be valid, and starts watching its
// path for a replacement until ctx ends or Close is called. It may be
// called once.
func (m *Mirror) Start(ctx context.Context) error {
	if m.started.Load() {
		return errors.New("mirror: already started")
	}
	fi, err := os.Stat(m.cfg.Path)
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	a, err := openMirrorArchive(m.cfg.Path)
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	m.cur.Store(a)
	m.started.Store(true)
	m.log.Info("serving archive", "path", m.cfg.Path, "pastes", a.pastes)
	go m.watch(ctx, fi)
	return nil
}

// Close stops the watcher and releases the archive once the requests
// still using it are done. Requests after Close get a 503.
func (m *Mirror) Close() error {
	m.closeOnce.Do(func() {
		close(m.stop)
		if m.started.Load() {
			<-m.done // so that no reload swaps in an archive after this
		}
		if a := m.cur.Swap(nil); a != nil {
			a.release(m.log)
		}
	})
	return nil
}

// Handler returns the root handler.
func (m *Mirror) Handler() http.Handler { return m }

// Registry returns the Prometheus registry the mirror reports to.
func (m *Mirror) Registry() *prometheus.Registry { return m.metrics.reg }

// Pastes returns the number of pastes in the archive served now.
func (m *Mirror) Pastes() int {
	a := m.acquire()
	if a == nil {
		return 0
	}
	defer a.release(m.log)
	return a.pastes
}

// watch polls the archive's path and reloads it whenever the file there
// changes: another inode (a rename replaced it), size or modification time.
// A file that fails to load is logged once and not retried until it
// changes again.
func (m *Mirror) watch(ctx context.Context, last os.FileInfo) {
	defer close(m.done)
	t := time.NewTicker(m.cfg.Poll)
	defer t.Stop()
	var statErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.stop:
			return
		case <-t.C:
		}
		fi, err := os.Stat(m.cfg.Path)
		if err != nil {
			if err.Error() != statErr {
				m.log.Warn("archive file unreadable; serving the one loaded", "err", err)
				statErr = err.Error()
			}
			continue
		}
		statErr = ""
		if os.SameFile(fi, last) && fi.Size() == last.Size() && fi.ModTime().Equal(last.ModTime()) {
			continue
		}
		last = fi
		m.reload()
	}
}

// reload opens the file at the archive's path and, if it is sound, serves
// it instead of the current one.
func (m *Mirror) reload() {
	a, err := openMirrorArchive(m.cfg.Path)
	if err != nil {
		m.metrics.reloads.WithLabelValues("error").Inc()
		m.log.Error("new archive rejected; serving the previous one", "path", m.cfg.Path, "err", err)
		return
	}
	m.metrics.reloads.WithLabelValues("ok").Inc()
	old := m.cur.Swap(a)
	m.log.Info("archive reloaded", "path", m.cfg.Path, "pastes", a.pastes)
	if old != nil {
		old.release(m.log)
	}
}

// acquire returns the current archive with a reference taken for the
// caller, who must release it, or nil after Close.
func (m *Mirror) acquire() *mirrorArchive {
	for {
		a := m.cur.Load()
		if a == nil {
			return nil
		}
		// A count of 0 means a reload swapped a out and its last user
		// released it: cur already holds the next one, so look again.
		n := a.refs.Load()
		if n > 0 && a.refs.CompareAndSwap(n, n+1) {
			return a
		}
	}
}

// mirrorArchive is one open archive with a reference count: one for being
// the current archive, plus one for each request using it.
type mirrorArchive struct {
	a      *cdb.Archive
	pastes int
	refs   atomic.Int64
}

// openMirrorArchive opens the archive at path and checks that it can be
// served: the schema is right and the path index reads.
func openMirrorArchive(path string) (*mirrorArchive, error) {
	a, err := cdb.OpenArchive(path)
	if err != nil {
		return nil, err
	}
	paths, err := a.Paths()
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ma := &mirrorArchive{a: a}
	for _, p := range paths {
		if strings.HasPrefix(p, "/raw/") {
			ma.pastes++
		}
	}
	ma.refs.Store(1)
	return ma, nil
}

// release drops a reference and unmaps the archive with the last one.
func (a *mirrorArchive) release(log *slog.Logger) {
	if a.refs.Add(-1) == 0 {
		if err := a.a.Close(); err != nil {
			log.Warn("close archive", "err", err)
		}
	}
}

// ServeHTTP serves one request from the current archive.
func (m *Mirror) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	route := m.serve(rec, r, start)
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	m.metrics.requests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
}

// serve answers r and returns its route name for the metrics.
func (m *Mirror) serve(w http.ResponseWriter, r *http.Request, now time.Time) string {
	html := wantsHTML(r)
	route, key := mirrorRoute(r.URL.Path, html)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		m.fail(w, r, nil, http.StatusMethodNotAllowed,
			"read-only mirror: "+r.Method+" is not allowed, only GET and HEAD")
		return route
	}
	switch route {
	case "healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
		return route
	case "metrics":
		m.metrics.handler.ServeHTTP(w, r)
		return route
	}

	a := m.acquire()
	if a == nil {
		m.fail(w, r, nil, http.StatusServiceUnavailable, "mirror is shutting down")
		return route
	}
	defer a.release(m.log)
	if route == "index" && !html {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Add("Vary", "Accept")
		io.WriteString(w, "pastenode read-only mirror: GET /ID for a page, /raw/ID for the bytes\n")
		return route
	}
	if key == "" {
		m.fail(w, r, a, http.StatusNotFound, "not found")
		return route
	}
	res, ok, err := a.a.Lookup(key)
	if err != nil {
		m.log.Error("archive lookup", "path", key, "err", err)
		m.fail(w, r, a, http.StatusInternalServerError, "internal error: the archive is damaged")
		return route
	}
	if !ok || res.Status == http.StatusNotFound || expired(&res, now) {
		msg := "paste not found"
		if route == "static" || route == "index" {
			msg = "not found"
		}
		m.fail(w, r, a, http.StatusNotFound, msg)
		return route
	}
	if route == "view" || route == "index" {
		w.Header().Add("Vary", "Accept")
	}
	if err := m.send(w, r, &res, now); err != nil {
		m.log.Error("serve from archive", "path", key, "err", err)
		m.fail(w, r, a, http.StatusInternalServerError, "internal error: the archive is damaged")
	}
	return route
}

// mirrorRoute names the route of path, as the live node's router does,
// and returns the archive path that answers it, "" for none.
func mirrorRoute(path string, html bool) (route, key string) {
	switch {
	case path == "/":
		return "index", "/"
	case path == "/healthz":
		return "healthz", ""
	case path == "/metrics":
		return "metrics", ""
	case strings.HasPrefix(path, "/static/"):
		return "static", path
	case strings.HasPrefix(path, "/api/"):
		if oneSegment(path, "/api/v1/pastes/") {
			return "api_meta", path
		}
		return "api_unknown", ""
	case strings.HasPrefix(path, "/raw/"):
		if oneSegment(path, "/raw/") {
			return "raw", path
		}
	case oneSegment(path, "/"):
		// curl gets the bytes, as from the live node.
		if !html {
			return "view", "/raw" + path
		}
		return "view", path
	}
	return "unknown", ""
}

// oneSegment reports whether path is prefix followed by one non-empty
// path segment.
func oneSegment(path, prefix string) bool {
	rest, ok := strings.CutPrefix(path, prefix)
	return ok && rest != "" && !strings.Contains(rest, "/")
}

// expired reports whether the resource's Expires header has passed.
func expired(res *cdb.Resource, now time.Time) bool {
	v, ok := res.Header("Expires")
	if !ok {
		return false
	}
	t, err := http.ParseTime(v)
	return err == nil && !now.Before(t)
}

// send writes a stored resource. A gzip body goes as it is to clients that
// accept gzip and is decompressed for the others. The live node's security
// headers are added to every page, whatever the archive says.
func (m *Mirror) send(w http.ResponseWriter, r *http.Request, res *cdb.Resource, now time.Time) error {
	body, enc := res.Body, res.ContentEncoding()
	if enc == "gzip" && !acceptsGzip(r) {
		buf := bufPool.Get().(*bytes.Buffer)
		defer bufPool.Put(buf)
		if err := gunzip(buf, res.Body); err != nil {
			return err
		}
		body, enc = buf.Bytes(), "identity"
	}

	h := w.Header()
	for _, hd := range res.Headers {
		h.Del(hd.Name)
	}
	for _, hd := range res.Headers {
		if !strings.EqualFold(hd.Name, "Content-Encoding") {
			h.Add(hd.Name, hd.Value)
		}
	}
	if res.ContentEncoding() == "gzip" {
		h.Add("Vary", "Accept-Encoding")
	}
	if enc != "identity" {
		h.Set("Content-Encoding", enc)
		// A stored ETag names the decoded bytes; the encoded ones are
		// only weakly the same.
		if etag := h.Get("Etag"); etag != "" && !strings.HasPrefix(etag, "W/") {
			h.Set("Etag", "W/"+etag)
		}
	}
	if strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		setPageHeaders(w.Header())
	}
	if v := h.Get("Expires"); v != "" {
		// Cache no longer than the paste lives, counted from now rather
		// than from the export.
		if t, err := http.ParseTime(v); err == nil {
			h.Set("Cache-Control", maxAge(t.Sub(now)))
		}
	}

	if res.Status == http.StatusOK {
		if enc != "identity" {
			// ServeContent leaves the length of encoded bytes unset and
			// would cut ranges out of them; send them whole, with it.
			h.Set("Content-Length", strconv.Itoa(len(body)))
			r = r.Clone(r.Context())
			r.Header.Del("Range")
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
		return nil
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(res.Status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
	return nil
}

var (
	bufPool  = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	gzipPool sync.Pool // of *gzip.Reader
)

// gunzip decompresses gz into buf, which it resets first.
func gunzip(buf *bytes.Buffer, gz []byte) error {
	buf.Reset()
	var (
		zr  *gzip.Reader
		err error
	)
	if v := gzipPool.Get(); v != nil {
		zr = v.(*gzip.Reader)
		err = zr.Reset(bytes.NewReader(gz))
	} else {
		zr, err = gzip.NewReader(bytes.NewReader(gz))
	}
	if err != nil {
		return fmt.Errorf("gunzip: %w", err)
	}
	defer gzipPool.Put(zr)
	// The trailer holds the decoded size; trust it only as a hint.
	if n := len(gz); n >= 4 {
		size := int(gz[n-4]) | int(gz[n-3])<<8 | int(gz[n-2])<<16 | int(gz[n-1])<<24
		buf.Grow(min(size, 64<<20))
	}
	if _, err := io.Copy(buf, zr); err != nil {
		return fmt.Errorf("gunzip: %w", err)
	}
	return nil
}

// acceptsGzip reports whether the request's Accept-Encoding allows gzip.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.TrimSpace(name)
			if !strings.EqualFold(name, "gzip") && name != "*" {
				continue
			}
			q, ok := strings.CutPrefix(strings.TrimSpace(params), "q=")
			if !ok {
				return true
			}
			if f, err := strconv.ParseFloat(q, 64); err != nil || f > 0 {
				return true
			}
		}
	}
	return false
}

// fail answers with a one-line reason: JSON for API and JSON clients, the
// archive's 404 page for browsers when it has one, else plain text.
func (m *Mirror) fail(w http.ResponseWriter, r *http.Request, a *mirrorArchive, code int, msg string) {
	writeError(w, r, code, msg, func() bool {
		if code != http.StatusNotFound || a == nil || !wantsHTML(r) {
			return false
		}
		page, ok, err := a.a.Lookup("/*")
		return err == nil && ok && page.Status == http.StatusNotFound && m.send(w, r, &page, time.Now()) == nil
	})
}

type mirrorMetrics struct {
	reg      *prometheus.Registry
	handler  http.Handler
	requests *prometheus.CounterVec
	reloads  *prometheus.CounterVec
}

func newMirrorMetrics(m *Mirror) *mirrorMetrics {
	reg := prometheus.NewRegistry()
	mm := &mirrorMetrics{
		reg:     reg,
		handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pastenode_mirror_http_requests_total",
			Help: "HTTP requests to the mirror by route and status code.",
		}, []string{"route", "code"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pastenode_mirror_reloads_total",
			Help: "Archive files loaded after a change, by result (ok, error).",
		}, []string{"result"}),
	}
	mm.reloads.WithLabelValues("ok")
	mm.reloads.WithLabelValues("error")
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		mm.requests, mm.reloads,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pastenode_mirror_pastes",
			Help: "Pastes in the archive served now.",
		}, func() float64 { return float64(m.Pastes()) }),
	)
	return mm
}
