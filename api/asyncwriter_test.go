package api

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestAsyncWriter: what is written arrives whole and in order, whatever
// the sizes of the writes against the buffers', and only after Close.
func TestAsyncWriter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	want := make([]byte, 1<<20)
	for i := range want {
		want[i] = byte(r.Uint32())
	}
	for _, size := range []int{1, 7, 4096, 64 << 10, 3 << 20} {
		var got bytes.Buffer
		a := newAsyncWriter(&got, 4096, 3)
		for rest := want; len(rest) > 0; {
			n := min(len(rest), size)
			if k, err := a.Write(rest[:n]); k != n || err != nil {
				t.Fatalf("writes of %d: Write = %d, %v", size, k, err)
			}
			rest = rest[n:]
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("writes of %d: %d bytes arrived, not the %d written", size, got.Len(), len(want))
		}
	}
}

// failingWriter fails every write from the after-th on.
type failingWriter struct {
	writes, after int
}

var errSend = errors.New("connection reset")

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.writes++; f.writes > f.after {
		return 0, errSend
	}
	return len(p), nil
}

// TestAsyncWriterError: a write that fails is reported by a later Write
// and by Close, and nothing more is sent after it.
func TestAsyncWriterError(t *testing.T) {
	w := &failingWriter{after: 2}
	a := newAsyncWriter(w, 16, 2)
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		_, err = a.Write(make([]byte, 16))
	}
	if !errors.Is(err, errSend) {
		t.Errorf("Write after a failed send: %v, want %v", err, errSend)
	}
	if err := a.Close(); !errors.Is(err, errSend) {
		t.Errorf("Close: %v, want %v", err, errSend)
	}
	if w.writes != 3 {
		t.Errorf("%d writes reached the writer, want 3: none after the one that failed", w.writes)
	}
}

// TestAsyncWriterHoldsNothingBack: a write goes out without waiting for
// more, so that a client that times out on silence hears of every byte
// the export has made.
func TestAsyncWriterHoldsNothingBack(t *testing.T) {
	got := make(chan []byte, 1)
	a := newAsyncWriter(chanWriter(got), 4096, 2)
	defer a.Close()
	a.Write([]byte("first bytes"))
	select {
	case b := <-got:
		if string(b) != "first bytes" {
			t.Errorf("sent %q", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a short write was held back")
	}
}

type chanWriter chan []byte

func (c chanWriter) Write(p []byte) (int, error) {
	c <- bytes.Clone(p)
	return len(p), nil
}
