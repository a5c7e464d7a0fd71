package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

// TestExportOutlastsTimeout runs pastectl export against a real node
// whose export takes longer to build than pastectl's --timeout: the
// node's progress answers keep pastectl waiting, and the file arrives
// whole. Before them, the timeout covered the whole call and such an
// export failed ("no answer within").
func TestExportOutlastsTimeout(t *testing.T) {
	n := startProc(t)
	// Large Go pastes: highlighting makes each cost tens of milliseconds.
	code := bytes.Repeat([]byte("func sum(a, b int) (int, error) { return a + b, nil } // adds\n"), 1600) // 100 KiB
	const pastes, timeout = 40, 1200 * time.Millisecond
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < pastes; i += 4 {
				body := append([]byte(fmt.Sprintf("// %d\n", i)), code...)
				do(t, http.MethodPost, n.URL+"/?lang=go", body, "Content-Type", "text/plain").expect(t, "create", http.StatusCreated)
			}
		})
	}
	wg.Wait()

	out := filepath.Join(t.TempDir(), "mirror.cdb")
	start := time.Now()
	r := pastectl(t, n.URL, nil, "--data-dir", n.dataDir, "--timeout", timeout.String(), "export", "--out", out)
	took := time.Since(start)
	if r.code != 0 || !regexp.MustCompile(fmt.Sprintf(`^exported %d pastes, \d+ bytes in `, pastes)).MatchString(r.stdout) {
		t.Fatalf("export after %s: exit %d, stdout %q, stderr %q", took, r.code, r.stdout, r.stderr)
	}
	t.Logf("export took %s", took)
	// How long the build takes depends on the machine; that an export
	// several times longer than the timeout succeeds is proven, whatever
	// the machine, by api's TestExportProgress (a build made slow) and
	// pastectl's TestExportSlowServer.
	if took < timeout {
		t.Logf("this machine built the export within the --timeout of %s: only the end-to-end path was checked", timeout)
	}
}
