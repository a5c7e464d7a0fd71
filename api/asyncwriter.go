package api

import (
	"io"
	"sync"
)

// asyncWriter passes what is written to it on to w from a goroutine of
// its own, a buffer at a time, so that the goroutine that writes goes on
// filling the next buffer while the last one is sent. An export's writer
// is the one goroutine of the export that cannot be spread over the
// CPUs, and a fifth of its time was the system calls that send the
// archive.
//
// Write copies p and returns at once unless every buffer is full, and
// returns the error of an earlier write to w, if any. Close sends what is
// left and waits for every write to w to end; it must be called, and
// nothing may be written after it. An asyncWriter is for one goroutine.
type asyncWriter struct {
	w    io.Writer
	cur  []byte
	full chan []byte   // filled buffers, to write to w in order
	free chan []byte   // written buffers, to fill again
	done chan struct{} // closed when the sender has stopped

	mu  sync.Mutex
	err error // the first error of w
}

// newAsyncWriter returns an asyncWriter to w with n buffers of size bytes.
func newAsyncWriter(w io.Writer, size, n int) *asyncWriter {
	a := &asyncWriter{w: w, cur: make([]byte, 0, size),
		full: make(chan []byte, n), free: make(chan []byte, n), done: make(chan struct{})}
	for range n - 1 {
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
		c := copy(a.cur[len(a.cur):cap(a.cur)], p)
		a.cur, p = a.cur[:len(a.cur)+c], p[c:]
		if len(a.cur) == cap(a.cur) {
			a.full <- a.cur
			a.cur = <-a.free
		}
	}
	return n, nil
}

// Close sends what is buffered, waits for the sender and returns the
// first error of w.
func (a *asyncWriter) Close() error {
	if len(a.cur) > 0 {
		a.full <- a.cur
		a.cur = nil
	}
	close(a.full)
	<-a.done
	return a.failed()
}
