package node

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/pastenode/pastenode"
	"github.com/pastenode/pastenode/internal/freeport"
)

func TestRecordServing(t *testing.T) {
	tests := []struct {
		name     string
		addr     net.Addr
		tls      bool
		basePath string
		want     string
	}{
		{"loopback", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 18081}, false, "", "http://127.0.0.1:18081"},
		{"every interface", &net.TCPAddr{IP: net.IPv4zero, Port: 8443}, true, "/paste", "https://127.0.0.1:8443/paste"},
		{"every interface, v6", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, false, "", "http://127.0.0.1:8080"},
		{"an address", &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 80}, false, "", "http://10.1.2.3:80"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			n, err := New(Config{ID: "n1", DataDir: dir, RaftAddr: freeport.Addr(t), BootstrapExpect: 1})
			if err != nil {
				t.Fatal(err)
			}
			// A second start replaces the first's record whole.
			for range 2 {
				if err := n.RecordServing(tt.addr, tt.tls, tt.basePath); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(dir, pastenode.ServingFile)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var got pastenode.Serving
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			want := pastenode.Serving{URL: tt.want, Addr: tt.addr.String(), TLS: tt.tls, BasePath: tt.basePath}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("mode: %v %v, want 0600", st.Mode(), err)
			}
			if left, _ := filepath.Glob(path + ".tmp-*"); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}
