package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/client"
)

func TestClientImport(t *testing.T) {
	content := []byte("old\x00\xffbytes")
	created := time.Date(2019, 5, 1, 8, 30, 0, 123456789, time.UTC)
	expires := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	taken := map[string]bool{}
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		q := r.URL.Query()
		id := r.URL.Path[len("/api/v1/pastes/"):]
		switch {
		case r.Method != http.MethodPut || r.URL.Path != "/api/v1/pastes/"+id:
			http.Error(w, "wrong route "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		case r.Header.Get("Authorization") != "Bearer adm":
			http.Error(w, "no admin token", http.StatusUnauthorized)
		case !bytes.Equal(body, content):
			http.Error(w, "body changed on the way", http.StatusBadRequest)
		case q.Get("created_at") != "2019-05-01T08:30:00.123456789Z" || q.Get("expires_at") != "2031-01-01T00:00:00Z" ||
			q.Get("title") != "t" || q.Get("lang") != "go" || q.Get("burn") != "true" || q.Get("encrypted") != "true":
			http.Error(w, "wrong options "+r.URL.RawQuery, http.StatusBadRequest)
		case taken[id]:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"error":"paste id already taken"}`)
		default:
			taken[id] = true
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(pastenode.Created{ID: id, URL: "http://h/" + id, DeleteToken: "tok", Size: len(body)})
		}
	})
	c := newClient(t, []string{refusedAddr(t), url}, client.Options{AdminToken: "adm"})
	opts := client.ImportOptions{Title: "t", Lang: "go", Burn: true, Encrypted: true, CreatedAt: created, ExpiresAt: expires}
	got, err := c.Import(context.Background(), "kept-old-id", content, opts)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if got.ID != "kept-old-id" || got.Size != len(content) {
		t.Errorf("Import = %+v; want the id kept and every byte sent", got)
	}
	_, err = c.Import(context.Background(), "kept-old-id", content, opts)
	var apiErr *client.Error
	if !errors.Is(err, client.ErrConflict) || !errors.As(err, &apiErr) || apiErr.Message != "paste id already taken" {
		t.Errorf("Import of a taken id: got %v, want ErrConflict with the server's reason", err)
	}
}
