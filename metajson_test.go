package pastenode

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// encodeMeta is what the API and the export wrote before AppendJSON: an
// Encoder with a two-space indent.
func encodeMeta(m Meta) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	err := enc.Encode(m)
	return buf.Bytes(), err
}

// checkAppendJSON fails t unless AppendJSON writes m as encodeMeta does,
// after what the buffer held, or fails as it does.
func checkAppendJSON(t *testing.T, m Meta) {
	t.Helper()
	want, wantErr := encodeMeta(m)
	got, err := m.AppendJSON([]byte("kept"))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%+v: error %v, encoding/json's %v", m, err, wantErr)
	}
	if err != nil {
		if string(got) != "kept" {
			t.Errorf("%+v: failed and left %q", m, got)
		}
		return
	}
	if !bytes.HasPrefix(got, []byte("kept")) || !bytes.Equal(got[4:], want) {
		t.Errorf("%+v:\n got %q\nwant %q", m, got, want)
	}
}

func TestAppendJSONIsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 2, 15, 40, 8, 786148316, time.UTC)
	whole := at.Truncate(time.Second)
	plain := Meta{ID: "jzHCDk6SS6", URL: "/jzHCDk6SS6", RawURL: "/raw/jzHCDk6SS6", Size: 1024, CreatedAt: at}
	for _, m := range []Meta{
		plain,
		{},
		{ID: "a", URL: "http://h:8080/a", RawURL: "http://h:8080/raw/a", Title: "notes", Lang: "go", Size: -1,
			CreatedAt: whole, ExpiresAt: &at, Burn: true, Encrypted: true},
		{ID: "x", Title: `say "hi"`, CreatedAt: at},
		{ID: "x", Title: `a\b`, CreatedAt: at},
		{ID: "x", Title: "<script>&</script>", CreatedAt: at},
		{ID: "x", Title: "tab\there", CreatedAt: at},
		{ID: "x", Title: "caf\u00e9 \u2028 \U0001F600", CreatedAt: at},
		{ID: "x", Title: "bad \xff utf-8", CreatedAt: at},
		{ID: "x", Lang: "\x7f", CreatedAt: at},
		{ID: "x", CreatedAt: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "x", CreatedAt: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		{ID: "x", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, // encoding/json refuses it
		{ID: "x", CreatedAt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "x", CreatedAt: at.In(time.FixedZone("CET", 3600))},
		{ID: "x", CreatedAt: at.In(time.FixedZone("UTC", 0))},
		{ID: "x", CreatedAt: at, ExpiresAt: func() *time.Time { t := time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC); return &t }()},
		{ID: "x", CreatedAt: time.Unix(0, 1).UTC(), Size: 1 << 40},
	} {
		checkAppendJSON(t, m)
	}
}

// TestAppendJSONKnowsEveryField fails when Meta gains or loses a field:
// AppendJSON writes the fields it knows, and one it does not would be
// missing from every export (an omitempty one even from the documents the
// tests compare).
func TestAppendJSONKnowsEveryField(t *testing.T) {
	var names []string
	for f := range reflect.TypeFor[Meta]().Fields() {
		names = append(names, f.Tag.Get("json"))
	}
	want := []string{"id", "url", "raw_url", "title", "lang", "size", "created_at", "expires_at", "burn", "encrypted"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("Meta's fields are %q; AppendJSON writes %q: teach it the change", names, want)
	}
}

// TestAppendJSONRandom compares AppendJSON with encoding/json on metadata
// whose strings mix plain bytes with every kind JSON escapes.
func TestAppendJSONRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "Z", "0", "/", ":", " ", "-", "_", "~", "\"", "\\", "<", ">", "&", "\n", "\x00", "\x1f", "\x7f",
		"\xc3\xa9", "\xe2\x80\xa8", "\xff", "\U0001F600"}
	str := func() string {
		var b []byte
		for range r.IntN(6) {
			p := pieces[r.IntN(len(pieces))]
			if r.IntN(4) > 0 {
				p = pieces[r.IntN(9)] // mostly plain
			}
			b = append(b, p...)
		}
		return string(b)
	}
	moment := func() time.Time {
		t := time.Unix(r.Int64N(1<<36)-1<<35, r.Int64N(1e9)).UTC()
		if r.IntN(5) == 0 {
			t = t.Truncate(time.Second)
		}
		return t
	}
	for range 20000 {
		m := Meta{ID: str(), URL: str(), RawURL: str(), Title: str(), Lang: str(), Size: r.IntN(1 << 21),
			CreatedAt: moment(), Burn: r.IntN(2) == 0, Encrypted: r.IntN(2) == 0}
		if r.IntN(2) == 0 {
			e := moment()
			m.ExpiresAt = &e
		}
		checkAppendJSON(t, m)
	}
}

func FuzzAppendJSON(f *testing.F) {
	f.Add("jzHCDk6SS6", "notes", "go", int64(1764690008786148316), int64(0), 1024, false)
	f.Add("x", "<&>\"\\", "\xff", int64(-62135596800000000000/1000), int64(1), -1, true)
	f.Fuzz(func(t *testing.T, id, title, lang string, created, expires int64, size int, burn bool) {
		m := Meta{ID: id, URL: "/" + id, RawURL: "/raw/" + id, Title: title, Lang: lang, Size: size,
			CreatedAt: time.Unix(0, created).UTC(), Burn: burn}
		if expires != 0 {
			e := time.Unix(expires, 0).UTC()
			m.ExpiresAt = &e
		}
		checkAppendJSON(t, m)
	})
}

func BenchmarkAppendJSON(b *testing.B) {
	at := time.Unix(0, 1764690008786148316).UTC()
	m := Meta{ID: "jzHCDk6SS6", URL: "/jzHCDk6SS6", RawURL: "/raw/jzHCDk6SS6", Size: 1024, CreatedAt: at}
	b.Run("AppendJSON", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = m.AppendJSON(buf[:0])
		}
	})
	b.Run("Encoder", func(b *testing.B) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		for b.Loop() {
			buf.Reset()
			enc.Encode(m)
		}
	})
}
