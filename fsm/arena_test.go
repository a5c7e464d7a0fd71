package fsm

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, p := range []*Paste{
		{ID: "a", TokenHash: HashToken("t"), CreatedAt: 3 * sec},
		{ID: "ümlaut", Content: []byte("héllo\x00"), Title: "a title", Lang: "go", CreatedAt: -5,
			ExpiresAt: 90 * sec, Burn: true, Encrypted: true, TokenHash: HashToken("x"), RequestID: "req-1"},
		{ID: "bin", Content: []byte{0xff, 0xfe}, CreatedAt: 1},
	} {
		want := *p
		var h headerValues
		formatHeaders(p, &h)
		rec := make([]byte, recordLen(p, &h))
		writeRecord(rec, p, &h)
		if recordSize(rec) != len(rec) || recordID(rec) != p.ID || recordExpires(rec) != p.ExpiresAt {
			t.Errorf("%s: record says size %d, id %q, expires %d", p.ID, recordSize(rec), recordID(rec), recordExpires(rec))
		}
		var got Paste
		readRecord(rec, &got)
		info := got.info
		got.info = ReadInfo{}
		if !equalPaste(&got, &want) {
			t.Errorf("read back %+v, want %+v", got, want)
		}
		if fresh := *want.ReadInfo(); info != fresh {
			t.Errorf("%s: ReadInfo %+v, want %+v", p.ID, info, fresh)
		}
	}
}

// equalPaste compares pastes by their fields, nil and empty slices alike.
func equalPaste(a, b *Paste) bool {
	x, y := *a, *b
	for _, p := range []*Paste{&x, &y} {
		p.info = ReadInfo{}
		if len(p.Content) == 0 {
			p.Content = nil
		}
		if len(p.TokenHash) == 0 {
			p.TokenHash = nil
		}
	}
	return reflect.DeepEqual(x, y)
}

// TestCompaction removes most pastes, then checks that the survivors
// moved out of the emptied slabs intact, their index entries with them, and
// that nothing a reader sees changed.
func TestCompaction(t *testing.T) {
	l := newLog(t)
	big := strings.Repeat("y", 3000)
	const n = 4000 // about 3 slabs
	for i := range n {
		l.apply(create(fmt.Sprintf("p%05d", i), "", func(p *Paste) {
			p.Content = []byte(big + fmt.Sprint(i))
			if i%10 == 0 {
				p.ExpiresAt = 1000 * sec
			}
		}))
	}
	slabs := func() map[*slab]int {
		m := map[*slab]int{}
		l.f.cur.Load().pastes.ascend(func(_ string, r ref) bool { m[r.s]++; return true })
		return m
	}
	if got := len(slabs()); got < 3 {
		t.Fatalf("%d pastes in %d slabs, want at least 3", n, got)
	}
	for i := range n {
		if i%10 != 0 {
			l.apply(&Command{Type: TypeDelete, ID: fmt.Sprintf("p%05d", i), Now: 2 * sec, Admin: true})
		}
	}
	st := l.f.cur.Load()
	cur := st.arena.cur
	for s := range slabs() {
		if s != cur {
			t.Errorf("a paste still in a slab other than the current one")
		}
	}
	if len(st.arena.sparse) != 0 {
		t.Errorf("%d slabs still queued", len(st.arena.sparse))
	}
	// Every expiry key points into the record it names (the paste index
	// reads its ids from the records).
	st.expiry.t.Ascend(func(k timeKey) bool {
		r, _ := st.pastes.get(k.id)
		if !sameString(k.id, recordID(r.record())) {
			t.Errorf("expiry key %q points outside its record", k.id)
		}
		return true
	})
	for i := 0; i < n; i += 10 {
		id := fmt.Sprintf("p%05d", i)
		p, ok := l.f.Get(id, time.Unix(0, 3*sec))
		if !ok || string(p.Content) != big+fmt.Sprint(i) || p.ID != id {
			t.Fatalf("after compaction, %s reads %v", id, ok)
		}
	}
	// The same pastes, never compacted, read the same.
	fresh := newLog(t)
	for i := 0; i < n; i += 10 {
		fresh.apply(create(fmt.Sprintf("p%05d", i), "", func(p *Paste) {
			p.Content = []byte(big + fmt.Sprint(i))
			p.ExpiresAt = 1000 * sec
		}))
	}
	var got, want []*Paste
	l.f.View().Walk(func(p *Paste) bool { got = append(got, p); return true })
	fresh.f.View().Walk(func(p *Paste) bool { want = append(want, p); return true })
	if !slices.EqualFunc(got, want, equalPaste) {
		t.Fatal("the compacted store reads differently from one never compacted")
	}
}

// sameString reports whether a and b are the same bytes in memory.
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

func TestLargeRecordHasItsOwnSlab(t *testing.T) {
	l := newLog(t)
	l.apply(create("small", ""))
	l.apply(create("large", "", func(p *Paste) { p.Content = bytes.Repeat([]byte("z"), largeRecord+1) }))
	st := l.f.cur.Load()
	small, _ := st.pastes.get("small")
	large, _ := st.pastes.get("large")
	if large.s == small.s || large.s == st.arena.cur || len(large.s.buf) != int(large.n) {
		t.Fatalf("a large record shares a slab, or its slab is not its size")
	}
	// A snapshot restores it the same way.
	restored := New()
	if err := restored.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, l.f)))); err != nil {
		t.Fatal(err)
	}
	if p, ok := restored.Get("large", time.Unix(0, 2*sec)); !ok || len(p.Content) != largeRecord+1 {
		t.Fatal("large paste lost in a snapshot")
	}
	if r, _ := restored.cur.Load().pastes.get("large"); len(r.s.buf) != int(r.n) {
		t.Fatal("a restored large record shares a slab")
	}
	l.apply(&Command{Type: TypeDelete, ID: "large", Now: 2 * sec, Admin: true})
	if _, ok := l.f.Get("large", time.Unix(0, 2*sec)); ok {
		t.Fatal("large paste still readable")
	}
	if p, ok := l.f.Get("small", time.Unix(0, 2*sec)); !ok || string(p.Content) != "content of small" {
		t.Fatal("small paste lost")
	}
}

// TestCompactionIsBoundedPerApply: an apply compacts at most
// compactPerApply slabs; the rest wait, in order, for the next applies.
func TestCompactionIsBoundedPerApply(t *testing.T) {
	var a arena
	const n = 2*compactPerApply + 3
	for range n {
		s := &slab{buf: make([]byte, 64), used: 64}
		a.check(s)
	}
	var got []int
	for len(a.sparse) > 0 {
		got = append(got, len(a.takeSparse()))
	}
	if want := []int{compactPerApply, compactPerApply, 3}; !slices.Equal(got, want) {
		t.Fatalf("applies compacted %v slabs, want %v", got, want)
	}
}

// TestCompactFinishesWhatAppliesLeft: an expiry that empties more slabs
// than an apply compacts leaves the rest queued; Compact, which the node
// calls while idle, moves them without an apply, and changes nothing a
// reader sees nor the index applied.
func TestCompactFinishesWhatAppliesLeft(t *testing.T) {
	l := newLog(t)
	content := strings.Repeat("z", 4000)
	const n = 1000 * (compactPerApply + 4) // about compactPerApply+4 slabs
	for i := range n {
		l.apply(create(fmt.Sprintf("p%05d", i), "", func(p *Paste) {
			p.Content = []byte(content + fmt.Sprint(i))
			if i%4 != 0 {
				p.ExpiresAt = 2 * sec
			}
		}))
	}
	l.apply(&Command{Type: TypeExpire, Now: 3 * sec})
	index := l.f.Index()
	if left := len(l.f.cur.Load().arena.sparse); left == 0 {
		t.Fatalf("the expiry left no slab to compact; the test needs more than %d emptied", compactPerApply)
	}
	for calls := 1; l.f.Compact(); calls++ {
		if calls > n {
			t.Fatal("Compact keeps reporting more")
		}
	}
	st := l.f.cur.Load()
	if len(st.arena.sparse) != 0 {
		t.Fatalf("%d slabs still queued after Compact reported none", len(st.arena.sparse))
	}
	st.pastes.ascend(func(id string, r ref) bool {
		if r.s.live*2 < r.s.used && r.s != st.arena.cur {
			t.Fatalf("%s is still in a slab at least half garbage", id)
		}
		return true
	})
	if l.f.Index() != index {
		t.Fatalf("Compact changed the applied index from %d to %d", index, l.f.Index())
	}
	for i := 0; i < n; i += 4 {
		id := fmt.Sprintf("p%05d", i)
		if p, ok := l.f.Get(id, time.Unix(0, 4*sec)); !ok || string(p.Content) != content+fmt.Sprint(i) {
			t.Fatalf("after Compact, %s reads %v", id, ok)
		}
	}
	if l.f.Compact() {
		t.Fatal("Compact with nothing queued reports more")
	}
}
