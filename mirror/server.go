// Package mirror builds and serves pastenode's static mirrors. WriteExport
// writes one consistent view of the store to a CDB archive in the
// kawipiko-2022a schema (see package cdb): for every paste that may be
// mirrored, its raw bytes, its page and its metadata, and the site around
// them. Server serves such an archive read-only under the live node's read
// URLs, with the same headers and error answers, and swaps in a new
// archive renamed over the old one without a restart.
//
// The live node's GET /api/v1/export.cdb and `pastenode mirror` both use
// this package; it depends on cdb, fsm and ui, never on api.
package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pastenode/pastenode/cdb"
)

// Config configures a Server.
type Config struct {
	// Path is the archive, as WriteExport writes it. A file renamed over
	// it replaces the archive served, once it opens and reads correctly.
	// Once the watcher sees the file served written in place, nothing is
	// served from it, and requests get a 503 until a sound file is there
	// (checkInPlace).
	Path   string
	Logger *slog.Logger
	// Poll is how often Path is checked for a new file; 0 means 200ms.
	Poll time.Duration
}

// Validate checks c and fills in defaults.
func (c *Config) Validate() error {
	if c.Path == "" {
		return errors.New("mirror: no archive file")
	}
	if c.Poll < 0 {
		return fmt.Errorf("mirror: poll interval %s must not be negative", c.Poll)
	}
	if c.Poll == 0 {
		c.Poll = 200 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Server serves an exported archive read-only under the live node's read
// URLs: /{id}, /raw/{id}, /api/v1/pastes/{id}, /static/ and /. It watches
// the archive's path and swaps in a new file atomically; requests that
// started on the old one finish on it, and its mapping is released after
// the last of them.
type Server struct {
	cfg     Config
	log     *slog.Logger
	cur     atomic.Pointer[mirrorArchive]
	metrics *metrics

	started   atomic.Bool   // Start succeeded: a watcher runs
	stop      chan struct{} // closed by Close: the watcher ends
	done      chan struct{} // closed by the watcher when it ends
	closeOnce sync.Once
}

// New returns a mirror of cfg.Path. It opens nothing before Start.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Server{
		cfg:  cfg,
		log:  cfg.Logger.With("component", "mirror"),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	m.metrics = newMetrics(m)
	return m, nil
}

// Start opens the archive, which must be valid, and starts watching its
// path for a replacement until ctx ends or Close is called. It may be
// called once.
func (m *Server) Start(ctx context.Context) error {
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
func (m *Server) Close() error {
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
func (m *Server) Handler() http.Handler { return m }

// Registry returns the Prometheus registry the mirror reports to.
func (m *Server) Registry() *prometheus.Registry { return m.metrics.reg }

// Pastes returns the number of pastes in the archive served now.
func (m *Server) Pastes() int {
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
func (m *Server) watch(ctx context.Context, last os.FileInfo) {
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
		if sameFile(fi, last) {
			continue
		}
		last = fi
		m.checkInPlace(fi)
		m.reload()
	}
}

// sameFile reports whether a and b describe the same file, unchanged.
func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// checkInPlace stops serving the current archive when fi, the file at the
// archive's path now, is the file it maps but changed since: written in
// place (cp, or a shell's > redirect) rather than renamed over it. The
// mapping then shows the new file's bytes at the old one's offsets, or
// faults beyond its new end, and answers from it could carry another
// paste's bytes. Until a sound file loads, requests get a 503.
func (m *Server) checkInPlace(fi os.FileInfo) {
	a := m.acquire()
	if a == nil {
		return
	}
	defer a.release(m.log)
	if was := a.a.Info(); was == nil || !os.SameFile(fi, was) || sameFile(fi, was) {
		return
	}
	if !a.changed.Swap(true) {
		m.log.Error("archive file changed in place; answering 503 until a sound file loads (replace the file by rename, as pastectl export and rsync do)",
			"path", m.cfg.Path)
	}
}

// reload opens the file at the archive's path and, if it is sound, serves
// it instead of the current one.
func (m *Server) reload() {
	a, err := openMirrorArchive(m.cfg.Path)
	if err != nil {
		m.metrics.reloads.WithLabelValues("error").Inc()
		if cur := m.cur.Load(); cur != nil && cur.changed.Load() {
			// Most likely a copy still being written: checkInPlace has
			// said what happens, and this repeats at every poll until
			// the copy ends.
			m.log.Warn("archive file written in place is not a sound archive yet; still answering 503", "path", m.cfg.Path, "err", err)
			return
		}
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
func (m *Server) acquire() *mirrorArchive {
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
	cache  preparedCache
	// changed is set once the file a maps was found changed in place
	// (Server.checkInPlace): nothing is served from it from then on.
	changed atomic.Bool
}

// openMirrorArchive opens the archive at path and checks that it can be
// served: the schema is right and the path index reads. A file cut short
// while it is read is an error too, not a fault that ends the process.
func openMirrorArchive(path string) (ma *mirrorArchive, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var a *cdb.Archive
	defer func() {
		e := recover()
		if e == nil {
			return
		}
		if !isFault(e) {
			panic(e)
		}
		if a != nil {
			a.Close()
		}
		ma, err = nil, fmt.Errorf("%s changed while being read: %v", path, e)
	}()
	a, err = cdb.OpenArchive(path)
	if err != nil {
		return nil, err
	}
	paths, err := a.Paths()
	if err != nil {
		a.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ma = &mirrorArchive{a: a}
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
