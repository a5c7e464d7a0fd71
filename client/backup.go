package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// Backup streams the cluster's backup (GET /api/v1/backup) to w and returns
// the number of bytes written. As for Export, Timeout bounds each silence
// of the server, not the whole transfer: the body may take as long as it
// needs while bytes keep coming. progress, if not nil, is called with
// (0, -1) once the answer starts and after every write. The caller checks
// the file with pastenode.VerifyBackup: a server that fails halfway leaves
// it without its trailer.
func (c *Client) Backup(ctx context.Context, w io.Writer, progress func(done, total int64)) (int64, error) {
	var n int64
	err := c.do(ctx, call{method: http.MethodGet, path: "/api/v1/backup", stream: true},
		func(resp *http.Response) error {
			pw := &progressWriter{w: w, total: -1, progress: progress}
			if progress != nil {
				progress(0, -1)
			}
			var err error
			n, err = pw.copyFrom(resp.Body)
			return err
		})
	if err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	return n, nil
}
