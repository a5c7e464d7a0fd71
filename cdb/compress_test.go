package cdb

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
)

func TestMaxPacked(t *testing.T) {
	for _, tt := range []struct {
		raw, packed int
		want        bool
	}{
		{100, 10, true}, // 90% is enough at any size
		{100, 11, false},
		{1024, 500, false}, // 1 KiB is not above 1 KiB
		{1025, 615, true},  // exactly 40%
		{1025, 616, false},
		{2049, 1331, true}, // 35%
		{2049, 1333, false},
		{4097, 2867, true}, // 30%
		{8193, 6144, true}, // 25%
		{16385, 13108, true},
		{32769, 27853, true},
		{65537, 58983, true},
		{65537, 58984, false},
		{1 << 20, 990_000, false},  // 5.6%, but 1 MiB is not above 1 MiB
		{1<<20 + 1, 996_148, true}, // 5%
		{1<<20 + 1, 996_149, false},
		{10, 30, false}, // larger
	} {
		if got := tt.packed <= maxPacked(tt.raw); got != tt.want {
			t.Errorf("%d bytes packed to %d: pays %v, want %v", tt.raw, tt.packed, got, tt.want)
		}
	}
}

// TestGzipFloor checks that no body compresses below its floor, even at
// the best level, and that
// the floor rules out small documents of many different bytes.
func TestGzipFloor(t *testing.T) {
	meta := []byte(`{
  "id": "k3Jx9QpLmZ",
  "url": "/k3Jx9QpLmZ",
  "raw_url": "/raw/k3Jx9QpLmZ",
  "size": 1024,
  "created_at": "2026-11-30T21:16:00Z",
  "burn": false,
  "encrypted": false
}`)
	if gzipFloor(meta) <= maxPacked(len(meta)) {
		t.Errorf("floor %d of a %d-byte metadata document would not rule it out", gzipFloor(meta), len(meta))
	}
	random := make([]byte, 1024)
	rand.NewChaCha8([32]byte{1}).Read(random)
	for _, body := range [][]byte{
		[]byte("a"), bytes.Repeat([]byte("ab"), 500), meta, random, random[:100],
		bytes.Repeat([]byte("all work and no play\n"), 48),
	} {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression) // the level is valid
		zw.Write(body)
		zw.Close()
		if floor := gzipFloor(body); b.Len() < floor {
			t.Errorf("%d-byte body compressed to %d bytes, under its floor %d", len(body), b.Len(), floor)
		}
	}
}

func TestCompress(t *testing.T) {
	random := make([]byte, 4096)
	rand.NewChaCha8([32]byte{}).Read(random)
	for _, tt := range []struct {
		name     string
		body     []byte
		encoding string
	}{
		{"empty", nil, "identity"},
		{"short text", []byte("hello\n"), "identity"},
		{"repetitive text", bytes.Repeat([]byte("all work and no play\n"), 50), "gzip"},
		{"random", random, "identity"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, encoding := Compress(tt.body)
			if encoding != tt.encoding {
				t.Fatalf("encoding %q, want %q", encoding, tt.encoding)
			}
			if got := gunzipIf(t, encoding, out); !bytes.Equal(got, tt.body) {
				t.Errorf("decoded body %q, want %q", got, tt.body)
			}
		})
	}
}

// TestCompressorBuffer compresses several bodies into one buffer: each
// output decodes to its body, and one already made is not overwritten by
// the next.
func TestCompressorBuffer(t *testing.T) {
	c := NewCompressor()
	var buf []byte
	bodies := [][]byte{
		bytes.Repeat([]byte("all work and no play\n"), 50),
		[]byte("hello\n"),
		bytes.Repeat([]byte("the quick brown fox "), 300),
	}
	outs := make([][]byte, len(bodies))
	encs := make([]string, len(bodies))
	for i, body := range bodies {
		outs[i], encs[i] = c.Compress(&buf, body)
	}
	if encs[0] != "gzip" || encs[1] != "identity" || encs[2] != "gzip" {
		t.Fatalf("encodings %q, want gzip, identity, gzip", encs)
	}
	if len(buf) != len(outs[0])+len(outs[2]) {
		t.Errorf("buffer holds %d bytes, want the %d of both gzips", len(buf), len(outs[0])+len(outs[2]))
	}
	for i, body := range bodies {
		if got := gunzipIf(t, encs[i], outs[i]); !bytes.Equal(got, body) {
			t.Errorf("body %d decoded to %d bytes, want %d", i, len(got), len(body))
		}
	}
}

// gunzipIf decodes body if encoding is gzip.
func gunzipIf(t *testing.T, encoding string, body []byte) []byte {
	t.Helper()
	if encoding != "gzip" {
		return body
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Compress is Compressor.Compress with a pooled Compressor and a buffer of
// its own.
func Compress(body []byte) (out []byte, encoding string) {
	c := compressors.Get().(*Compressor)
	defer compressors.Put(c)
	var buf []byte
	return c.Compress(&buf, body)
}

var compressors = sync.Pool{New: func() any { return NewCompressor() }}

// testFile is one resource added to the archive in TestArchiveRoundTrip.
