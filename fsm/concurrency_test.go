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
// indexes, compactions included (run with -race too).
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
