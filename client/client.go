// Package client is the typed HTTP client of a pastenode cluster, the one
// that pastectl and the tests use. It speaks the contract of API.md over a
// list of node addresses, falling through to the next node when one cannot
// be reached or has no quorum, and turns error answers back into errors that
// callers test with errors.Is and errors.As (see Error). It depends on the
// standard library and the wire types of the root package only, so a
// program that talks to a cluster does not link the server.
package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pastenode/pastenode"
)

// Client speaks the HTTP API of a pastenode cluster. It holds a list of
// node addresses and asks them in order: a node that cannot be reached, or
// that answers 503 (no quorum, no leader), is skipped for the next one.
// Any other answer, success or error, is final, but for the retries that
// Options.RetryWithin allows.
//
// A write (POST) whose outcome is unknown, because it was sent and no
// answer came, or the answer says so (pastenode.OutcomeHeader), is never
// sent again, to this node or another: its error matches
// ErrOutcomeUnknown.
type Client struct {
	bases       []*url.URL
	adminToken  string
	createTok   string
	timeout     time.Duration
	hc          *http.Client
	stale       bool
	retryWithin time.Duration
	onRetry     func(err error, wait time.Duration)
}

// ErrOutcomeUnknown matches the error of a write that may have been
// applied: it was not sent again.
var ErrOutcomeUnknown = errors.New("it may have been applied, so it was not sent again")

// Options configures a Client. The zero value is usable.
type Options struct {
	// AdminToken, when set, is sent as "Authorization: Bearer" on every
	// request.
	AdminToken string
	// CreateToken, when set, is sent as X-Paste-Token on creates, for a
	// node started with --create-tokens.
	CreateToken string
	// Timeout bounds each attempt against one node, until its answer has
	// been read. Export, which may take long, is bounded instead by the
	// silences: Timeout applies to connecting and to each gap between the
	// server's progress answers and the bytes of its body. Zero means no
	// limit beyond the context's.
	Timeout time.Duration
	// HTTPClient replaces http.DefaultClient, e.g. for custom TLS.
	HTTPClient *http.Client
	// Stale lets reads be answered from a node's own copy even when that
	// node cannot confirm it is up to date, e.g. cut off from the quorum
	// (X-Paste-Stale: true). Burn reads are decided by the cluster anyway.
	Stale bool
	// RetryWithin, when positive, has a call answered 429 (rate limited)
	// or 503 (no quorum, no cluster yet) with a Retry-After made again
	// after that wait, as long as the call ends within RetryWithin of its
	// start; a wait that would end later is not begun. A write whose
	// outcome is unknown is never made again.
	RetryWithin time.Duration
	// OnRetry, if not nil, is told of each retry before its wait: the
	// error answered and the wait.
	OnRetry func(err error, wait time.Duration)
}

// New returns a Client for the nodes at addrs, each a base URL such as
// "http://127.0.0.1:8080" or a bare "host:port", which means http.
func New(addrs []string, opts Options) (*Client, error) {
	if len(addrs) == 0 {
		return nil, errors.New("no node address given")
	}
	c := &Client{adminToken: opts.AdminToken, createTok: opts.CreateToken, timeout: opts.Timeout, hc: opts.HTTPClient, stale: opts.Stale,
		retryWithin: opts.RetryWithin, onRetry: opts.OnRetry}
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

// call is one logical request, sent to each node in turn.
type call struct {
	method, path string
	query        url.Values
	body         []byte
	contentType  string
	accept       string
	header       http.Header
	stream       bool // the answer may take long: Timeout bounds each silence
	// informational, if not nil, gets each 1xx answer's headers.
	informational func(code int, h http.Header)
	final503      bool // a 503 is the answer, not a reason to try the next node
}

// do sends cl to each node in order until one answers, and hands a 2xx
// answer to handle (nil: ignore the body). Non-2xx answers become *Error.
// An answer that asks to come back later (retryAfter) is waited for and
// cl made again, within the Client's RetryWithin.
func (c *Client) do(ctx context.Context, cl call, handle func(*http.Response) error) error {
	start := time.Now()
	for tries := 1; ; tries++ {
		err := c.doOnce(ctx, cl, handle)
		wait, ok := c.retryAfter(err, cl, time.Since(start))
		if !ok {
			if tries > 1 && err != nil {
				err = fmt.Errorf("%w (after %d tries in %s)", err, tries, time.Since(start).Round(time.Second))
			}
			return err
		}
		if c.onRetry != nil {
			c.onRetry(err, wait)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// retryAfter returns how long to wait before cl is made again after err,
// elapsed after its start, and whether it may be: a 429 or 503 with a
// Retry-After whose wait ends within RetryWithin. A 503 that is itself
// the answer (final503) is not retried, nor a write of unknown outcome.
func (c *Client) retryAfter(err error, cl call, elapsed time.Duration) (time.Duration, bool) {
	var e *Error
	if c.retryWithin <= 0 || !errors.As(err, &e) || e.RetryAfter <= 0 || errors.Is(err, ErrOutcomeUnknown) {
		return 0, false
	}
	switch {
	case e.StatusCode == http.StatusTooManyRequests:
	case e.StatusCode == http.StatusServiceUnavailable && !cl.final503:
	default:
		return 0, false
	}
	return e.RetryAfter, elapsed+e.RetryAfter <= c.retryWithin
}

// doOnce sends cl to each node in order until one answers.
func (c *Client) doOnce(ctx context.Context, cl call, handle func(*http.Response) error) error {
	var lastErr error
	for _, base := range c.bases {
		next, err := c.attempt(ctx, base, cl, handle)
		if err == nil {
			return nil
		}
		if !next || ctx.Err() != nil {
			return err
		}
		// A node's 503 reason says more than a later node's dial error.
		var apiErr *Error
		if lastErr == nil || !errors.As(lastErr, &apiErr) || errors.As(err, &apiErr) {
			lastErr = err
		}
	}
	if len(c.bases) > 1 {
		return fmt.Errorf("no node could answer (tried %d): %w", len(c.bases), lastErr)
	}
	return lastErr
}

// attempt makes cl against one node. next reports whether the error
// allows trying another node: the node was not reached, or it said 503.
func (c *Client) attempt(ctx context.Context, base *url.URL, cl call, handle func(*http.Response) error) (next bool, err error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var timer *time.Timer
	if c.timeout > 0 {
		msg := fmt.Errorf("no answer from %s within %s", base.Host, c.timeout)
		if cl.stream {
			msg = fmt.Errorf("nothing from %s for %s", base.Host, c.timeout)
		}
		timer = time.AfterFunc(c.timeout, func() { cancel(msg) })
		defer timer.Stop()
	}
	alive := func() {} // the server was heard from
	if cl.stream && timer != nil {
		alive = func() { timer.Reset(c.timeout) }
	}
	// A write that reached the node may be applied whatever comes back:
	// from then on a failure is final, and says so.
	var sent atomic.Bool
	if cl.method == http.MethodPost {
		actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { sent.Store(true) },
		})
	}
	if cl.stream {
		actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{
			Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
				alive()
				if cl.informational != nil {
					cl.informational(code, http.Header(h))
				}
				return nil
			},
		})
	}
	req, err := c.newRequest(actx, base, cl)
	if err != nil {
		return false, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if sent.Load() {
			return false, fmt.Errorf("%w; %w", timedOut(ctx, actx, err), ErrOutcomeUnknown)
		}
		return true, timedOut(ctx, actx, err)
	}
	defer resp.Body.Close()
	alive()
	if next, err := classify(resp, cl.final503); err != nil || handle == nil {
		if err != nil && resp.Header.Get(pastenode.OutcomeHeader) == "unknown" {
			return false, fmt.Errorf("%w; %w", err, ErrOutcomeUnknown)
		}
		return next, err
	}
	if cl.stream {
		resp.Body = &aliveBody{ReadCloser: resp.Body, alive: alive}
	}
	if err := handle(resp); err != nil {
		return false, timedOut(ctx, actx, err)
	}
	return false, nil
}

// aliveBody calls alive whenever bytes arrive.
type aliveBody struct {
	io.ReadCloser
	alive func()
}

func (b *aliveBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.alive()
	}
	return n, err
}

// newRequest builds cl's request to the node at base, with the admin token
// when the Client has one.
func (c *Client) newRequest(ctx context.Context, base *url.URL, cl call) (*http.Request, error) {
	u := *base
	u.Path += cl.path
	u.RawQuery = cl.query.Encode()
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u.String(), body)
	if err != nil {
		return nil, err
	}
	for k, vs := range cl.header {
		req.Header[k] = vs
	}
	if cl.contentType != "" {
		req.Header.Set("Content-Type", cl.contentType)
	}
	if cl.accept != "" {
		req.Header.Set("Accept", cl.accept)
	}
	if c.adminToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.adminToken)
	}
	if c.stale && (cl.method == http.MethodGet || cl.method == http.MethodHead) {
		req.Header.Set("X-Paste-Stale", "true")
	}
	return req, nil
}

// classify turns a non-2xx answer into its *Error; next reports whether
// that error lets the next node be asked, which only a 503 does, and not
// when final503 says the 503 is the answer. A 2xx answer gives no error.
func classify(resp *http.Response, final503 bool) (next bool, err error) {
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return false, nil
	}
	return resp.StatusCode == http.StatusServiceUnavailable && !final503, errorFrom(resp)
}

// timedOut gives the attempt's timeout as the error instead of "context
// canceled" when the attempt's context actx ended by it and not because
// the caller's ctx did.
func timedOut(ctx, actx context.Context, err error) error {
	if cause := context.Cause(actx); cause != nil && ctx.Err() == nil {
		return cause
	}
	return err
}
