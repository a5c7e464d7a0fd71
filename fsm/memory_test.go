package fsm

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// maxOverheadPerPaste is how many bytes of heap a stored paste may cost
// beyond its content. The store holds every paste in memory, so this is
// what the memory row of the benchmarks (BENCHMARKS.md) is made of: the
// record's header, its short strings and header values, the token hash
// and the index entries. It was 300 bytes when the pastes moved into
// records in slabs (arena.go), 369 before as a Paste with one string for
// its short strings, 845 with radix trees and separately allocated header
// values.
const maxOverheadPerPaste = 340

func TestHeapPerPaste(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 10 MB")
	}
	const n = 10000
	content := []byte(strings.Repeat("x", 1024))
	l := newLog(t)
	before := heapAlloc()
	for i := range n {
		p := &Paste{ID: fmt.Sprintf("id%08d", i), Content: content, CreatedAt: 1 * sec, TokenHash: HashToken("t")}
		l.apply(&Command{Type: TypeCreate, RequestID: fmt.Sprintf("%024x", i), Now: 1 * sec, Paste: p})
	}
	grown := heapAlloc() - before
	if count, _ := l.f.Stats(); count != n {
		t.Fatalf("%d pastes stored, want %d", count, n)
	}
	perPaste := grown/n - int64(len(content))
	t.Logf("%d bytes of heap per paste beyond its content", perPaste)
	if perPaste > maxOverheadPerPaste {
		t.Errorf("a paste costs %d bytes of heap beyond its content, want at most %d", perPaste, maxOverheadPerPaste)
	}
}

// heapAlloc returns the bytes of live heap after a full collection.
func heapAlloc() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func TestSealPacksStringsUnchanged(t *testing.T) {
	created := time.Date(2026, 11, 30, 21, 0, 0, 0, time.UTC).UnixNano()
	for _, expires := range []int64{0, created + int64(time.Hour)} {
		p := &Paste{ID: "abcdefghij", Content: []byte("hi"), Title: "t", Lang: "go", RequestID: "req",
			CreatedAt: created, ExpiresAt: expires}
		p.Seal()
		if p.ID != "abcdefghij" || p.Title != "t" || p.Lang != "go" || p.RequestID != "req" {
			t.Errorf("sealed paste has id %q, title %q, lang %q, request id %q", p.ID, p.Title, p.Lang, p.RequestID)
		}
		ri := p.ReadInfo()
		want := [][]string{{fmt.Sprintf(`"abcdefghij-%s"`, strconv.FormatInt(created, 36))},
			{"Mon, 30 Nov 2026 21:00:00 GMT"}, {"2"}, nil}
		if expires != 0 {
			want[3] = []string{"Mon, 30 Nov 2026 22:00:00 GMT"}
		}
		got := [][]string{ri.ETag(), ri.LastModified(), ri.Size(), ri.Expires()}
		if !slices.EqualFunc(got, want, slices.Equal[[]string]) || !ri.Text {
			t.Errorf("ReadInfo gives %q, text %v; want %q, text true", got, ri.Text, want)
		}
	}
}
