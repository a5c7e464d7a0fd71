package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/client"
)

// answers serves the i-th request with the i-th answer (the last one
// for every later request) and counts the requests.
func answers(t *testing.T, n *atomic.Int32, list ...func(w http.ResponseWriter)) string {
	return serve(t, func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		list[min(i, len(list)-1)](w)
	})
}

func refuse(code int, retryAfter string, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		http.Error(w, "refused", code)
	}
}

func created(w http.ResponseWriter) {
	w.Header().Set("Location", "http://h/x1")
	w.Header().Set("X-Paste-Id", "x1")
	w.WriteHeader(http.StatusCreated)
}

// TestRetry: answers that ask to come back later are made again after
// their Retry-After, within RetryWithin, and never a write whose outcome
// is unknown.
func TestRetry(t *testing.T) {
	tests := []struct {
		name      string
		answers   []func(http.ResponseWriter)
		within    time.Duration
		final503  bool // ask /readyz, whose 503 is the answer
		wantCalls int32
		wantErr   error // nil: success
	}{
		{name: "429 then created", answers: []func(http.ResponseWriter){refuse(429, "1"), created},
			within: 5 * time.Second, wantCalls: 2},
		{name: "503 then created", answers: []func(http.ResponseWriter){refuse(503, "1"), created},
			within: 5 * time.Second, wantCalls: 2},
		{name: "a wait past RetryWithin is not begun", answers: []func(http.ResponseWriter){refuse(429, "30"), created},
			within: 5 * time.Second, wantCalls: 1, wantErr: client.ErrRateLimited},
		{name: "no retries without RetryWithin", answers: []func(http.ResponseWriter){refuse(429, "1"), created},
			wantCalls: 1, wantErr: client.ErrRateLimited},
		{name: "no Retry-After, no retry", answers: []func(http.ResponseWriter){refuse(503, ""), created},
			within: 5 * time.Second, wantCalls: 1, wantErr: client.ErrUnavailable},
		{name: "other errors are final", answers: []func(http.ResponseWriter){refuse(400, "1"), created},
			within: 5 * time.Second, wantCalls: 1, wantErr: client.ErrBadRequest},
		{name: "outcome unknown", answers: []func(http.ResponseWriter){refuse(503, "1", pastenode.OutcomeHeader, "unknown"), created},
			within: 5 * time.Second, wantCalls: 1, wantErr: client.ErrOutcomeUnknown},
		{name: "readiness is its own answer", answers: []func(http.ResponseWriter){refuse(503, "1")},
			within: 5 * time.Second, final503: true, wantCalls: 1, wantErr: client.ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls, retries atomic.Int32
			url := answers(t, &calls, tt.answers...)
			c := newClient(t, []string{url}, client.Options{RetryWithin: tt.within,
				OnRetry: func(err error, wait time.Duration) { retries.Add(1) }})
			var err error
			if tt.final503 {
				err = c.Ready(context.Background())
			} else {
				_, err = c.Put(context.Background(), strings.NewReader("x"), client.PutOptions{})
			}
			if got := calls.Load(); got != tt.wantCalls {
				t.Errorf("calls: got %d, want %d", got, tt.wantCalls)
			}
			if got := retries.Load(); got != tt.wantCalls-1 {
				t.Errorf("OnRetry: told of %d retries, want %d", got, tt.wantCalls-1)
			}
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestWriteSentIsNotSentElsewhere: a create that reached a node and got
// no answer may be applied; it is not sent to the next node, as a read
// is.
func TestWriteSentIsNotSentElsewhere(t *testing.T) {
	hang := make(chan struct{})
	var second atomic.Int32
	silent := serve(t, func(w http.ResponseWriter, r *http.Request) {
		<-hang
	})
	t.Cleanup(func() { close(hang) }) // before the server's Close, which waits for the handler
	other := serve(t, func(w http.ResponseWriter, r *http.Request) {
		second.Add(1)
		if r.Method == http.MethodPost {
			created(w)
			return
		}
		statusHandler("n2")(w, r)
	})
	c := newClient(t, []string{silent, other}, client.Options{Timeout: 200 * time.Millisecond, RetryWithin: 5 * time.Second})

	_, err := c.Put(context.Background(), strings.NewReader("x"), client.PutOptions{})
	if !errors.Is(err, client.ErrOutcomeUnknown) || second.Load() != 0 {
		t.Fatalf("create without an answer: %v, and %d requests to the next node; want ErrOutcomeUnknown and none", err, second.Load())
	}
	if st, err := c.Status(context.Background()); err != nil || st.Node.ID != "n2" {
		t.Fatalf("status: %v, %v; want the next node's answer", st, err)
	}
}
