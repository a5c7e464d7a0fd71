package fsm

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"
)

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
