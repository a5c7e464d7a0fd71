package mirror

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pastenode/pastenode/cdb"
	"github.com/pastenode/pastenode/fsm"
)

// benchWords make paste text that compresses about as well as prose or
// code: too little, at 1 KiB, for the archive to store it gzipped.
var benchWords = strings.Fields(`func return if else for range var const type struct
	interface map string int error nil true false package import the a of to in is
	that it for on with as was at by be this from or have an they which you were her
	all she there would their we him been has when who will more no if out so said`)

// benchIDAlphabet is the alphabet of the ids the API makes.
const benchIDAlphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// benchContent returns about size bytes of text lines made of random words.
func benchContent(r *rand.Rand, size int) []byte {
	b := make([]byte, 0, size+16)
	line := 0
	for len(b) < size {
		w := benchWords[r.IntN(len(benchWords))]
		b = append(b, w...)
		if line += len(w) + 1; line > 60 {
			b, line = append(b, '\n'), 0
		} else {
			b = append(b, ' ')
		}
	}
	return append(b[:size-1], '\n')
}

// benchFSM returns a state machine holding count pastes of 1 KiB, every
// goEvery-th of them highlighted as Go (0: none), and their ids. Ids and
// contents are the same on every call.
func benchFSM(tb testing.TB, count, goEvery int) (*exportFSM, []string) {
	tb.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	f := newExportFSM()
	now := time.Now().UnixNano()
	ids := make([]string, 0, count)
	batch := make([]*fsm.Paste, 0, 1000)
	for i := range count {
		id := make([]byte, 10) // as the API makes them
		for j := range id {
			id[j] = benchIDAlphabet[r.IntN(len(benchIDAlphabet))]
		}
		p := &fsm.Paste{ID: string(id), Content: benchContent(r, 1024), CreatedAt: now}
		if goEvery > 0 && i%goEvery == 0 {
			p.Lang = "Go"
		}
		ids = append(ids, p.ID)
		if batch = append(batch, p); len(batch) == cap(batch) || i == count-1 {
			f.add(tb, batch...)
			batch = batch[:0]
		}
	}
	return f, ids
}

// BenchmarkExport100k exports 100k pastes of 1 KiB: each becomes a raw
// file, a page and a metadata document. Highlighting dominates the cost,
// so it runs twice: plain text only, and with a quarter of the pastes in
// Go. MB/s counts paste content.
func BenchmarkExport100k(b *testing.B) {
	const count = 100_000
	for _, bc := range []struct {
		name    string
		goEvery int
	}{{"plain", 0}, {"quarter-go", 4}} {
		b.Run(bc.name, func(b *testing.B) {
			f, _ := benchFSM(b, count, bc.goEvery)
			pages := mirrorPages(b)
			path := filepath.Join(b.TempDir(), "export.cdb")
			b.SetBytes(count * 1024)
			b.ReportAllocs()
			var size int64
			for b.Loop() {
				out, err := os.Create(path)
				if err != nil {
					b.Fatal(err)
				}
				st, err := WriteExport(context.Background(), out, f.View(), pages, time.Now(), ExportOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if st.Pastes != count {
					b.Fatalf("exported %d pastes, want %d", st.Pastes, count)
				}
				size, _ = out.Seek(0, io.SeekCurrent)
				out.Close()
			}
			b.ReportMetric(float64(count*b.N)/b.Elapsed().Seconds(), "pastes/s")
			b.ReportMetric(float64(size)/(1<<20), "archive-MiB")
		})
	}
}

// discard is a ResponseWriter that keeps only the status, so that the
// benchmarks measure the handlers rather than a recorder.
type discard struct {
	h    http.Header
	code int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(code int)        { d.code = code }

// benchRead sends the same request to h, serially and from parallel
// goroutines, and reports requests per second.
func benchRead(b *testing.B, h http.Handler, target string, headers ...string) {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	serve := func(tb testing.TB, w *discard) {
		clear(w.h)
		w.code = http.StatusOK
		h.ServeHTTP(w, req)
		if w.code != http.StatusOK {
			tb.Fatalf("GET %s: got %d, want 200", target, w.code)
		}
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		w := &discard{h: http.Header{}}
		for b.Loop() {
			serve(b, w)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			w := &discard{h: http.Header{}}
			for pb.Next() {
				serve(b, w)
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	})
}

// BenchmarkMirrorRead reads one paste through the mirror's handler: its
// raw bytes as curl asks for them, and its page as a browser does.
// Compare with api's BenchmarkRead, which reads raw bytes from a live node.
func BenchmarkMirrorRead(b *testing.B) {
	f, ids := benchFSM(b, 10_000, 4)
	path, _ := writeExportFile(b, b.TempDir(), f, time.Now())
	mirror := startMirror(b, Config{Path: path, Poll: time.Hour}).Handler()
	id := ids[len(ids)/2] // highlighted as Go
	b.Run("raw", func(b *testing.B) { benchRead(b, mirror, "/raw/"+id) })
	b.Run("page", func(b *testing.B) {
		benchRead(b, mirror, "/"+id, "Accept", "text/html", "Accept-Encoding", "gzip")
	})
}

// BenchmarkExportPaste renders the three files of one plain 1 KiB paste,
// on one goroutine: the per-paste work an export spreads over the CPUs.
func BenchmarkExportPaste(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	p := &fsm.Paste{ID: "abcdefghij", Content: benchContent(r, 1024), CreatedAt: time.Now().UnixNano()}
	e, err := newExporter(mirrorPages(b), time.Now(), nil)
	if err != nil {
		b.Fatal(err)
	}
	j := newExportJob()
	zc := cdb.NewCompressor()
	b.ReportAllocs()
	for b.Loop() {
		if err := e.paste(j, p, zc); err != nil {
			b.Fatal(err)
		}
		j.release()
	}
}
