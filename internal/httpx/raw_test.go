package httpx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/pastenode/pastenode/fsm"
)

func TestRawID(t *testing.T) {
	for path, want := range map[string]string{
		"/raw/abcdefgh":  "abcdefgh",
		"/raw/a":         "a",
		"/raw/..%2fx":    "..%2fx", // a path as decoded: the escape is the id's own
		"/raw/":          "",
		"/raw":           "",
		"/raw/a/":        "",
		"/raw/a/b":       "",
		"/rawabcdefgh":   "",
		"/abcdefgh":      "",
		"/x/raw/abcdefg": "",
	} {
		id, ok := RawID(path)
		if id != want || ok != (want != "") {
			t.Errorf("RawID(%q) = %q, %v; want %q, %v", path, id, ok, want, want != "")
		}
	}
}

// TestRawHeaders: a raw read's headers come from the paste's own fields,
// as clients and exported archives have them: the ETag "ID-created" with
// the creation time in base 36, the times as net/http formats them, and
// the length; a paste read again under a reused id, or with other times
// or size, never gets another paste's values from the cache.
func TestRawHeaders(t *testing.T) {
	const hour = int64(time.Hour)
	pastes := []*fsm.Paste{
		{ID: "abcdefgh", Content: []byte("hello\n"), CreatedAt: 1e18, ExpiresAt: 1e18 + hour},
		{ID: "abcdefgh", Content: []byte("hello\n"), CreatedAt: 1e18 + 1},              // reused id
		{ID: "abcdefgh", Content: []byte("hello, world\n"), CreatedAt: 1e18 + 1},       // imported anew
		{ID: "abcdefgh", Content: []byte("hello\n"), CreatedAt: 1e18, ExpiresAt: 2e18}, // imported anew
		{ID: "binary12", Content: []byte{0xff, 0}, CreatedAt: 1.7e18},
		{ID: "burn1234", Content: []byte("once"), CreatedAt: 1.7e18, ExpiresAt: 1.8e18, Burn: true},
		{ID: "old", Content: nil, CreatedAt: -1e18},
	}
	for range 2 { // the second round from the cache
		for _, p := range pastes {
			p.Seal()
			h := http.Header{}
			SetRawHeaders(h, p, true)
			date := func(t int64) string { return time.Unix(0, t).UTC().Format(http.TimeFormat) }
			want := http.Header{
				"Content-Type":            {"text/plain; charset=utf-8"},
				"X-Content-Type-Options":  {"nosniff"},
				"Content-Security-Policy": {"default-src 'none'; sandbox"},
				"Etag":                    {`"` + p.ID + "-" + strconv.FormatInt(p.CreatedAt, 36) + `"`},
				"Last-Modified":           {date(p.CreatedAt)},
				"Content-Length":          {strconv.Itoa(len(p.Content))},
				"Cache-Control":           {"no-cache"},
			}
			if p.ID == "binary12" {
				want["Content-Type"] = []string{"application/octet-stream"}
			}
			switch {
			case p.Burn:
				want["Cache-Control"] = []string{"no-store"}
			case p.ExpiresAt != 0:
				want["Expires"] = []string{date(p.ExpiresAt)}
			}
			for k, v := range want {
				if !slices.Equal(h[k], v) {
					t.Errorf("%+v: %s is %q, want %q", p, k, h[k], v)
				}
			}
			for k := range h {
				if want[k] == nil {
					t.Errorf("%+v: %s is %q, want none", p, k, h[k])
				}
			}
			h = http.Header{}
			if SetRawHeaders(h, p, false); h["Content-Length"] != nil {
				t.Errorf("%+v: Content-Length %q without length", p, h["Content-Length"])
			}
		}
	}
}

// TestAppendHTTPDate: the dates of a raw read's headers are net/http's,
// across the years and at their edges.
func TestAppendHTTPDate(t *testing.T) {
	times := []int64{0, -1, 1, 1e18, 1.7e18 + 123456789, math.MaxInt64, math.MinInt64,
		time.Date(999, 12, 31, 23, 59, 59, 0, time.UTC).UnixNano(),
		time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(),
		time.Date(2000, 2, 29, 12, 0, 0, 0, time.UTC).UnixNano()}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		times = append(times, r.Int64()-math.MaxInt64/2)
	}
	for _, tm := range times {
		got := string(appendHTTPDate([]byte("x"), tm))
		if want := "x" + time.Unix(0, tm).UTC().Format(http.TimeFormat); got != want {
			t.Errorf("appendHTTPDate(%d) = %q, want %q", tm, got, want)
		}
	}
}

// BenchmarkRawHeaders sets the headers of a raw read, as every read does:
// of one paste again and again, which valueCache holds, and of pastes
// read in turn, many more than it holds, each formatted anew.
func BenchmarkRawHeaders(b *testing.B) {
	pastes := make([]*fsm.Paste, 4*valueSlots)
	for i := range pastes {
		pastes[i] = &fsm.Paste{ID: fmt.Sprintf("id%06d", i), Content: make([]byte, 1024), CreatedAt: 1e18 + int64(i), ExpiresAt: 2e18}
		pastes[i].Seal()
	}
	h := http.Header{}
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			clear(h)
			SetRawHeaders(h, pastes[0], true)
		}
	})
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			clear(h)
			SetRawHeaders(h, pastes[i%len(pastes)], true)
			i++
		}
	})
}
