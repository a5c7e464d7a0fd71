package fsm

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestRestoreAdvisesHugePages: the slabs a restore fills get adviseFill's
// advice (huge pages where they pay, populated) while it fills them, and the advice is
// taken back when it ends; the slabs that applies fill afterwards get
// none.
func TestRestoreAdvisesHugePages(t *testing.T) {
	type call struct {
		buf *byte
		on  bool
	}
	var calls []call
	adviseSlab = func(b []byte, on bool) { calls = append(calls, call{&b[0], on}) }
	t.Cleanup(func() { adviseSlab = adviseFill })

	l := newLog(t)
	big := strings.Repeat("b", largeRecord-1024)
	for i := range 6 { // two slabs
		l.apply(create(fmt.Sprint("big", i), "", func(p *Paste) { p.Content = []byte(big) }))
	}
	if len(calls) != 0 {
		t.Fatalf("applies advised %d slabs", len(calls))
	}
	restored := New()
	if err := restored.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, l.f)))); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 4 || !calls[0].on || !calls[1].on || calls[2] != (call{calls[0].buf, false}) || calls[3] != (call{calls[1].buf, false}) {
		t.Fatalf("the restore's advice: %v; want two slabs on, then both off", calls)
	}
	if cur := &restored.cur.Load().arena.cur.buf[0]; cur != calls[1].buf {
		t.Fatal("the advice was not for the restored slabs")
	}

	calls = nil
	after := &log{t: t, f: restored, index: l.index}
	for i := range 6 {
		after.apply(create(fmt.Sprint("after", i), "", func(p *Paste) { p.Content = []byte(big) }))
	}
	if len(calls) != 0 {
		t.Fatalf("applies after the restore advised slabs: %v", calls)
	}
}
