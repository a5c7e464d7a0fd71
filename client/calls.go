package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/pastenode/pastenode"
)

// PutOptions are the options of a create, sent as query parameters.
type PutOptions struct {
	Lang   string // syntax-highlighting language; empty is plain text
	Expire string // "never" or a duration like "10m", "1d"; empty is the server's default
	Title  string
	Burn   bool // hand the content to exactly one reader
	// Encrypted marks content that was encrypted before it was sent (the
	// pn1 format), so that pages decrypt it in the browser.
	Encrypted bool
}

// Put creates a paste from content. content is read fully first so that the
// request can be sent again to the next node.
func (c *Client) Put(ctx context.Context, content io.Reader, opts PutOptions) (*pastenode.Created, error) {
	body, err := io.ReadAll(content)
	if err != nil {
		return nil, fmt.Errorf("read content: %w", err)
	}
	q := labels(opts.Title, opts.Lang, opts.Burn, opts.Encrypted)
	if opts.Expire != "" {
		q.Set("expire", opts.Expire)
	}
	var header http.Header
	if c.createTok != "" {
		header = http.Header{"X-Paste-Token": {c.createTok}}
	}
	return c.create(ctx, call{method: http.MethodPost, path: "/", query: q, body: body, header: header})
}

// create makes cl, a create or an import, and returns the paste it made.
func (c *Client) create(ctx context.Context, cl call) (*pastenode.Created, error) {
	cl.contentType, cl.accept = "application/octet-stream", "application/json"
	var created pastenode.Created
	err := c.do(ctx, cl, func(resp *http.Response) error {
		return decodeCreated(resp, &created)
	})
	if err != nil {
		return nil, err
	}
	return &created, nil
}

// labels is the query of what a create and an import share: the title,
// the language and the flags, each left out when it is empty or false.
func labels(title, lang string, burn, encrypted bool) url.Values {
	q := url.Values{}
	if title != "" {
		q.Set("title", title)
	}
	if lang != "" {
		q.Set("lang", lang)
	}
	if burn {
		q.Set("burn", "true")
	}
	if encrypted {
		q.Set("encrypted", "true")
	}
	return q
}

// decodeCreated fills c from a create's answer: the JSON body when there is
// one, else the headers that every create answer carries.
func decodeCreated(resp *http.Response, c *pastenode.Created) error {
	if mediaType(resp.Header) == "application/json" {
		if err := json.NewDecoder(resp.Body).Decode(c); err != nil {
			return fmt.Errorf("decode create answer: %w", err)
		}
		return nil
	}
	c.ID = resp.Header.Get("X-Paste-Id")
	c.URL = resp.Header.Get("Location")
	c.DeleteToken = resp.Header.Get("X-Delete-Token")
	if c.ID == "" || c.URL == "" {
		return errors.New("create answer has neither JSON nor X-Paste-Id and Location")
	}
	return nil
}

// Get returns the exact bytes of a paste; reading a burn paste consumes it.
// idOrURL is an id or a paste URL (".../ID", ".../raw/ID", with or without
// a "#fragment"); only the id is used, and it is fetched from the Client's
// nodes. To ask the node a URL names, make a Client for the base that
// SplitPasteURL returns.
func (c *Client) Get(ctx context.Context, idOrURL string) ([]byte, error) {
	id, err := pasteID(idOrURL)
	if err != nil {
		return nil, err
	}
	return c.getBytes(ctx, call{method: http.MethodGet, path: "/raw/" + url.PathEscape(id)})
}

// getBytes makes cl and returns the body of its answer.
func (c *Client) getBytes(ctx context.Context, cl call) (body []byte, err error) {
	err = c.do(ctx, cl, func(resp *http.Response) error {
		body, err = io.ReadAll(resp.Body)
		return err
	})
	return body, err
}

// Terminal formats of GetTerminal.
const (
	ANSI256   = "ansi"
	ANSI16    = "ansi16"
	TrueColor = "truecolor"
)

// GetTerminal returns a paste highlighted with ANSI colour escapes in
// format (ANSI256, ANSI16 or TrueColor), as the language lang, or the
// paste's own when lang is empty. It never consumes a burn paste: the
// server refuses to highlight one (409); read it with Get.
func (c *Client) GetTerminal(ctx context.Context, idOrURL, format, lang string) ([]byte, error) {
	id, err := pasteID(idOrURL)
	if err != nil {
		return nil, err
	}
	q := url.Values{"fmt": {format}}
	if lang != "" {
		q.Set("lang", lang)
	}
	return c.getBytes(ctx, call{method: http.MethodGet, path: "/" + url.PathEscape(id), query: q, accept: "text/x-ansi"})
}

// Meta returns a paste's metadata without its content; it does not burn.
// id may be a paste URL, as for Get.
func (c *Client) Meta(ctx context.Context, id string) (*pastenode.Meta, error) {
	id, err := pasteID(id)
	if err != nil {
		return nil, err
	}
	var m pastenode.Meta
	if err := c.getJSON(ctx, "/api/v1/pastes/"+url.PathEscape(id), &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// Delete deletes a paste with its delete token. With an admin token the
// delete token may be empty. id may be a paste URL, as for Get.
func (c *Client) Delete(ctx context.Context, id, token string) error {
	id, err := pasteID(id)
	if err != nil {
		return err
	}
	cl := call{method: http.MethodDelete, path: "/" + url.PathEscape(id)}
	if token != "" {
		cl.header = http.Header{"X-Delete-Token": {token}}
	}
	return c.do(ctx, cl, nil)
}

// Status returns the cluster as the first node that answers sees it.
func (c *Client) Status(ctx context.Context) (*pastenode.Status, error) {
	var s pastenode.Status
	if err := c.getJSON(ctx, "/api/v1/status", &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Join asks the node to join the gossip cluster of the seeds (gossip
// addresses, host:port).
func (c *Client) Join(ctx context.Context, seeds []string) error {
	body, err := json.Marshal(pastenode.JoinRequest{Addrs: seeds})
	if err != nil {
		return err
	}
	return c.do(ctx, call{
		method: http.MethodPost, path: "/api/v1/cluster/join", body: body,
		contentType: "application/json", accept: "application/json",
	}, nil)
}

// Remove removes a node from Raft and gossip.
func (c *Client) Remove(ctx context.Context, nodeID string) error {
	return c.do(ctx, call{
		method: http.MethodDelete, path: "/api/v1/cluster/nodes/" + url.PathEscape(nodeID),
		accept: "application/json",
	}, nil)
}

// Snapshot forces a Raft snapshot.
func (c *Client) Snapshot(ctx context.Context) error {
	return c.do(ctx, call{
		method: http.MethodPost, path: "/api/v1/snapshot", body: []byte("{}"),
		contentType: "application/json", accept: "application/json",
	}, nil)
}

// RotateAdminToken gives the cluster a new admin token and returns it; the
// old one stops working on every node.
func (c *Client) RotateAdminToken(ctx context.Context) (string, error) {
	var t pastenode.AdminToken
	err := c.do(ctx, call{
		method: http.MethodPost, path: "/api/v1/admin-token", body: []byte("{}"),
		contentType: "application/json", accept: "application/json",
	}, func(resp *http.Response) error {
		return json.NewDecoder(resp.Body).Decode(&t)
	})
	if err == nil && t.Token == "" {
		err = errors.New("the answer carries no token")
	}
	return t.Token, err
}

// Ready returns nil when the first node that answers is ready (knows a
// leader, has applied what it has committed). Readiness is a question about
// one node, so its 503 is final here rather than a reason to ask the next.
func (c *Client) Ready(ctx context.Context) error {
	return c.do(ctx, call{method: http.MethodGet, path: "/readyz", final503: true}, nil)
}

// Export streams the CDB export to w and returns the number of bytes written.
// progress, if not nil, is called with (0, total) once the answer starts and
// after every write; total is -1 when the server does not say.
//
// If w has a method SetExportPastes(n int64), it is called with the server's
// X-Export-Pastes count (header or trailer) when the server sends one. If w
// has a method ExportProgress(pastes, total int64), it is called with each
// progress report the server sends while it builds the export (pastes
// written so far, pastes in the store), before the first byte.
//
// If w can also seek and write at an offset, such as a file (not one
// opened to append), Export asks for the export in tail order
// (pastenode.ExportTailType), which the server sends as it builds it, and
// puts the tail in its place where w's file starts: w gets the file's
// bytes from the first second on, and the same file. A tail that is not
// the file's table directory (an answer cut short) is an error.
//
// The Client's Timeout bounds each silence of the server, not the export.
func (c *Client) Export(ctx context.Context, w io.Writer, progress func(done, total int64)) (int64, error) {
	var n int64
	cl := call{method: http.MethodGet, path: "/api/v1/export.cdb", stream: true}
	wa, start, outOfOrder := fileStart(w)
	if outOfOrder {
		cl.accept = pastenode.ExportTailType + ", application/octet-stream;q=0.5"
	}
	if p, ok := w.(interface{ ExportProgress(pastes, total int64) }); ok {
		cl.informational = func(code int, h http.Header) {
			done, total, ok := strings.Cut(h.Get("X-Export-Progress"), "/")
			d, err1 := strconv.ParseInt(done, 10, 64)
			t, err2 := strconv.ParseInt(total, 10, 64)
			if ok && err1 == nil && err2 == nil {
				p.ExportProgress(d, t)
			}
		}
	}
	err := c.do(ctx, cl,
		func(resp *http.Response) error {
			total := resp.ContentLength
			var tail *tailWriter
			dst := w
			if outOfOrder && mediaType(resp.Header) == pastenode.ExportTailType {
				tail = &tailWriter{w: w}
				if err := tail.start(); err != nil {
					return err
				}
				dst = tail
			}
			pw := &progressWriter{w: dst, total: total, progress: progress}
			if progress != nil {
				progress(0, total)
			}
			var err error
			n, err = pw.copyFrom(resp.Body)
			if err != nil {
				return err
			}
			if tail != nil {
				if err := tail.finish(wa, start, n); err != nil {
					return err
				}
			}
			if s, ok := w.(interface{ SetExportPastes(int64) }); ok {
				v := resp.Trailer.Get("X-Export-Pastes")
				if v == "" {
					v = resp.Header.Get("X-Export-Pastes")
				}
				if p, err := strconv.ParseInt(v, 10, 64); err == nil {
					s.SetExportPastes(p)
				}
			}
			return nil
		})
	if err != nil {
		return n, fmt.Errorf("export: %w", err)
	}
	return n, nil
}

// fileStart returns w as an io.WriterAt and its current offset, where the
// file it gets starts, when w can take an export in tail order.
func fileStart(w io.Writer) (io.WriterAt, int64, bool) {
	type writeSeekerAt interface {
		io.WriteSeeker
		io.WriterAt
	}
	ws, ok := w.(writeSeekerAt)
	if !ok {
		return nil, 0, false
	}
	start, err := ws.Seek(0, io.SeekCurrent)
	if err != nil { // a pipe or a terminal
		return nil, 0, false
	}
	return ws, start, true
}

// tailWriter writes an export in tail order to w as the file it stands
// for: a placeholder for the tail first, then every byte but the last
// pastenode.ExportTailSize, which it holds back and finish writes at the
// front.
type tailWriter struct {
	w    io.Writer
	held []byte // the last bytes written, at most ExportTailSize
}

func (t *tailWriter) start() error {
	_, err := t.w.Write(make([]byte, pastenode.ExportTailSize))
	return err
}

func (t *tailWriter) Write(p []byte) (int, error) {
	const size = pastenode.ExportTailSize
	if len(t.held)+len(p) <= size {
		t.held = append(t.held, p...)
		return len(p), nil
	}
	// Everything but the last size bytes of held and p goes out.
	out := len(t.held) + len(p) - size
	if out <= len(t.held) {
		if _, err := t.w.Write(t.held[:out]); err != nil {
			return 0, err
		}
		t.held = append(t.held[:copy(t.held, t.held[out:])], p...)
		return len(p), nil
	}
	if _, err := t.w.Write(t.held); err != nil {
		return 0, err
	}
	if _, err := t.w.Write(p[:out-len(t.held)]); err != nil {
		return 0, err
	}
	t.held = append(t.held[:0], p[out-len(t.held):]...)
	return len(p), nil
}

// finish checks the tail of a file of size bytes and writes it at the
// front of the file, which starts at offset start of wa.
func (t *tailWriter) finish(wa io.WriterAt, start, size int64) error {
	if len(t.held) != pastenode.ExportTailSize {
		return fmt.Errorf("an export of %d bytes in tail order is shorter than its tail", len(t.held))
	}
	if err := pastenode.CheckExportTail(t.held, size); err != nil {
		return err
	}
	_, err := wa.WriteAt(t.held, start)
	return err
}

// progressWriter reports the bytes written through it to progress.
type progressWriter struct {
	w        io.Writer
	done     int64
	total    int64
	progress func(done, total int64)
}

// copyFrom copies r to p in large pieces: an export or a backup is
// hundreds of megabytes, and io.Copy's 32 KiB would take a read and a
// write system call, and a progress report, for every 32 KiB of them.
func (p *progressWriter) copyFrom(r io.Reader) (int64, error) {
	return io.CopyBuffer(p, r, make([]byte, 1<<20))
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	if p.progress != nil {
		p.progress(p.done, p.total)
	}
	return n, err
}

func (c *Client) getJSON(ctx context.Context, path string, v any) error {
	return c.do(ctx, call{method: http.MethodGet, path: path, accept: "application/json"},
		func(resp *http.Response) error {
			if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
				return fmt.Errorf("decode %s: %w", path, err)
			}
			return nil
		})
}

// mediaType is the media type of h's Content-Type, without parameters.
func mediaType(h http.Header) string {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt
}

// pasteID extracts the id from an id or a paste URL.
func pasteID(s string) (string, error) {
	_, id, err := SplitPasteURL(s)
	return id, err
}

// SplitPasteURL splits a paste URL into the base URL of the node that
// serves it and the paste's id: "https://host/paste/raw/ID#KEY" gives
// "https://host/paste" and "ID". The id is the last segment of /ID,
// /raw/ID or /download/ID, under any base path a proxy adds. A bare id
// (with or without a "#fragment") gives no base.
func SplitPasteURL(s string) (base, id string, err error) {
	in := s
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		id, _, _ = strings.Cut(s, "#")
		if id == "" || strings.Contains(id, "/") {
			return "", "", fmt.Errorf("not a paste id or URL: %q", in)
		}
		return "", id, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", "", fmt.Errorf("paste URL %q: %w", in, err)
	}
	p := strings.Trim(u.Path, "/")
	if p == "" || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", fmt.Errorf("not a paste id or URL: %q", in)
	}
	dir, id := path.Split("/" + p)
	dir = strings.TrimSuffix(dir, "/")
	if d, last := path.Split(dir); last == "raw" || last == "download" {
		dir = strings.TrimSuffix(d, "/")
	}
	return u.Scheme + "://" + u.Host + dir, id, nil
}
