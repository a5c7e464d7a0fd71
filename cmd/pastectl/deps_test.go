package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// maxDeps bounds the packages that pastectl links, standard library
// included: 205 when the client moved out of api (338 before, with the
// server's Raft, gossip, bbolt, chroma and Prometheus).
const maxDeps = 230

// TestDeps keeps pastectl a small client: it links the client package and
// the wire types, never the server's packages or their dependencies.
func TestDeps(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		if goTool, err = exec.LookPath("go"); err != nil {
			t.Skip("no go tool to list the dependencies with")
		}
	}
	cmd := exec.Command(goTool, "list", "-deps", ".")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v: %s", err, stderr.String())
	}
	deps := strings.Fields(string(out))
	t.Logf("pastectl depends on %d packages (at most %d allowed)", len(deps), maxDeps-1)

	banned := []string{"hashicorp", "go.etcd.io/bbolt", "prometheus", "chroma", "memberlist", "gorilla"}
	own := map[string]bool{
		"github.com/pastenode/pastenode":              true,
		"github.com/pastenode/pastenode/client":       true,
		"github.com/pastenode/pastenode/pn1":          true,
		"github.com/pastenode/pastenode/cmd/pastectl": true,
		// The build's identity, from the standard library only.
		"github.com/pastenode/pastenode/internal/buildinfo": true,
	}
	for _, d := range deps {
		for _, b := range banned {
			if strings.Contains(d, b) {
				t.Errorf("pastectl depends on %s", d)
			}
		}
		if strings.HasPrefix(d, "github.com/pastenode/pastenode") && !own[d] {
			t.Errorf("pastectl depends on %s; it should use the client package only", d)
		}
	}
	if len(deps) >= maxDeps {
		t.Errorf("pastectl depends on %d packages, want fewer than %d", len(deps), maxDeps)
	}
}
