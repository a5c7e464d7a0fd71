package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pastenode/pastenode/internal/freeport"
)

// TestBasePathBehindNginx serves a node under --base-path /paste behind
// nginx with the location block the README shows, as the old pastebin's
// --uri-prefix was deployed, and creates, reads and deletes through it.
func TestBasePathBehindNginx(t *testing.T) {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but nginx is not installed (.ci/run installs nginx-light)")
		}
		t.Skip("no nginx in PATH")
	}
	p := newProc(t, "--base-path", "/paste")
	p.start()
	p.waitOK("/paste/readyz")

	dir := t.TempDir()
	addr := freeport.Addr(t)
	// One process in the foreground, so that stopping it leaves no
	// worker behind.
	conf := fmt.Sprintf(`daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events {}
http {
  access_log %[1]s/access.log;
  client_body_temp_path %[1]s; proxy_temp_path %[1]s; fastcgi_temp_path %[1]s;
  uwsgi_temp_path %[1]s; scgi_temp_path %[1]s;
  server {
    listen %[2]s;
    location /paste/ { proxy_pass http://%[3]s; proxy_set_header Host $http_host; }
  }
}
`, dir, addr, p.httpAddr)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginx, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"))
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("nginx error log:\n%s", b)
		}
	})
	proxy := "http://" + addr + "/paste"
	eventually(t, 10*time.Second, "nginx answers", func() error {
		res, err := http.Get(proxy + "/healthz")
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	})

	u, token := curlPost(t, proxy, []byte("through nginx\n"), "")
	if !strings.HasPrefix(u, proxy+"/") {
		t.Errorf("returned URL %q: want it under %s", u, proxy)
	}
	get(t, u, []byte("through nginx\n"))
	get(t, proxy+"/download/"+idOf(u), []byte("through nginx\n"))
	page := do(t, http.MethodGet, u, nil, browserAccept...).expect(t, "page through nginx", http.StatusOK)
	if !strings.Contains(string(page.body), `href="/paste/raw/`+idOf(u)+`"`) {
		t.Errorf("page through nginx: links not under /paste")
	}
	do(t, http.MethodDelete, u, nil, "X-Delete-Token", token).expect(t, "delete through nginx", http.StatusNoContent)
	do(t, http.MethodGet, u, nil).expect(t, "read after delete", http.StatusNotFound)
}
