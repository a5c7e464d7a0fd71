package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pastenode/pastenode"
)

// The sentinels of the error answers that the contract gives. Every non-2xx
// answer is an *Error; one whose status is listed here also matches its
// sentinel, so callers write errors.Is(err, client.ErrNotFound) and reach
// for errors.As only when they want the server's reason or Retry-After.
var (
	ErrBadRequest          = errors.New("bad request")           // 400: bad input, e.g. an unknown lang
	ErrUnauthorized        = errors.New("unauthorized")          // 401: an admin call without the right admin token
	ErrForbidden           = errors.New("forbidden")             // 403: a wrong delete token
	ErrNotFound            = errors.New("not found")             // 404: unknown, expired, deleted or burned
	ErrMethodNotAllowed    = errors.New("method not allowed")    // 405
	ErrConflict            = errors.New("conflict")              // 409: an import's id is already taken
	ErrTooLarge            = errors.New("too large")             // 413: over the node's --max-paste-size
	ErrRateLimited         = errors.New("rate limited")          // 429: over the node's --rate-limit
	ErrInternal            = errors.New("internal server error") // 500
	ErrNotImplemented      = errors.New("not implemented")       // 501: a cluster call to a node without gossip
	ErrBadGateway          = errors.New("bad gateway")           // 502: e.g. a join that reached no seed
	ErrUnavailable         = errors.New("unavailable")           // 503: no quorum or no leader, retry later
	ErrInsufficientStorage = errors.New("insufficient storage")  // 507: the node's disk is full
)

// statusErrors maps a status code to its sentinel.
var statusErrors = map[int]error{
	http.StatusBadRequest:            ErrBadRequest,
	http.StatusUnauthorized:          ErrUnauthorized,
	http.StatusForbidden:             ErrForbidden,
	http.StatusNotFound:              ErrNotFound,
	http.StatusMethodNotAllowed:      ErrMethodNotAllowed,
	http.StatusConflict:              ErrConflict,
	http.StatusRequestEntityTooLarge: ErrTooLarge,
	http.StatusTooManyRequests:       ErrRateLimited,
	http.StatusInternalServerError:   ErrInternal,
	http.StatusNotImplemented:        ErrNotImplemented,
	http.StatusBadGateway:            ErrBadGateway,
	http.StatusServiceUnavailable:    ErrUnavailable,
	http.StatusInsufficientStorage:   ErrInsufficientStorage,
}

// Error is a non-2xx answer from a node. It unwraps to the sentinel of its
// status, so errors.Is(err, ErrNotFound) holds for a 404.
type Error struct {
	StatusCode int
	Message    string        // the server's one-line reason, may be empty
	RetryAfter time.Duration // the answer's Retry-After, 0 when it has none
}

func (e *Error) Error() string {
	s := strconv.Itoa(e.StatusCode)
	if text := http.StatusText(e.StatusCode); text != "" {
		s += " " + text
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns the sentinel of e's status, nil for a status that has none.
func (e *Error) Unwrap() error {
	return statusErrors[e.StatusCode]
}

// errorFrom reads an error answer: the one-line reason is the "error" field
// of a JSON body, else the first line of the text.
func errorFrom(resp *http.Response) *Error {
	e := &Error{StatusCode: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	b = bytes.TrimSpace(b)
	if mediaType(resp.Header) == "application/json" || bytes.HasPrefix(b, []byte("{")) {
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

// retryAfter reads a Retry-After value, seconds or an HTTP date, as the
// time to wait; it is 0 when v is empty, malformed or already past.
func retryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
