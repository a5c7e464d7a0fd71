package fsm

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

// TestRestoreAdvisesHugePages: the slabs a restore fills get adviseFill's
// advice (huge pages where they pay, populated) while it fills them, and
// the advice is taken back when it ends, also from the one slab prepared
// ahead that it did not need; the slabs that applies fill afterwards get
// none.
func TestRestoreAdvisesHugePages(t *testing.T) {
	var mu sync.Mutex // restoreSlab prepares the next slab on a goroutine
	on := map[*byte]int{}
	var calls int
	adviseSlab = func(b []byte, advise bool) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if advise {
			on[&b[0]]++
		} else {
			on[&b[0]]--
		}
	}
	t.Cleanup(func() { adviseSlab = adviseFill })

	l := newLog(t)
	big := strings.Repeat("b", largeRecord-1024)
	for i := range 6 { // two slabs
		l.apply(create(fmt.Sprint("big", i), "", func(p *Paste) { p.Content = []byte(big) }))
	}
	if calls != 0 {
		t.Fatalf("applies advised %d slabs", calls)
	}
	restored := New()
	if err := restored.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, l.f)))); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if n := len(on); n < 2 || n > 3 || calls != 2*n {
		t.Errorf("the restore advised %d slabs in %d calls; want its two, and at most one prepared ahead, each on and then off", n, calls)
	}
	for b, n := range on {
		if n != 0 {
			t.Errorf("slab %p: advice given %d more times than taken back", b, n)
		}
	}
	if _, ok := on[&restored.cur.Load().arena.cur.buf[0]]; !ok {
		t.Error("the advice was not for the restored slabs")
	}
	calls = 0
	mu.Unlock()

	after := &log{t: t, f: restored, index: l.index}
	for i := range 6 {
		after.apply(create(fmt.Sprint("after", i), "", func(p *Paste) { p.Content = []byte(big) }))
	}
	if calls != 0 {
		t.Fatalf("applies after the restore advised %d slabs", calls)
	}
}

// TestRestorePreparesTheNextSlab: a restore takes whole slabs of zeros,
// the one it takes next is being prepared while it fills the one before,
// and none is pending once the restore ends. (That prepareSlab writes to
// every page has no effect a test can see: it is what the host charges
// for, BENCHMARKS.md.)
func TestRestorePreparesTheNextSlab(t *testing.T) {
	a := &arena{}
	a.hugeSlabs(true)
	first := a.restoreSlab()
	if len(first) != slabSize || a.ahead == nil {
		t.Fatalf("the first slab: %d bytes, next prepared: %v", len(first), a.ahead != nil)
	}
	second := a.restoreSlab()
	if len(second) != slabSize || &second[0] == &first[0] {
		t.Fatal("the second slab is not a slab of its own")
	}
	for _, b := range [][]byte{first, second} {
		if !bytes.Equal(b, make([]byte, slabSize)) {
			t.Fatal("a prepared slab is not all zeros")
		}
	}
	a.hugeSlabs(false)
	if a.ahead != nil {
		t.Error("the slab prepared ahead is still pending after the restore")
	}
}

// TestAppliesPopulateSlabs: each slab that applies fill, a shared one or
// a large record's own, is populated once, whole, when it is allocated;
// a restore's shared slabs are left to adviseFill, which populates them
// itself (a large record's own slab is populated in a restore too).
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
