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

// TestAppliesPopulateSlabs: each slab that applies fill, a shared one or
// a large record's own, is populated once, whole, when it is allocated;
// a restore's slabs are left to adviseFill, which populates them itself.
func TestAppliesPopulateSlabs(t *testing.T) {
	var populated [][]byte
	populateSlab = func(b []byte) { populated = append(populated, b) }
	t.Cleanup(func() { populateSlab = populate })

	l := newLog(t)
	big := strings.Repeat("b", largeRecord-1024)
	for i := range 6 { // two shared slabs
		l.apply(create(fmt.Sprint("big", i), "", func(p *Paste) { p.Content = []byte(big) }))
	}
	if len(populated) != 2 {
		t.Fatalf("applies filling two slabs populated %d", len(populated))
	}
	cur := l.f.cur.Load().arena.cur.buf
	if len(populated[1]) != slabSize || &populated[1][0] != &cur[0] {
		t.Fatal("the slab populated is not the whole current one")
	}
	l.apply(create("huge", "", func(p *Paste) { p.Content = []byte(strings.Repeat("h", largeRecord+1)) }))
	if len(populated) != 3 || len(populated[2]) <= largeRecord {
		t.Fatalf("a large record's own slab: populated %d slabs, the last of %d bytes", len(populated), len(populated[len(populated)-1]))
	}

	populated = nil
	adviseSlab = func([]byte, bool) {}
	t.Cleanup(func() { adviseSlab = adviseFill })
	restored := New()
	if err := restored.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, l.f)))); err != nil {
		t.Fatal(err)
	}
	if len(populated) != 1 || len(populated[0]) <= largeRecord {
		t.Fatalf("a restore populated %d slabs beside the large record's own; adviseFill does", len(populated))
	}
}
