package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/pastenode/pastenode"
)

// ImportOptions describe a paste moved from another pastebin: its labels,
// and the times it had there.
type ImportOptions struct {
	Title     string
	Lang      string
	Burn      bool
	Encrypted bool
	CreatedAt time.Time // zero: when the node stores it
	ExpiresAt time.Time // zero: never
}

// Import stores content under id, which it keeps, with the times opts
// give: PUT /api/v1/pastes/{id}, an admin call. An id that is taken is an
// error matching ErrConflict, and the paste under it is left as it is.
func (c *Client) Import(ctx context.Context, id string, content []byte, opts ImportOptions) (*pastenode.Created, error) {
	q := labels(opts.Title, opts.Lang, opts.Burn, opts.Encrypted)
	if !opts.CreatedAt.IsZero() {
		q.Set("created_at", opts.CreatedAt.Format(time.RFC3339Nano))
	}
	if !opts.ExpiresAt.IsZero() {
		q.Set("expires_at", opts.ExpiresAt.Format(time.RFC3339Nano))
	}
	if content == nil {
		content = []byte{} // a body, even empty, for the server to refuse
	}
	return c.create(ctx, call{method: http.MethodPut, path: "/api/v1/pastes/" + url.PathEscape(id), query: q, body: content})
}
