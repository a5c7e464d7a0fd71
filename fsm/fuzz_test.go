package fsm

import (
	"bytes"
	"io"
	"testing"
)

func FuzzDecode(f *testing.F) {
	for _, c := range randomCommands(1, 20) {
		b, _ := Encode(c)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err == nil && (c.Type < TypeCreate || c.Type > lastType) {
			t.Fatalf("Decode accepted type %d", c.Type)
		}
	})
}

func FuzzRestore(f *testing.F) {
	l := newLog(f)
	for _, c := range randomCommands(2, 50) {
		l.apply(c)
	}
	var buf bytes.Buffer
	sn, _ := l.f.Snapshot()
	_ = sn.(*snapshot).writeTo(&buf, "")
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = New().Restore(io.NopCloser(bytes.NewReader(b)))
	})
}

// BenchmarkApplyCreate applies creates as a node does under load: 16
// forwarded creates in one TypeBatch entry, with random ids, to a store
// that already holds 100k pastes, so that each create copies its own
// path of the copy-on-write index.
