package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/cdb"
	"github.com/pastenode/pastenode/client"
)

// refusedAddr returns an address on which nothing listens.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// serve starts a test server with handler h and returns its URL.
func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func newClient(t *testing.T, addrs []string, opts client.Options) *client.Client {
	t.Helper()
	c, err := client.New(addrs, opts)
	if err != nil {
		t.Fatalf("New(%q): %v", addrs, err)
	}
	return c
}

func statusHandler(id string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(pastenode.Status{Node: pastenode.NodeStatus{ID: id}})
	}
}

func unavailable(reason string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, reason, http.StatusServiceUnavailable)
	}
}

func TestClientAddressFallback(t *testing.T) {
	good := serve(t, statusHandler("good"))
	down := serve(t, unavailable("no quorum"))
	refused := refusedAddr(t)
	hang := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	forbidden := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusForbidden)
	})

	tests := []struct {
		name     string
		addrs    []string
		wantNode string // empty: an error is expected
		wantCode int    // the *Error status, 0 for none
	}{
		{"first refuses", []string{refused, good}, "good", 0},
		{"without scheme", []string{strings.TrimPrefix(good, "http://")}, "good", 0},
		{"503 falls through", []string{down, good}, "good", 0},
		{"timeout falls through", []string{hang, good}, "good", 0},
		{"4xx is final", []string{forbidden, good}, "", http.StatusForbidden},
		{"only 503", []string{down}, "", http.StatusServiceUnavailable},
		{"503 reason kept over a later dial error", []string{down, refused}, "", http.StatusServiceUnavailable},
		{"all refuse", []string{refused, refused}, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, tt.addrs, client.Options{Timeout: 200 * time.Millisecond})
			st, err := c.Status(context.Background())
			if tt.wantNode != "" {
				if err != nil {
					t.Fatalf("Status: %v", err)
				}
				if st.Node.ID != tt.wantNode {
					t.Errorf("answered by %q, want %q", st.Node.ID, tt.wantNode)
				}
				return
			}
			if err == nil {
				t.Fatal("Status: got no error")
			}
			var apiErr *client.Error
			gotCode := 0
			if errors.As(err, &apiErr) {
				gotCode = apiErr.StatusCode
			}
			if gotCode != tt.wantCode {
				t.Errorf("error %v: status %d, want %d", err, gotCode, tt.wantCode)
			}
		})
	}
}

func TestClientErrorDecoding(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		code        int
		body        string
		wantMsg     string
		wantErr     string
	}{
		{"json", "application/json", 403, `{"error":"wrong delete token"}`, "wrong delete token", "403 Forbidden: wrong delete token"},
		{"json with charset", "application/json; charset=utf-8", 404, `{"error": "not found"}` + "\n", "not found", "404 Not Found: not found"},
		{"text first line", "text/plain; charset=utf-8", 413, "paste too large\nlimit is 1MiB\n", "paste too large", "413 Request Entity Too Large: paste too large"},
		{"json without content type", "", 400, `{"error":"unknown lang"}`, "unknown lang", "400 Bad Request: unknown lang"},
		{"empty", "text/plain", 500, "", "", "500 Internal Server Error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = []string{tt.contentType}
				w.WriteHeader(tt.code)
				io.WriteString(w, tt.body)
			})
			err := newClient(t, []string{url}, client.Options{}).Delete(context.Background(), "abc", "tok")
			var apiErr *client.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("Delete: got %v, want an *Error", err)
			}
			if apiErr.StatusCode != tt.code || apiErr.Message != tt.wantMsg {
				t.Errorf("got %d %q, want %d %q", apiErr.StatusCode, apiErr.Message, tt.code, tt.wantMsg)
			}
			if err.Error() != tt.wantErr {
				t.Errorf("Error() = %q, want %q", err.Error(), tt.wantErr)
			}
		})
	}
}

func TestClientGetURLForms(t *testing.T) {
	content := []byte("\x00\xffbinary\r\n")
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/raw/Abc123" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(content)
	})
	c := newClient(t, []string{url}, client.Options{})

	tests := []struct {
		in      string
		wantErr bool
	}{
		{"Abc123", false},
		{"Abc123#secretkey", false},
		{"http://paste.example/Abc123", false},
		{"http://paste.example/raw/Abc123", false},
		{"https://paste.example/Abc123#secretkey", false},
		{"http://paste.example/raw/Abc123#L12", false},
		{"https://example.com/paste/raw/Abc123", false},
		{"", true},
		{"http://paste.example/", true},
		{"a/b", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := c.Get(context.Background(), tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Get(%q): got no error", tt.in)
				}
				return
			}
			if err != nil {
				t.Fatalf("Get(%q): %v", tt.in, err)
			}
			if !bytes.Equal(got, content) {
				t.Errorf("Get(%q) = %q, want %q", tt.in, got, content)
			}
		})
	}
}

func TestClientAdminToken(t *testing.T) {
	type seen struct{ path, auth string }
	for _, token := range []string{"", "s3cret"} {
		t.Run("token="+token, func(t *testing.T) {
			var got []seen
			url := serve(t, func(w http.ResponseWriter, r *http.Request) {
				got = append(got, seen{r.URL.Path, r.Header.Get("Authorization")})
				switch r.URL.Path {
				case "/api/v1/status":
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{}`)
				default:
					w.WriteHeader(http.StatusNoContent)
				}
			})
			c := newClient(t, []string{url}, client.Options{AdminToken: token})
			ctx := context.Background()
			calls := map[string]error{
				"Join":     c.Join(ctx, []string{"10.0.0.1:7946"}),
				"Remove":   c.Remove(ctx, "n2"),
				"Snapshot": c.Snapshot(ctx),
				"Delete":   c.Delete(ctx, "abc", ""),
			}
			_, calls["Status"] = c.Status(ctx)
			for name, err := range calls {
				if err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
			want := ""
			if token != "" {
				want = "Bearer " + token
			}
			if len(got) != len(calls) {
				t.Fatalf("server saw %d requests, want %d", len(got), len(calls))
			}
			for _, s := range got {
				if s.auth != want {
					t.Errorf("%s: Authorization %q, want %q", s.path, s.auth, want)
				}
			}
		})
	}
}

func TestClientPut(t *testing.T) {
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		q := r.URL.Query()
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/":
			http.Error(w, "wrong route "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		case r.Header.Get("Content-Type") != "application/octet-stream" || r.Header.Get("Accept") != "application/json":
			http.Error(w, "wrong headers", http.StatusBadRequest)
		case q.Get("lang") != "go" || q.Get("expire") != "1h" || q.Get("burn") != "true" || q.Get("title") != "a b&c":
			http.Error(w, "wrong options "+r.URL.RawQuery, http.StatusBadRequest)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(pastenode.Created{ID: "x1", URL: "http://h/x1", DeleteToken: "tok", Size: len(body), Burn: true})
		}
	})
	// The body is re-sent to the second node after the first refuses.
	c := newClient(t, []string{refusedAddr(t), url}, client.Options{})
	got, err := c.Put(context.Background(), strings.NewReader("package main\n"),
		client.PutOptions{Lang: "go", Expire: "1h", Burn: true, Title: "a b&c"})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if got.ID != "x1" || got.DeleteToken != "tok" || got.Size != len("package main\n") {
		t.Errorf("Put = %+v", got)
	}
}

func TestClientDeleteToken(t *testing.T) {
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodDelete || r.URL.Path != "/abc" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("X-Delete-Token") != "right" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"error":"wrong delete token"}`)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	c := newClient(t, []string{url}, client.Options{})
	if err := c.Delete(context.Background(), "abc", "right"); err != nil {
		t.Errorf("Delete with the right token: %v", err)
	}
	var apiErr *client.Error
	if err := c.Delete(context.Background(), "abc", "wrong"); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden {
		t.Errorf("Delete with a wrong token: got %v, want 403", err)
	}
}

func TestClientReady(t *testing.T) {
	ok := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	notReady := serve(t, unavailable("no leader"))
	c := newClient(t, []string{ok}, client.Options{})
	if err := c.Ready(context.Background()); err != nil {
		t.Errorf("Ready: %v", err)
	}
	// Readiness is about the node asked: its 503 does not fall through.
	c = newClient(t, []string{notReady, ok}, client.Options{})
	err := c.Ready(context.Background())
	if err == nil || err.Error() != "503 Service Unavailable: no leader" {
		t.Errorf("Ready on a node without leader: got %v", err)
	}
}

// pasteCounter records the optional paste count that Export reports.
type pasteCounter struct {
	bytes.Buffer
	pastes int64
}

func (p *pasteCounter) SetExportPastes(n int64) { p.pastes = n }

func TestClientExport(t *testing.T) {
	data := bytes.Repeat([]byte("cdb\x00"), 50000)
	tests := []struct {
		name       string
		length     bool // send Content-Length
		trailer    bool // send X-Export-Pastes as a trailer
		wantTotal  int64
		wantPastes int64
	}{
		{"known length", true, false, int64(len(data)), 0},
		{"chunked with trailer", false, true, -1, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/v1/export.cdb" {
					http.NotFound(w, r)
					return
				}
				if tt.trailer {
					w.Header().Set("Trailer", "X-Export-Pastes")
				}
				if tt.length {
					w.Header().Set("Content-Length", "200000")
				}
				w.Write(data[:1000])
				w.(http.Flusher).Flush()
				w.Write(data[1000:])
				if tt.trailer {
					w.Header().Set("X-Export-Pastes", "7")
				}
			})
			var out pasteCounter
			var calls int
			var lastDone, lastTotal int64
			n, err := newClient(t, []string{url}, client.Options{}).Export(context.Background(), &out,
				func(done, total int64) { calls++; lastDone, lastTotal = done, total })
			if err != nil {
				t.Fatalf("Export: %v", err)
			}
			if n != int64(len(data)) || !bytes.Equal(out.Bytes(), data) {
				t.Errorf("Export wrote %d bytes, want %d", n, len(data))
			}
			if calls < 2 || lastDone != n || lastTotal != tt.wantTotal {
				t.Errorf("progress: %d calls, last (%d, %d), want >=2 calls ending (%d, %d)", calls, lastDone, lastTotal, n, tt.wantTotal)
			}
			if out.pastes != tt.wantPastes {
				t.Errorf("pastes = %d, want %d", out.pastes, tt.wantPastes)
			}
		})
	}
}

func TestNewAddrs(t *testing.T) {
	for _, addrs := range [][]string{nil, {"ftp://host:21"}, {"http://"}, {"http://[::1"}} {
		if _, err := client.New(addrs, client.Options{}); err == nil {
			t.Errorf("New(%q): got no error", addrs)
		}
	}
}

// TestClientExportTail checks that Export asks a file for the export in
// tail order and writes the file it stands for, in whatever pieces the
// answer comes and wherever the file starts; that it takes an answer in
// the usual order from a server that ignores the ask; and that an answer
// cut short is an error, even where the cut looks like an end.
func TestClientExportTail(t *testing.T) {
	var stream bytes.Buffer
	cw := cdb.NewTailWriter(&stream)
	for i := range 300 {
		if err := cw.Put(fmt.Appendf(nil, "f:/raw/%d", i), bytes.Repeat([]byte{byte(i)}, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	size := pastenode.ExportTailSize
	tailOrder := stream.Bytes()
	file := append(slices.Clone(tailOrder[len(tailOrder)-size:]), tailOrder[:len(tailOrder)-size]...)
	for _, tt := range []struct {
		name   string
		tail   bool // the server knows tail order
		body   []byte
		pieces []int  // lengths the body is flushed in
		prefix string // what the file holds before the export
		want   []byte // nil: an error
	}{
		{"tail order, one piece", true, tailOrder, nil, "", file},
		{"tail order, small pieces", true, tailOrder, []int{1, 10, size - 5, size + 7, 3, 2 * size}, "", file},
		{"tail order, file at an offset", true, tailOrder, nil, "prefix", file},
		{"old server", false, file, []int{100}, "", file},
		{"tail order, shorter than its tail", true, tailOrder[:size-1], nil, "", nil},
		{"tail order, cut short", true, tailOrder[:len(tailOrder)-3*size], nil, "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.tail && strings.Contains(r.Header.Get("Accept"), pastenode.ExportTailType) {
					w.Header().Set("Content-Type", pastenode.ExportTailType)
				}
				body := tt.body
				for _, n := range tt.pieces {
					n = min(n, len(body))
					w.Write(body[:n])
					w.(http.Flusher).Flush()
					body = body[n:]
				}
				w.Write(body)
			})
			f, err := os.Create(filepath.Join(t.TempDir(), "export.cdb"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(tt.prefix); err != nil {
				t.Fatal(err)
			}
			n, err := newClient(t, []string{url}, client.Options{}).Export(context.Background(), f, nil)
			if tt.want == nil {
				if err == nil {
					t.Fatal("Export of an answer cut short: no error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Export: %v", err)
			}
			got, err := os.ReadFile(f.Name())
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(tt.want)) || !bytes.Equal(got, append([]byte(tt.prefix), tt.want...)) {
				t.Errorf("Export wrote %d bytes (returned %d), not the file of %d bytes after %q", len(got), n, len(tt.want), tt.prefix)
			}
		})
	}
}

// TestClientExportPipe checks that Export does not ask for tail order when
// its file cannot seek: a pipe gets the file in the usual order.
func TestClientExportPipe(t *testing.T) {
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Accept"), pastenode.ExportTailType) {
			http.Error(w, "asked for tail order", http.StatusTeapot)
			return
		}
		w.Write([]byte("the file"))
	})
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	read := make(chan []byte)
	go func() { b, _ := io.ReadAll(pr); read <- b }()
	_, err = newClient(t, []string{url}, client.Options{}).Export(context.Background(), pw, nil)
	pw.Close()
	if got := <-read; err != nil || string(got) != "the file" {
		t.Errorf("Export to a pipe: %v, got %q", err, got)
	}
}

func TestSplitPasteURL(t *testing.T) {
	tests := []struct {
		in, base, id string
		wantErr      bool
	}{
		{in: "Abc123", id: "Abc123"},
		{in: "Abc123#secretkey", id: "Abc123"},
		{in: "http://127.0.0.1:18083/Abc123", base: "http://127.0.0.1:18083", id: "Abc123"},
		{in: "http://127.0.0.1:18083/raw/Abc123", base: "http://127.0.0.1:18083", id: "Abc123"},
		{in: "https://paste.example/Abc123#secretkey", base: "https://paste.example", id: "Abc123"},
		{in: "https://example.com/paste/raw/Abc123#L12", base: "https://example.com/paste", id: "Abc123"},
		{in: "https://example.com/paste/Abc123", base: "https://example.com/paste", id: "Abc123"},
		{in: "https://example.com/a/b/download/Abc123", base: "https://example.com/a/b", id: "Abc123"},
		{in: " http://h/Abc123/ ", base: "http://h", id: "Abc123"},
		{in: "", wantErr: true},
		{in: "a/b", wantErr: true},
		{in: "http://paste.example/", wantErr: true},
		{in: "ftp://paste.example/Abc123", wantErr: true},
		{in: "http:///Abc123", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			base, id, err := client.SplitPasteURL(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got %q %q, want an error", base, id)
				}
				return
			}
			if err != nil || base != tt.base || id != tt.id {
				t.Errorf("got %q, %q, %v; want %q, %q", base, id, err, tt.base, tt.id)
			}
		})
	}
}
