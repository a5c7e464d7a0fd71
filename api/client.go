package api

import (
	"bytes"
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
	"time"

	"github.com/pastenode/pastenode"
)

// Client speaks the HTTP API of a pastenode cluster. It holds a list of
// node addresses and asks them in order: a node that cannot be reached, or
// that answers 503 (no quorum, no leader), is skipped for the next one.
// Any other answer, success or error, is final.
type Client struct {
	bases      []*url.URL
	adminToken string
	timeout    time.Duration
	hc         *http.Client
}

// ClientOptions configures a Client. The zero value is usable.
type ClientOptions struct {
	// AdminToken, when set, is sent as "Authorization: Bearer" on every
	// request.
	AdminToken string
	// Timeout bounds each attempt against one node, until its answer has
	// been read. Export's body is streamed without this limit. Zero means
	// no limit beyond the context's.
	Timeout time.Duration
	// HTTPClient replaces http.DefaultClient, e.g. for custom TLS.
	HTTPClient *http.Client
}

// PutOptions are the options of a create, sent as query parameters.
type PutOptions struct {
	Lang   string // syntax-highlighting language; empty is plain text
	Expire string // "never" or a duration like "10m", "1d"; empty is the server's default
	Title  string
	Burn   bool // hand the content to exactly one reader
}

// APIError is a non-2xx answer from a node.
type APIError struct {
	StatusCode int
	Message    string // the server's one-line reason, may be empty
}

func (e *APIError) Error() string {
	s := strconv.Itoa(e.StatusCode)
	if text := http.StatusText(e.StatusCode); text != "" {
		s += " " + text
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// NewClient returns a Client for the nodes at addrs, each a base URL such as
// "http://127.0.0.1:8080" or a bare "host:port", which means http.
func NewClient(addrs []string, opts ClientOptions) (*Client, error) {
	if len(addrs) == 0 {
		return nil, errors.New("no node address given")
	}
	c := &Client{adminToken: opts.AdminToken, timeout: opts.Timeout, hc: opts.HTTPClient}
	if c.hc == nil {
		c.hc = http.DefaultClient
	}
	for _, a := range addrs {
		a = strings.TrimSpace(a)
		if !strings.Contains(a, "://") {
			a = "http://" + a
		}
		u, err := url.Parse(a)
		if err != nil {
			return nil, fmt.Errorf("node address %q: %w", a, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("node address %q: want http://host:port or host:port", a)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.RawQuery, u.Fragment = "", ""
		c.bases = append(c.bases, u)
	}
	return c, nil
}

// Put creates a paste from content. content is read fully first so that the
// request can be sent again to the next node.
func (c *Client) Put(ctx context.Context, content io.Reader, opts PutOptions) (*pastenode.Created, error) {
	body, err := io.ReadAll(content)
	if err != nil {
		return nil, fmt.Errorf("read content: %w", err)
	}
	q := url.Values{}
	if opts.Lang != "" {
		q.Set("lang", opts.Lang)
	}
	if opts.Expire != "" {
		q.Set("expire", opts.Expire)
	}
	if opts.Title != "" {
		q.Set("title", opts.Title)
	}
	if opts.Burn {
		q.Set("burn", "true")
	}
	var created pastenode.Created
	err = c.do(ctx, clientCall{
		method: http.MethodPost, path: "/", query: q, body: body,
		contentType: "application/octet-stream", accept: "application/json",
	}, func(resp *http.Response) error {
		return clientCreated(resp, &created)
	})
	if err != nil {
		return nil, err
	}
	return &created, nil
}

// clientCreated fills c from a create's answer: the JSON body when there is
// one, else the headers that every create answer carries.
func clientCreated(resp *http.Response, c *pastenode.Created) error {
	if clientIsJSON(resp.Header) {
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
// nodes, not from the URL's host.
func (c *Client) Get(ctx context.Context, idOrURL string) ([]byte, error) {
	id, err := clientPasteID(idOrURL)
	if err != nil {
		return nil, err
	}
	var content []byte
	err = c.do(ctx, clientCall{method: http.MethodGet, path: "/raw/" + url.PathEscape(id)},
		func(resp *http.Response) error {
			content, err = io.ReadAll(resp.Body)
			return err
		})
	return content, err
}

// Meta returns a paste's metadata without its content; it does not burn.
// id may be a paste URL, as for Get.
func (c *Client) Meta(ctx context.Context, id string) (*pastenode.Meta, error) {
	id, err := clientPasteID(id)
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
	id, err := clientPasteID(id)
	if err != nil {
		return err
	}
	call := clientCall{method: http.MethodDelete, path: "/" + url.PathEscape(id)}
	if token != "" {
		call.header = http.Header{"X-Delete-Token": {token}}
	}
	return c.do(ctx, call, nil)
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
	return c.do(ctx, clientCall{
		method: http.MethodPost, path: "/api/v1/cluster/join", body: body,
		contentType: "application/json", accept: "application/json",
	}, nil)
}

// Remove removes a node from Raft and gossip.
func (c *Client) Remove(ctx context.Context, nodeID string) error {
	return c.do(ctx, clientCall{
		method: http.MethodDelete, path: "/api/v1/cluster/nodes/" + url.PathEscape(nodeID),
		accept: "application/json",
	}, nil)
}

// Snapshot forces a Raft snapshot.
func (c *Client) Snapshot(ctx context.Context) error {
	return c.do(ctx, clientCall{
		method: http.MethodPost, path: "/api/v1/snapshot", accept: "application/json",
	}, nil)
}

// Ready returns nil when the first node that answers is ready (knows a
// leader, has applied what it has committed). Readiness is a question about
// one node, so its 503 is final here rather than a reason to ask the next.
func (c *Client) Ready(ctx context.Context) error {
	return c.do(ctx, clientCall{method: http.MethodGet, path: "/readyz", final503: true}, nil)
}

// Export streams the CDB export to w and returns the number of bytes written.
// progress, if not nil, is called with (0, total) once the answer starts and
// after every write; total is -1 when the server does not say.
//
// If w has a method SetExportPastes(n int64), it is called with the server's
// X-Export-Pastes count (header or trailer) when the server sends one.
func (c *Client) Export(ctx context.Context, w io.Writer, progress func(done, total int64)) (int64, error) {
	var n int64
	err := c.do(ctx, clientCall{method: http.MethodGet, path: "/api/v1/export.cdb", stream: true},
		func(resp *http.Response) error {
			total := resp.ContentLength
			pw := &clientProgressWriter{w: w, total: total, progress: progress}
			if progress != nil {
				progress(0, total)
			}
			var err error
			n, err = io.Copy(pw, resp.Body)
			if err != nil {
				return err
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

type clientProgressWriter struct {
	w        io.Writer
	done     int64
	total    int64
	progress func(done, total int64)
}

func (p *clientProgressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	if p.progress != nil {
		p.progress(p.done, p.total)
	}
	return n, err
}

func (c *Client) getJSON(ctx context.Context, path string, v any) error {
	return c.do(ctx, clientCall{method: http.MethodGet, path: path, accept: "application/json"},
		func(resp *http.Response) error {
			if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
				return fmt.Errorf("decode %s: %w", path, err)
			}
			return nil
		})
}

// clientCall is one logical request, sent to each node in turn.
type clientCall struct {
	method, path string
	query        url.Values
	body         []byte
	contentType  string
	accept       string
	header       http.Header
	stream       bool // the body may take long: Timeout ends at the headers
	final503     bool // a 503 is the answer, not a reason to try the next node
}

// do sends call to each node in order until one answers, and hands a 2xx
// answer to handle (nil: ignore the body). Non-2xx answers become *APIError.
func (c *Client) do(ctx context.Context, call clientCall, handle func(*http.Response) error) error {
	var lastErr error
	for _, base := range c.bases {
		next, err := c.attempt(ctx, base, call, handle)
		if err == nil {
			return nil
		}
		if !next || ctx.Err() != nil {
			return err
		}
		// A node's 503 reason says more than a later node's dial error.
		var apiErr *APIError
		if lastErr == nil || !errors.As(lastErr, &apiErr) || errors.As(err, &apiErr) {
			lastErr = err
		}
	}
	if len(c.bases) > 1 {
		return fmt.Errorf("no node could answer (tried %d): %w", len(c.bases), lastErr)
	}
	return lastErr
}

// attempt makes call against one node. next reports whether the error
// allows trying another node: the node was not reached, or it said 503.
func (c *Client) attempt(ctx context.Context, base *url.URL, call clientCall, handle func(*http.Response) error) (next bool, err error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var timer *time.Timer
	if c.timeout > 0 {
		timer = time.AfterFunc(c.timeout, func() {
			cancel(fmt.Errorf("no answer from %s within %s", base.Host, c.timeout))
		})
		defer timer.Stop()
	}
	// timedOut gives the timeout as the error instead of "context canceled".
	timedOut := func(err error) error {
		if cause := context.Cause(actx); cause != nil && ctx.Err() == nil {
			return cause
		}
		return err
	}

	u := *base
	u.Path += call.path
	u.RawQuery = call.query.Encode()
	var body io.Reader
	if call.body != nil {
		body = bytes.NewReader(call.body)
	}
	req, err := http.NewRequestWithContext(actx, call.method, u.String(), body)
	if err != nil {
		return false, err
	}
	for k, vs := range call.header {
		req.Header[k] = vs
	}
	if call.contentType != "" {
		req.Header.Set("Content-Type", call.contentType)
	}
	if call.accept != "" {
		req.Header.Set("Accept", call.accept)
	}
	if c.adminToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.adminToken)
	}

	resp, err := c.hc.Do(req)
	if err != nil {
		return true, timedOut(err)
	}
	defer resp.Body.Close()
	if call.stream && timer != nil {
		timer.Stop()
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		apiErr := clientDecodeError(resp)
		return resp.StatusCode == http.StatusServiceUnavailable && !call.final503, apiErr
	}
	if handle == nil {
		return false, nil
	}
	if err := handle(resp); err != nil {
		return false, timedOut(err)
	}
	return false, nil
}

// clientDecodeError reads the one-line reason of an error answer: the
// "error" field of a JSON body, else the first line of the text.
func clientDecodeError(resp *http.Response) *APIError {
	e := &APIError{StatusCode: resp.StatusCode}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	b = bytes.TrimSpace(b)
	if clientIsJSON(resp.Header) || bytes.HasPrefix(b, []byte("{")) {
		var eb pastenode.ErrorBody
		if json.Unmarshal(b, &eb) == nil && eb.Error != "" {
			e.Message = eb.Error
			return e
		}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	e.Message = strings.TrimSpace(line)
	return e
}

func clientIsJSON(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "application/json"
}

// clientPasteID extracts the id from an id or a paste URL.
func clientPasteID(s string) (string, error) {
	in := s
	s = strings.TrimSpace(s)
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return "", fmt.Errorf("paste URL %q: %w", in, err)
		}
		// The id is the last path segment of /ID, /raw/ID, or either
		// under a prefix when the nodes sit behind a proxy.
		if p := strings.Trim(u.Path, "/"); p != "" {
			s = path.Base(p)
		} else {
			s = ""
		}
	} else {
		s, _, _ = strings.Cut(s, "#")
	}
	if s == "" || strings.Contains(s, "/") {
		return "", fmt.Errorf("not a paste id or URL: %q", in)
	}
	return s, nil
}
