package main

import (
	"log/slog"
	"net/http"
	"testing"
	"time"
)

// TestStallLimit: a client that sends a request and then reads nothing is
// cut off once the answer has stalled for the stall limit: the handler's
// write fails rather than blocking for good, though the server has no
// WriteTimeout.
func TestStallLimit(t *testing.T) {
	limits := publicLimits
	limits.stall = 500 * time.Millisecond // the same mechanism, quicker
	ln, err := limits.listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	chunk := make([]byte, 1<<20)
	srv := limits.server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range 1 << 10 { // 1 GiB, far more than the socket buffers hold
			if _, err := w.Write(chunk); err != nil {
				failed <- err
				return
			}
		}
		failed <- nil
	}), slog.New(slog.DiscardHandler))
	if srv.WriteTimeout != 0 {
		t.Fatalf("WriteTimeout %s: want none on Linux, the socket limits stalls", srv.WriteTimeout)
	}
	serveGet(t, srv, ln) // and read nothing of the answer
	select {
	case err := <-failed:
		if err == nil {
			t.Fatal("the server wrote 1 GiB to a client that reads nothing")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a write to a client that reads nothing still blocks after 20s")
	}
}
