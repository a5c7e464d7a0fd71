package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/pastenode/pastenode/fsm"
	"github.com/pastenode/pastenode/node"
)

// seedPastes creates count pastes of about 1 KiB through Raft, many at a
// time so that Raft batches them, and returns their ids.
func seedPastes(tb testing.TB, n *node.Node, count int) []string {
	tb.Helper()
	content := bytes.Repeat([]byte("0123456789abcdef\n"), 60)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ids  = make([]string, 0, count)
		next = make(chan struct{})
		errs = make(chan error, 1)
	)
	for range 64 {
		wg.Go(func() {
			for range next {
				p, err := n.Create(context.Background(), node.CreateRequest{Content: content, DeleteToken: "t"})
				if err != nil {
					select {
					case errs <- fmt.Errorf("create: %w", err):
					default:
					}
					continue
				}
				mu.Lock()
				ids = append(ids, p.ID)
				mu.Unlock()
			}
		})
	}
	for range count {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		tb.Fatal(err)
	default:
	}
	return ids
}

// BenchmarkRead reads pastes through the whole handler, from a node that
// holds 10k of them.
func BenchmarkRead(b *testing.B) {
	tn := startNode(b, Config{})
	ids := seedPastes(b, tn.node, 10000)
	h := tn.server.Handler()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/raw/"+ids[i%len(ids)], nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET /raw/%s: got %d, want 200", ids[i%len(ids)], rec.Code)
		}
		i++
	}
}

// BenchmarkCreate posts pastes through the whole handler, one at a time and
// from many goroutines: Raft commits concurrent creates together, so the
// parallel rate is many times the serial one, which waits for an fsync each.
func BenchmarkCreate(b *testing.B) {
	tn := startNode(b, Config{})
	h := tn.server.Handler()
	body := bytes.Repeat([]byte("x"), 1024)
	post := func(tb testing.TB) {
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set("Content-Type", formType)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			tb.Errorf("POST /: got %d, want 201: %s", rec.Code, rec.Body)
		}
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			post(b)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pastes/s")
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				post(b)
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pastes/s")
	})
}

// BenchmarkRawHandlers reads one paste through each server's raw read
// without a cluster (a one-paste store), so that the figures are the
// handlers' own: net/http's Handler, and ServeFast on fasthttp.
func BenchmarkRawHandlers(b *testing.B) {
	p := &fsm.Paste{ID: "abcdefgh", Content: bytes.Repeat([]byte("0123456789abcdef\n"), 60), CreatedAt: 1e18, ExpiresAt: 2e18}
	p.Seal()
	s := hotAPI(b, p, "")
	b.Run("nethttp", func(b *testing.B) {
		h := s.Handler()
		req := httptest.NewRequest(http.MethodGet, "/raw/"+p.ID, nil)
		w := &sink{h: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			clear(w.h)
			w.code = 0
			h.ServeHTTP(w, req)
			if w.code != http.StatusOK {
				b.Fatalf("GET /raw/%s: got %d, want 200", p.ID, w.code)
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(http.MethodGet)
		ctx.Request.SetRequestURI("/raw/" + p.ID)
		ctx.Request.Header.SetHost("x")
		b.ReportAllocs()
		for b.Loop() {
			ctx.Response.Reset()
			if !s.ServeFast(&ctx) {
				b.Fatalf("GET /raw/%s: not answered", p.ID)
			}
		}
	})
}
