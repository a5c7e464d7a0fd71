package compose

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestComposeShipsNoSecret checks that docker-compose.cluster.yml refuses to
// start without a cluster key and an admin token from the environment,
// naming the missing variable, and that its published ports bind
// 127.0.0.1. It runs `docker-compose config` only, with an empty env file,
// so that a .env left by `make cluster-up` does not hide a default.
func TestComposeShipsNoSecret(t *testing.T) {
	requireDocker(t)
	repo := repoRoot(t)
	file := filepath.Join(repo, "docker-compose.cluster.yml")
	empty := filepath.Join(t.TempDir(), "empty.env")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PASTE_") {
			base = append(base, kv)
		}
	}
	config := func(extra ...string) (string, error) {
		c := exec.Command("docker-compose", "--env-file", empty, "-f", file, "config")
		c.Dir = repo
		c.Env = append(append([]string{}, base...), extra...)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	secrets := freshSecrets(t)
	for _, tt := range []struct {
		env     []string
		missing string
	}{
		{nil, "PASTE_CLUSTER_KEY"},
		{secrets[:1], "PASTE_ADMIN_TOKEN"},
		{secrets[1:], "PASTE_CLUSTER_KEY"},
	} {
		out, err := config(tt.env...)
		if err == nil || !strings.Contains(out, "set "+tt.missing) {
			t.Errorf("config with %d of the secrets: err %v, want a refusal naming %s:\n%s", len(tt.env), err, tt.missing, out)
		}
	}
	out, err := config(secrets...)
	if err != nil {
		t.Fatalf("config with both secrets: %v\n%s", err, out)
	}
	for node, port := range ports {
		if want := "127.0.0.1:" + strconv.Itoa(port) + ":8080"; !strings.Contains(out, want) {
			t.Errorf("%s: no port published as %s:\n%s", node, want, out)
		}
	}
}
