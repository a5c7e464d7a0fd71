package api

import (
	"io"
	"sync"
)

// asyncWriter passes what is written to it on to w from a goroutine of
// its own, so that the goroutine that writes goes on while the last
// write is sent. An export's writer is the one goroutine of the export
// that cannot be spread over the CPUs, and much of its time went to the
// system calls that send the archive.
//
// Write copies p, in pieces of at most the buffers' size, queues them
// and returns unless every buffer is queued; it holds nothing back, so
// what was written goes out as soon as the sender gets to it. It returns
// the error of an earlier write to w, if any. Close waits for every
// write to w to end; it must be called, and nothing may be written after
// it. An asyncWriter is for one goroutine.
type asyncWriter struct {
	w    io.Writer
	size int
	full chan []byte   // copies of what was written, to write to w in order
	free chan []byte   // written buffers, to fill again
	done chan struct{} // closed when the sender has stopped

	mu  sync.Mutex
	err error // the first error of w
}

// newAsyncWriter returns an asyncWriter to w with n buffers of size bytes.
func newAsyncWriter(w io.Writer, size, n int) *asyncWriter {
	a := &asyncWriter{w: w, size: size,
		full: make(chan []byte, n), free: make(chan []byte, n), done: make(chan struct{})}
	for range n {
		a.free <- make([]byte, 0, size)
	}
	go a.send()
	return a
}

func (a *asyncWriter) send() {
	defer close(a.done)
	for b := range a.full {
		if a.failed() == nil {
			if _, err := a.w.Write(b); err != nil {
				a.mu.Lock()
				a.err = err
				a.mu.Unlock()
			}
		}
		a.free <- b[:0]
	}
}

func (a *asyncWriter) failed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *asyncWriter) Write(p []byte) (int, error) {
	if err := a.failed(); err != nil {
		return 0, err
	}
	n := len(p)
	for len(p) > 0 {
		c := min(len(p), a.size)
		a.full <- append(<-a.free, p[:c]...)
		p = p[c:]
	}
	return n, nil
}

// Close waits for the sender and returns the first error of w.
func (a *asyncWriter) Close() error {
	close(a.full)
	<-a.done
	return a.failed()
}
