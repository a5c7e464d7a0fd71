package fsm

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFreePagesReported(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]bool{"6397972\n": true, "0\n": false, "": false, "n/a\n": false} {
		path := filepath.Join(dir, "reported_kib")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := freePagesReported(path); got != want {
			t.Errorf("reported_kib %q: freePagesReported = %v, want %v", content, got, want)
		}
	}
	if freePagesReported(filepath.Join(dir, "missing")) {
		t.Error("a kernel without page_reporting reported free pages")
	}
}
