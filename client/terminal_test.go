package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestGetTerminalAndCreateToken(t *testing.T) {
	var gotQuery, gotAccept, gotToken, gotPutQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			io.Copy(io.Discard, r.Body)
			gotToken, gotPutQuery = r.Header.Get("X-Paste-Token"), r.URL.RawQuery
			w.Header().Set("X-Paste-Id", "p1")
			w.Header().Set("Location", "http://x/p1")
			w.WriteHeader(http.StatusCreated)
			return
		}
		gotQuery, gotAccept = r.URL.RawQuery, r.Header.Get("Accept")
		io.WriteString(w, "\x1b[1mhi\x1b[0m")
	}))
	defer srv.Close()
	c, err := New([]string{srv.URL}, Options{CreateToken: "ct"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.GetTerminal(context.Background(), srv.URL+"/p1#L2", TrueColor, "go")
	if err != nil || string(b) != "\x1b[1mhi\x1b[0m" {
		t.Fatalf("GetTerminal = %q, %v", b, err)
	}
	if gotQuery != "fmt=truecolor&lang=go" || gotAccept != "text/x-ansi" {
		t.Errorf("GetTerminal sent query %q, Accept %q", gotQuery, gotAccept)
	}
	if _, err := c.Put(context.Background(), strings.NewReader("x"), PutOptions{Encrypted: true}); err != nil {
		t.Fatal(err)
	}
	if gotToken != "ct" || gotPutQuery != "encrypted=true" {
		t.Errorf("Put sent X-Paste-Token %q and query %q; want ct and encrypted=true", gotToken, gotPutQuery)
	}
}
