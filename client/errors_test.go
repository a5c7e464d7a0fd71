package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/pastenode/pastenode/client"
)

var sentinels = []error{
	client.ErrBadRequest, client.ErrUnauthorized, client.ErrForbidden, client.ErrNotFound,
	client.ErrMethodNotAllowed, client.ErrConflict, client.ErrTooLarge, client.ErrRateLimited, client.ErrInternal,
	client.ErrNotImplemented, client.ErrBadGateway, client.ErrUnavailable, client.ErrInsufficientStorage,
}

func TestErrorStatuses(t *testing.T) {
	tests := []struct {
		code       int
		json       bool // answer {"error": ...} rather than text
		retryAfter string
		want       error // the sentinel; nil: none matches
		wantRetry  time.Duration
	}{
		{http.StatusBadRequest, true, "", client.ErrBadRequest, 0},
		{http.StatusUnauthorized, true, "", client.ErrUnauthorized, 0},
		{http.StatusForbidden, false, "", client.ErrForbidden, 0},
		{http.StatusNotFound, false, "", client.ErrNotFound, 0},
		{http.StatusMethodNotAllowed, false, "", client.ErrMethodNotAllowed, 0},
		{http.StatusConflict, true, "", client.ErrConflict, 0},
		{http.StatusRequestEntityTooLarge, false, "", client.ErrTooLarge, 0},
		{http.StatusTooManyRequests, true, "1", client.ErrRateLimited, time.Second},
		{http.StatusInternalServerError, true, "", client.ErrInternal, 0},
		{http.StatusNotImplemented, true, "", client.ErrNotImplemented, 0},
		{http.StatusBadGateway, true, "", client.ErrBadGateway, 0},
		{http.StatusServiceUnavailable, false, "120", client.ErrUnavailable, 2 * time.Minute},
		{http.StatusInsufficientStorage, true, "", client.ErrInsufficientStorage, 0},
		{http.StatusTeapot, false, "", nil, 0},
		{http.StatusGone, true, "soon", nil, 0},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.code), func(t *testing.T) {
			url := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				if tt.json {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tt.code)
					io.WriteString(w, `{"error":"the reason"}`)
					return
				}
				http.Error(w, "the reason\nand more", tt.code)
			})
			_, err := newClient(t, []string{url}, client.Options{}).Status(context.Background())
			var e *client.Error
			if !errors.As(err, &e) {
				t.Fatalf("Status: got %v, want a *client.Error", err)
			}
			if e.StatusCode != tt.code || e.Message != "the reason" || e.RetryAfter != tt.wantRetry {
				t.Errorf("got %d %q retry %s, want %d %q retry %s",
					e.StatusCode, e.Message, e.RetryAfter, tt.code, "the reason", tt.wantRetry)
			}
			for _, s := range sentinels {
				if got, want := errors.Is(err, s), s == tt.want; got != want {
					t.Errorf("errors.Is(%v, %v) = %t, want %t", err, s, got, want)
				}
			}
		})
	}
}

// TestErrorRetryAfterDate checks the HTTP-date form of Retry-After, and that
// the sentinel still matches after the fall-through wrapping of two nodes.
func TestErrorRetryAfterDate(t *testing.T) {
	at := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	down := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", at)
		http.Error(w, "no quorum", http.StatusServiceUnavailable)
	})
	err := newClient(t, []string{down, down}, client.Options{}).Delete(context.Background(), "abc", "tok")
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("Delete: got %v, want ErrUnavailable", err)
	}
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("Delete: got %v, want a *client.Error", err)
	}
	if e.RetryAfter < 58*time.Minute || e.RetryAfter > time.Hour {
		t.Errorf("RetryAfter of %q: got %s, want about an hour", at, e.RetryAfter)
	}
}
