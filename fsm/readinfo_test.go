package fsm

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestHTTPDate: httpDate writes what AppendFormat with net/http's layout
// writes, for the times a paste can carry and the edges of the four-digit
// years it writes itself.
func TestHTTPDate(t *testing.T) {
	times := []int64{0, 1, -1, 1e18, math.MaxInt64, math.MinInt64,
		time.Date(999, 12, 31, 23, 59, 59, 0, time.UTC).UnixNano(),
		time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(),
		time.Date(2000, 2, 29, 9, 5, 7, 999999999, time.UTC).UnixNano(),
		time.Date(2026, 12, 1, 22, 16, 30, 0, time.FixedZone("x", 5*3600)).UnixNano()}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		times = append(times, r.Int64()) // 1677 to 2262
	}
	for _, at := range times {
		want := time.Unix(0, at).UTC().AppendFormat([]byte("x"), httpTime)
		if got := httpDate([]byte("x"), at); string(got) != string(want) {
			t.Fatalf("httpDate(%d) = %q, want %q", at, got, want)
		}
	}
}

func BenchmarkHTTPDate(b *testing.B) {
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf = httpDate(buf[:0], 1_764_627_390_123_456_789)
	}
}
