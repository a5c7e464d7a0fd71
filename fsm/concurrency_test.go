package fsm

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestViewsStayUnchangedWhileApplying: readers walk views while creates
// and deletes are applied; every view keeps holding exactly the pastes of
// its version, so an apply never changes a node of the trees a published
// version shares (run with -race too).
func TestViewsStayUnchangedWhileApplying(t *testing.T) {
	l := newLog(t)
	const n = 2000
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				v := l.f.View()
				want := v.s.count
				var walked, again int64
				v.Walk(func(*Paste) bool { walked++; return true })
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
		l.apply(create(id, id))
		if i%3 == 0 {
			l.apply(&Command{Type: TypeDelete, ID: id, TokenHash: HashToken("tok-" + id), Now: 2 * sec})
		}
		if _, ok := l.f.Get(id, now); ok == (i%3 == 0) {
			t.Fatalf("paste %s: present %v after its apply", id, ok)
		}
	}
	stop.Store(true)
	wg.Wait()
}
