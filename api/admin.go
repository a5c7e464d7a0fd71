package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/mirror"
	"github.com/pastenode/pastenode/node"
	"github.com/pastenode/pastenode/ui"
)

// storageStore is a Store that reports its storage guard (*node.Node).
type storageStore interface {
	Storage() node.StorageStats
}

// handleStatus is GET /api/v1/status: the answering node's own view, for
// pastectl status, which asks every member.
func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	in := s.cfg.Store.Info()
	st := pastenode.Status{
		Node: pastenode.NodeStatus{
			ID:            in.ID,
			ClusterID:     in.ClusterID,
			State:         in.State,
			LeaderID:      in.LeaderID,
			Term:          in.Term,
			CommitIndex:   in.CommitIndex,
			AppliedIndex:  in.AppliedIndex,
			LastContactMs: in.LastContact.Milliseconds(),
			Version:       s.cfg.Version,
			UptimeS:       time.Since(s.started).Round(time.Millisecond).Seconds(),
			Ready:         true,
		},
		Members: []pastenode.Member{},
	}
	if err := s.cfg.Store.Ready(); err != nil {
		st.Node.Ready, st.Node.ReadyReason = false, err.Error()
	}
	if ss, ok := s.cfg.Store.(storageStore); ok {
		if full := ss.Storage(); full.Full {
			st.Node.StorageFull, st.Node.StorageReason = true, full.Reason
		}
	}
	if in.LastContact < 0 {
		st.Node.LastContactMs = -1
	}
	if s.cfg.Cluster != nil {
		st.Members = append(st.Members, s.cfg.Cluster.Members()...)
	}
	st.Store.Pastes, st.Store.Bytes = s.cfg.Store.Stats()
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) handleJoin(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Cluster == nil {
		s.error(w, r, errorf(http.StatusNotImplemented, "this node runs without gossip"))
		return
	}
	var req pastenode.JoinRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		s.error(w, r, errorf(http.StatusBadRequest, "bad JSON: %v", err))
		return
	}
	if len(req.Addrs) == 0 {
		s.error(w, r, errorf(http.StatusBadRequest, "addrs is empty: give at least one gossip address host:port"))
		return
	}
	if err := s.cfg.Cluster.Join(r.Context(), req.Addrs); err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"joined": req.Addrs})
}

func (s *Server) handleRemove(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Cluster == nil {
		s.error(w, r, errorf(http.StatusNotImplemented, "this node runs without gossip"))
		return
	}
	if err := s.cfg.Cluster.Remove(r.Context(), mux.Vars(r)["id"]); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// tokenRotator is a Store that rotates the cluster's admin token
// (*node.Node).
type tokenRotator interface {
	RotateAdminToken(ctx context.Context) (string, error)
}

// handleRotateToken is POST /api/v1/admin-token: the cluster gets a new
// admin token, which the answer carries; the old one stops working on
// every node.
func (s *Server) handleRotateToken(w http.ResponseWriter, r *http.Request) {
	rot, ok := s.cfg.Store.(tokenRotator)
	if !ok {
		s.error(w, r, errorf(http.StatusNotImplemented, "this node cannot rotate the admin token"))
		return
	}
	token, err := rot.RotateAdminToken(r.Context())
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, pastenode.AdminToken{Token: token})
}

// handleSnapshot is POST /api/v1/snapshot: 200 with the index, or 204 when
// there is nothing new to snapshot.
func (s *Server) handleSnapshot(w http.ResponseWriter, r *http.Request) {
	index, err := s.cfg.Store.Snapshot()
	if errors.Is(err, node.ErrNothingNew) {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]uint64{"index": index})
}

// exportProgressEvery is how often an export being built tells the client
// how far it has got; a var so that tests can shorten it.
var exportProgressEvery = time.Second

// writeExport and writeExportTail build the archive; vars so that tests
// can make them slow or fail.
var (
	writeExport     = mirror.WriteExport
	writeExportTail = mirror.WriteExportTail
)

// handleExport is GET /api/v1/export.cdb: the archive of mirror.WriteExport. It is
// built in a temporary file first, so the answer has a Content-Length and
// the paste count in a header; a HEAD builds it too, to give both. While
// it builds, an HTTP/1.1 or later client gets a 102 Processing
// informational answer every exportProgressEvery, with X-Export-Progress:
// pastes written so far and the store's paste count, "1200/100000": the
// client sees the export alive from the first second, however long it
// takes, and can time out on a silent gap rather than on the whole call.
//
// A GET that accepts pastenode.ExportTailType (pastectl's) rather gets the
// archive as it is built, in tail order (streamExport).
func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// A large store takes longer to build and send than the server's
	// write timeout allows; this admin call may take as long as it needs.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	pages, err := ui.New(ui.Options{Mirror: true, HighlightCacheBytes: -1, CacheOf: s.cfg.UI})
	if err != nil {
		s.error(w, r, err)
		return
	}
	w.Header()["Vary"] = []string{"Accept"}
	// HTTP/1.0 has no chunks to end an answer by: a cut would look like
	// the end of the file.
	if r.Method == http.MethodGet && r.ProtoAtLeast(1, 1) && acceptsTail(r) {
		s.streamExport(w, r, pages, start)
		return
	}
	f, err := os.CreateTemp("", "pastenode-export-*.cdb")
	if err != nil {
		s.error(w, r, fmt.Errorf("export: %w", err))
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	done := func() {}
	if s.cfg.ExportStarted != nil {
		done = sync.OnceFunc(s.cfg.ExportStarted())
		defer done()
	}
	st, err := s.buildExport(w, r, f, pages, start)
	done() // the build is over; the send is not
	if err != nil {
		s.error(w, r, err)
		return
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		s.error(w, r, fmt.Errorf("export: %w", err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="pastenode-%d.cdb"`, st.Index))
	h.Set("X-Export-Pastes", strconv.Itoa(st.Pastes))
	h.Set("Cache-Control", "no-store")
	s.log.Info("export", "index", st.Index, "pastes", st.Pastes, "burn_skipped", st.Burn,
		"expired_skipped", st.Expired, "bad_id_skipped", st.Skipped, "bytes", st.Bytes, "cached", st.Cached, "took", time.Since(start))
	http.ServeContent(w, r, "", time.Time{}, f)
}

// acceptsTail reports whether r accepts an export in tail order (with a
// q above 0).
func acceptsTail(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || mt != pastenode.ExportTailType {
			continue
		}
		q, err := strconv.ParseFloat(params["q"], 64)
		return params["q"] == "" || err == nil && q > 0
	}
	return false
}

// streamExport sends the export in tail order as it is built: its bytes
// go out from the first second, and the node keeps no temporary file of
// the archive's size (the other path builds the whole file, then sends
// it: for 100k pastes, 0.35 s of 3.3 s after the build). The paste count comes
// as the trailer X-Export-Pastes. An export that fails after its first
// bytes cuts the connection, so that the client sees an error rather than
// a short file.
func (s *Server) streamExport(w http.ResponseWriter, r *http.Request, pages *ui.UI, now time.Time) {
	done := func() {}
	if s.cfg.ExportStarted != nil {
		done = s.cfg.ExportStarted()
	}
	defer done()
	h := w.Header()
	h.Set("Content-Type", pastenode.ExportTailType)
	h.Set("Cache-Control", "no-store")
	h.Set("Trailer", "X-Export-Pastes")
	out := &countingWriter{w: w}
	send := newAsyncWriter(out, 64<<10, 4)
	st, err := writeExportTail(r.Context(), send, s.cfg.Store.View(), pages, now, mirror.ExportOptions{Cache: s.cfg.ExportCache})
	if sendErr := send.Close(); err == nil {
		err = sendErr
	}
	if err != nil {
		if out.n == 0 {
			h.Del("Trailer")
			s.error(w, r, err)
			return
		}
		s.log.Warn("export failed after its first bytes", "err", err, "bytes", out.n)
		panic(http.ErrAbortHandler)
	}
	h.Set("X-Export-Pastes", strconv.Itoa(st.Pastes))
	s.log.Info("export", "index", st.Index, "pastes", st.Pastes, "burn_skipped", st.Burn,
		"expired_skipped", st.Expired, "bad_id_skipped", st.Skipped, "bytes", st.Bytes,
		"cached", st.Cached, "sent", out.n, "took", time.Since(now))
}

// countingWriter counts the bytes written through it. It passes no
// empty write on: one would send a ResponseWriter's status and headers.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// buildExport writes the export into f on another goroutine and, while it
// runs, sends the client the progress informational answers.
func (s *Server) buildExport(w http.ResponseWriter, r *http.Request, f *os.File, pages *ui.UI, now time.Time) (mirror.ExportStats, error) {
	type result struct {
		st  mirror.ExportStats
		err error
	}
	var done atomic.Int64
	total, _ := s.cfg.Store.Stats()
	view := s.cfg.Store.View()
	out := make(chan result, 1)
	go func() {
		st, err := writeExport(r.Context(), f, view, pages, now, mirror.ExportOptions{Done: &done, Cache: s.cfg.ExportCache})
		out <- result{st, err}
	}()
	tick := time.NewTicker(exportProgressEvery)
	defer tick.Stop()
	h := w.Header()
	defer h.Del("X-Export-Progress")
	for {
		select {
		case res := <-out:
			return res.st, res.err
		case <-tick.C:
			// An HTTP/1.0 client must not get a 1xx answer.
			if r.ProtoAtLeast(1, 1) {
				h.Set("X-Export-Progress", strconv.FormatInt(done.Load(), 10)+"/"+strconv.FormatInt(total, 10))
				w.WriteHeader(http.StatusProcessing)
			}
		}
	}
}
