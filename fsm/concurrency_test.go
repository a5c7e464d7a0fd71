package fsm

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestViewsStayUnchangedWhileApplying: readers walk views while creates
// and deletes are applied; every view keeps holding exactly the pastes of
// its version, each with its own content, so an apply never changes a
// node of the trees a published version shares, nor a record that one
// indexes, compactions running beside the applies included (run with
// -race too).
func TestViewsStayUnchangedWhileApplying(t *testing.T) {
	l := newLog(t)
	const n = 3000 // of 4 KiB, sealed every 300: segments the deletes leave two thirds empty
	pad := strings.Repeat(".", 4096)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				v := l.f.View()
				want := v.s.count
				var walked, again int64
				v.Walk(func(p *Paste) bool {
					if string(p.Content) != "content of "+p.ID+pad {
						t.Errorf("view at index %d: paste %s holds %.20q...", v.Index(), p.ID, p.Content)
						return false
					}
					walked++
					return true
				})
				v.Walk(func(*Paste) bool { again++; return true })
				if walked != want || again != want {
					t.Errorf("view at index %d holds %d pastes, walks found %d then %d", v.Index(), want, walked, again)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for !stop.Load() {
			if !l.f.Compact() {
				time.Sleep(time.Millisecond)
			}
		}
	})
	now := time.Unix(0, 2*sec)
	for i := range n {
		id := fmt.Sprintf("p%05d", i)
		l.apply(create(id, id, func(p *Paste) { p.Content = append(p.Content, pad...) }))
		if i%3 != 0 {
			l.apply(&Command{Type: TypeDelete, ID: id, TokenHash: HashToken("tok-" + id), Now: 2 * sec})
		}
		if _, ok := l.f.Get(id, now); ok == (i%3 != 0) {
			t.Fatalf("paste %s: present %v after its apply", id, ok)
		}
		if i%300 == 299 {
			sn, _ := l.f.Snapshot()
			sn.Release()
		}
	}
	stop.Store(true)
	wg.Wait()
	// The deletes left segments two thirds empty: each was compacted, the
	// last ones once the steps still waiting are taken.
	for l.f.Compact() {
	}
	st := l.f.cur.Load()
	st.pastes.ascend(func(id string, it pasteItem) bool {
		if s := it.r.s; s != st.arena.cur && s.live*2 < s.size {
			t.Fatalf("paste %s is in a segment %d of %d bytes live, never compacted", id, s.live, s.size)
		}
		return true
	})
}

// stallingFile is a segment file whose first read closes entered and waits
// until release is closed; the reads after it do not wait.
type stallingFile struct {
	segmentFile
	entered, release chan struct{}
	reads            atomic.Int32
}

func (f *stallingFile) ReadAt(b []byte, off int64) (int, error) {
	if f.reads.Add(1) == 1 {
		close(f.entered)
		<-f.release
	}
	return f.segmentFile.ReadAt(b, off)
}

// TestCompactionReadsBesideWrites: while a step of compaction waits for
// the read of a segment, creates and deletes are applied; the step then
// moves only what is still indexed, and nothing is lost.
func TestCompactionReadsBesideWrites(t *testing.T) {
	l := newLog(t)
	for i := range 10 {
		l.apply(create(fmt.Sprintf("old%d", i), ""))
	}
	for i := range 6 {
		id := fmt.Sprintf("old%d", i)
		l.apply(&Command{Type: TypeDelete, ID: id, TokenHash: HashToken("tok-" + id), Now: 2 * sec})
	}
	sn, _ := l.f.Snapshot() // seals the segment, now queued: most of it is garbage
	sn.Release()
	a := l.f.cur.Load().arena
	if len(a.sparse) != 1 {
		t.Fatalf("%d segments wait for compaction, want 1", len(a.sparse))
	}
	s := a.sparse[0]
	stall := &stallingFile{segmentFile: s.file, entered: make(chan struct{}), release: make(chan struct{})}
	s.file = stall
	done := make(chan bool)
	go func() { done <- l.f.Compact() }()
	<-stall.entered
	// The writer's lock is free while the step reads.
	applied := make(chan struct{})
	go func() {
		l.apply(create("new", ""))
		l.apply(&Command{Type: TypeDelete, ID: "old6", TokenHash: HashToken("tok-old6"), Now: 3 * sec})
		close(applied)
	}()
	select {
	case <-applied:
	case <-time.After(10 * time.Second):
		close(stall.release)
		t.Fatal("applies waited for a step of compaction to read its segment")
	}
	close(stall.release)
	<-done
	for l.f.Compact() {
	}
	now := time.Unix(0, 4*sec)
	for _, id := range []string{"old7", "old8", "old9", "new"} {
		p, ok := l.f.Get(id, now)
		if !ok || string(p.Content) != "content of "+id {
			t.Fatalf("paste %s after the compaction: %+v, %v", id, p, ok)
		}
	}
	for _, id := range []string{"old0", "old6"} {
		if _, ok := l.f.Get(id, now); ok {
			t.Fatalf("paste %s, deleted, is back after the compaction", id)
		}
	}
	if _, ok := l.f.cur.Load().arena.all[s.id]; ok {
		t.Fatal("the compacted segment is still in the store")
	}
}
