package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/pastenode/pastenode"
)

// backupStore is a Store that can write a backup (*node.Node).
type backupStore interface {
	Backup(ctx context.Context, w io.Writer) (uint64, error)
}

// handleBackup is GET /api/v1/backup: a consistent snapshot of the whole
// state in the backup file format (pastenode.BackupWriter). It streams as
// it is written, with no length: a failure halfway aborts the connection,
// and the missing trailer tells the client the file is incomplete.
func (s *Server) handleBackup(w http.ResponseWriter, r *http.Request) {
	bs, ok := s.cfg.Store.(backupStore)
	if !ok {
		s.error(w, r, errorf(http.StatusNotImplemented, "this node cannot write backups"))
		return
	}
	start := time.Now()
	// A large store takes longer to send than the server's write timeout.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", `attachment; filename="pastenode.backup"`)
	h.Set("Cache-Control", "no-store")
	cw := &countingWriter{w: w}
	bw := pastenode.NewBackupWriter(cw)
	index, err := bs.Backup(r.Context(), bw)
	if err == nil {
		err = bw.Close()
	}
	if err != nil {
		if cw.n == 0 {
			s.error(w, r, fmt.Errorf("backup: %w", err))
			return
		}
		s.log.Error("backup failed while streaming", "bytes", cw.n, "err", err)
		panic(http.ErrAbortHandler)
	}
	s.log.Info("backup", "index", index, "bytes", cw.n, "took", time.Since(start))
}
