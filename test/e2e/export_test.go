package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pastenode/pastenode/cdb"
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

// TestExportReusesPages: a node keeps the pages of an export in its data
// directory, and the next export, of the same pastes and one new one,
// takes them from there (the node's log says how many) and writes the
// archive the first did, plus the new paste.
func TestExportReusesPages(t *testing.T) {
	n := startProc(t)
	const pastes = 20
	for i := range pastes {
		body := []byte(fmt.Sprintf("func f%d() int { return %d }\n", i, i))
		do(t, http.MethodPost, n.URL+"/?lang=go", body, "Content-Type", "text/plain").expect(t, "create", http.StatusCreated)
	}
	export := func(want int) []byte {
		t.Helper()
		out := filepath.Join(t.TempDir(), "mirror.cdb")
		r := pastectl(t, n.URL, nil, "--data-dir", n.dataDir, "export", "--out", out)
		if r.code != 0 || !strings.HasPrefix(r.stdout, fmt.Sprintf("exported %d pastes,", want)) {
			t.Fatalf("export: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first := export(pastes)
	if _, err := os.Stat(filepath.Join(n.dataDir, "export-cache.cdb")); err != nil {
		t.Fatalf("after an export: %v", err)
	}
	if again := export(pastes); !bytes.Equal(again, first) {
		t.Error("the export from the cache differs from the first")
	}
	do(t, http.MethodPost, n.URL+"/", []byte("one more\n"), "Content-Type", "text/plain").expect(t, "create", http.StatusCreated)
	third := export(pastes + 1)
	a, err := cdb.NewArchiveFromBytes(third)
	if err != nil {
		t.Fatal(err)
	}
	if paths, err := a.Paths(); err != nil || len(paths) != 3*(pastes+1)+4 {
		t.Errorf("the third export has %d paths (%v), want %d", len(paths), err, 3*(pastes+1)+4)
	}
	log, err := os.ReadFile(n.logPath)
	if err != nil {
		t.Fatal(err)
	}
	var cached []string
	for _, m := range regexp.MustCompile(`"msg":"export".*?"cached":(\d+)|msg=export .*?cached=(\d+)`).FindAllSubmatch(log, -1) {
		cached = append(cached, string(m[1])+string(m[2]))
	}
	if want := []string{"0", strconv.Itoa(pastes), strconv.Itoa(pastes)}; strings.Join(cached, ",") != strings.Join(want, ",") {
		t.Errorf("pages the exports took from the cache, as logged: %v, want %v", cached, want)
	}
}
